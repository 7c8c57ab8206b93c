// File messages of the agent protocol (frame types in agent.h): `space cp`. One copy per vsock
// connection, after Hello / HelloReply:
//   copy in   host: FilePut; guest: Ack (the destination fits) or Error;
//             host: the tree, as FileEntry frames each followed by its data (FileData frames
//             totalling the entry's size, for a File), then FileEnd;
//             guest: FileDone once everything is on disk, or Error at the first failure.
//   copy out  host: FileGet; guest: the tree (as above) and FileEnd, or Error at any point.
// The tree's first entry is its top (name ""); names below it are relative to it (util/tree.h).
// Flow control is the connection's own: each side reads only as fast as it writes to disk (or to
// its output), and the vsock credit and socket buffers hold the writer back, so a copy of any
// size runs in bounded memory. A side that fails sends Error and closes.
// Payload layouts, little-endian (str = u32 length + bytes):
//   PutRequest  u32 flags, str dest, str name, str user
//   GetRequest  u32 flags, str src
//   EntryHeader u8 kind, str name, u32 mode, u32 uid, u32 gid, i64 mtime_sec, u32 mtime_nsec,
//               u64 size, str target, u64 rdev, u32 count, count x (str name, str value)
//   CopyDone    u64 entries, u64 bytes, u64 skipped
// Decoders check every field (known flags and kinds, NUL-free bounded names, sizes only on
// files, targets only on links) and throw ProtoError; an entry's name and a hard link's target
// must also pass util/tree.h's entry_components (no absolute name, no `..`), so no sink sees one
// that does not. What an entry lies beneath (a link planted earlier) is the sink's to refuse:
// util/tree_writer.h never writes through a link, store/archive_entries.h never emits an entry
// beneath a symbolic link of the same stream.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proto/agent.h"
#include "proto/fields.h"
#include "proto/wire.h"
#include "util/tree.h"

namespace space::proto {

constexpr size_t kMaxFileChunk = 256 * 1024;  // payload of one FileData frame

struct PutRequest : FieldMessage<PutRequest> {
  static constexpr uint32_t kArchive = 1;   // keep the entries' owners (else: `user` owns them)
  static constexpr uint32_t kDir = 2;       // the source is a directory
  static constexpr uint32_t kContents = 4;  // SRC/. : its contents go into the destination
  static constexpr uint32_t kStream = 8;    // a tar stream: entries go into dest, a directory
  uint32_t flags = 0;
  std::string dest;  // the destination path in the guest, as the user typed it
  std::string name;  // the source's base name (what a new top is called)
  // Who owns what is copied in, without kArchive: "USER[:GROUP]" by name or number, resolved in
  // the guest's root; "" = root.
  std::string user;
  SPACE_FIELDS(flags, dest, name, user);
  void check() const;
};

struct GetRequest : FieldMessage<GetRequest> {
  static constexpr uint32_t kFollowLink = 1;  // a source that is a symbolic link: copy its target
  uint32_t flags = 0;
  std::string src;  // the source path in the guest
  SPACE_FIELDS(flags, src);
  void check() const;
};
// A tree entry's header (EntryHeader above); util/tree.h holds the struct.
template <>
struct FieldList<TreeEntry> {
  SPACE_FIELDS(kind, name, mode, uid, gid, mtime_sec, mtime_nsec, size, target, rdev,
               (xattrs, Max{kMaxEntryXattrs}));
  static void check(const TreeEntry& e);
};

std::vector<uint8_t> encode_entry(const TreeEntry& e);
TreeEntry decode_entry(std::span<const uint8_t> p);

// The receiving side of a tree (copy in, in the guest; copy out, on the host): checks the frame
// sequence and drives a sink (util/tree.h).
class TreeReceiver {
 public:
  explicit TreeReceiver(TreeSink& sink) : sink_(sink) {}
  // Handles one FileEntry, FileData or FileEnd frame; true once FileEnd has arrived. Throws
  // ProtoError on a malformed entry, data outside a file or beyond its size, an entry or FileEnd
  // before the current file's data is complete, or another frame type; the sink's own errors
  // pass through.
  bool feed(const Frame& f);
  uint64_t entries() const { return entries_; }
  uint64_t bytes() const { return bytes_; }  // file data received

 private:
  TreeSink& sink_;
  uint64_t entries_ = 0, bytes_ = 0;
  uint64_t left_ = 0, offset_ = 0;  // the current file's data still due, and its position
  bool wanted_ = false;             // the sink takes the current file's data
  bool ended_ = false;
};

struct CopyDone : FieldMessage<CopyDone> {
  uint64_t entries = 0, bytes = 0, skipped = 0;
  SPACE_FIELDS(entries, bytes, skipped);
};

}  // namespace space::proto

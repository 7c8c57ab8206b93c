// File message codecs; see files.h. Encoders trust their caller; decoders trust nothing.
#include "proto/files.h"

#include "util/error.h"

namespace space::proto {
namespace {

void check_path(const std::string& s, const char* what, bool allow_empty) {
  if (!allow_empty && s.empty()) throw ProtoError(std::string(what) + " is empty");
  if (s.size() > kMaxEntryName) throw ProtoError(std::string(what) + " is too long");
  if (s.find('\0') != std::string::npos)
    throw ProtoError(std::string(what) + " contains a NUL byte");
}

// An entry name, or a hard link's target, that util/tree.h's rules refuse (absolute, `..`, a
// component longer than NAME_MAX): no sink ever sees it.
void check_entry_name(const TreeEntry& e) {
  try {
    entry_components(e.name);
  } catch (const Error& err) {
    throw ProtoError("entry '" + e.name + "' " + err.what());
  }
  if (e.kind != EntryKind::Hardlink) return;
  try {
    entry_components(e.target);
  } catch (const Error& err) {
    throw ProtoError("entry '" + e.name + "' links to '" + e.target + "', which " + err.what());
  }
}

}  // namespace

std::vector<uint8_t> PutRequest::encode() const {
  Writer w;
  w.u32(flags);
  w.str(dest);
  w.str(name);
  w.str(user);
  return std::move(w.buffer());
}

PutRequest PutRequest::decode(std::span<const uint8_t> p) {
  Reader r(p);
  PutRequest q;
  q.flags = r.u32();
  if (q.flags & ~(kArchive | kDir | kContents | kStream)) throw ProtoError("unknown put flags");
  q.dest = r.str();
  q.name = r.str();
  q.user = r.str();
  r.finish();
  check_path(q.dest, "the destination", false);
  check_path(q.name, "the source name", true);
  if (q.name.find('/') != std::string::npos || q.name == "." || q.name == "..")
    throw ProtoError("the source name is not a single file name");
  check_path(q.user, "the user", true);
  return q;
}

std::vector<uint8_t> GetRequest::encode() const {
  Writer w;
  w.u32(flags);
  w.str(src);
  return std::move(w.buffer());
}

GetRequest GetRequest::decode(std::span<const uint8_t> p) {
  Reader r(p);
  GetRequest q;
  q.flags = r.u32();
  if (q.flags & ~kFollowLink) throw ProtoError("unknown get flags");
  q.src = r.str();
  r.finish();
  check_path(q.src, "the source", false);
  return q;
}

std::vector<uint8_t> encode_entry(const TreeEntry& e) {
  Writer w;
  w.u8(static_cast<uint8_t>(e.kind));
  w.str(e.name);
  w.u32(e.mode);
  w.u32(e.uid);
  w.u32(e.gid);
  w.u64(static_cast<uint64_t>(e.mtime_sec));
  w.u32(e.mtime_nsec);
  w.u64(e.size);
  w.str(e.target);
  w.u64(e.rdev);
  w.u32(static_cast<uint32_t>(e.xattrs.size()));
  for (const auto& [name, value] : e.xattrs) {
    w.str(name);
    w.str(value);
  }
  return std::move(w.buffer());
}

TreeEntry decode_entry(std::span<const uint8_t> p) {
  Reader r(p);
  TreeEntry e;
  uint8_t kind = r.u8();
  if (kind < static_cast<uint8_t>(EntryKind::Dir) || kind > static_cast<uint8_t>(EntryKind::Fifo))
    throw ProtoError("unknown entry kind");
  e.kind = static_cast<EntryKind>(kind);
  e.name = r.str();
  e.mode = r.u32();
  e.uid = r.u32();
  e.gid = r.u32();
  e.mtime_sec = static_cast<int64_t>(r.u64());
  e.mtime_nsec = r.u32();
  e.size = r.u64();
  e.target = r.str();
  e.rdev = r.u64();
  uint32_t n = r.u32();
  if (n > kMaxEntryXattrs) throw ProtoError("too many extended attributes");
  for (uint32_t i = 0; i < n; i++) {
    std::string name = r.str();
    std::string value = r.str();
    if (name.empty() || name.size() > 255 || name.find('\0') != std::string::npos)
      throw ProtoError("an invalid extended attribute name");
    if (value.size() > kMaxXattrValue) throw ProtoError("an extended attribute is too large");
    e.xattrs.emplace_back(std::move(name), std::move(value));
  }
  r.finish();
  check_path(e.name, "the entry name", true);
  if (e.mode & ~07777u) throw ProtoError("entry mode has bits beyond 07777");
  if (e.mtime_nsec >= 1'000'000'000u) throw ProtoError("entry mtime nanoseconds out of range");
  const bool link = e.kind == EntryKind::Symlink || e.kind == EntryKind::Hardlink;
  check_path(e.target, "the link target", !link);
  if (!link && !e.target.empty()) throw ProtoError("a target on an entry that is not a link");
  check_entry_name(e);
  if (e.kind != EntryKind::File && e.size != 0)
    throw ProtoError("a size on an entry that is not a file");
  const bool dev = e.kind == EntryKind::CharDev || e.kind == EntryKind::BlockDev;
  if (!dev && e.rdev != 0) throw ProtoError("a device number on an entry that is not a device");
  return e;
}

bool TreeReceiver::feed(const Frame& f) {
  if (ended_) throw ProtoError("a frame after the end of the tree");
  switch (f.type) {
    case Type::FileEntry: {
      if (left_) throw ProtoError("an entry before the previous file's data was complete");
      TreeEntry e = decode_entry(f.payload);
      entries_++;
      wanted_ = sink_.begin_entry(e);
      left_ = e.kind == EntryKind::File ? e.size : 0;
      offset_ = 0;
      if (wanted_ && left_ == 0) sink_.end_file();
      return false;
    }
    case Type::FileData:
      if (f.payload.empty() || f.payload.size() > left_)
        throw ProtoError(left_ ? "an empty file data frame" : "file data outside a file's size");
      if (wanted_) sink_.file_data(f.payload, offset_);
      offset_ += f.payload.size();
      left_ -= f.payload.size();
      bytes_ += f.payload.size();
      if (wanted_ && left_ == 0) sink_.end_file();
      return false;
    case Type::FileEnd:
      if (left_) throw ProtoError("the tree ended inside a file's data");
      if (!f.payload.empty()) throw ProtoError("FileEnd takes no payload");
      ended_ = true;
      return true;
    default:
      throw ProtoError("unexpected frame type " + std::to_string(static_cast<int>(f.type)) +
                       " in a tree");
  }
}

std::vector<uint8_t> CopyDone::encode() const {
  Writer w;
  w.u64(entries);
  w.u64(bytes);
  w.u64(skipped);
  return std::move(w.buffer());
}

CopyDone CopyDone::decode(std::span<const uint8_t> p) {
  Reader r(p);
  CopyDone d;
  d.entries = r.u64();
  d.bytes = r.u64();
  d.skipped = r.u64();
  r.finish();
  return d;
}

}  // namespace space::proto

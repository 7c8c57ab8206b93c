// A file tree as a stream of entries, the unit both ends of a copy agree on: `space cp` sends
// them between host and guest (proto/files.h), image import makes them from tar archives
// (store/extract.h). An entry is a directory, a regular file (its data follows it), a symbolic
// link, a hard link to an earlier entry, or a device node / fifo. Names are relative to the copy's
// top: "" is the top itself, "a/b" lies beneath it. This header holds the entry and the name
// rules; tree_writer.h applies entries beneath a directory by descriptor, tree_walker.h makes
// them from one, copy_target.h decides where a copy lands.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace space {

enum class EntryKind : uint8_t { Dir = 1, File, Symlink, Hardlink, CharDev, BlockDev, Fifo };

struct TreeEntry {
  EntryKind kind = EntryKind::File;
  std::string name;   // relative to the top ("" = the top itself); '/'-separated
  uint32_t mode = 0;  // permission bits and setuid/setgid/sticky (07777)
  uint32_t uid = 0, gid = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
  uint64_t size = 0;   // File: the bytes of data that follow
  std::string target;  // Symlink: its target as is; Hardlink: the earlier entry's name
  uint64_t rdev = 0;   // CharDev, BlockDev
  std::vector<std::pair<std::string, std::string>> xattrs;  // name, value
};

// The components of entry name `name`, with "." and empty ones dropped ("./a//b/" -> {a, b};
// "." -> {}). Throws space::Error for an absolute name, a `..` component, a NUL byte or a
// component longer than NAME_MAX.
std::vector<std::string> entry_components(std::string_view name);

// "a/b" from {a, b} (the first `n` components; all by default).
std::string join_components(const std::vector<std::string>& c, size_t n = SIZE_MAX);

// Where a stream of entries goes: a TreeWriter (files beneath a directory), an ArchiveWriter
// (a tar stream), a test's recorder.
class TreeSink {
 public:
  virtual ~TreeSink() = default;
  // Starts entry `e`. True if it wants a File's data: exactly e.size bytes through file_data(),
  // then end_file(). False: the data that follows is dropped.
  virtual bool begin_entry(const TreeEntry& e) = 0;
  virtual void file_data(std::span<const uint8_t> bytes, uint64_t offset) = 0;
  virtual void end_file() = 0;
};

// Limits both ends enforce on an entry (checked by the protocol decoder too).
constexpr size_t kMaxEntryName = 4096;  // PATH_MAX
constexpr size_t kMaxEntryXattrs = 128;
constexpr size_t kMaxXattrValue = 65536;  // XATTR_SIZE_MAX

}  // namespace space

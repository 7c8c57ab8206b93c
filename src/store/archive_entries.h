// Tar archives as tree entries (util/tree.h), both ways, through libarchive (store/libarchive.h):
// read_archive_entries turns any tar libarchive reads (plain, gzip, xz, zstd, bzip2; ustar, pax,
// GNU) into entries with their data, and ArchiveWriter writes entries as a pax tar stream. Image
// import extracts layers with the first; `space cp` reads a tar on stdin with the first and
// writes one on stdout with the second. Sockets and other kinds a tree cannot hold are skipped.
// The writer's entries come from a guest, and the stream goes to whatever extracts it (GNU tar,
// Python's tarfile, which guards against less): it emits only names entry_components accepts (no
// absolute name, no `..`), nothing named as or beneath a symbolic link it emitted earlier, and
// hard links only to an earlier file of the same stream that no such link leads to; anything else
// is refused before any of it is written, and an abandoned stream gets no end-of-archive blocks,
// so no extractor mistakes it for a complete one.
#pragma once
#include <archive.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "util/tree.h"

namespace space::store {

// Delivers the current entry's data as (bytes, offset) blocks, in increasing offsets (a sparse
// archive may skip ahead).
using DataSink = std::function<void(std::span<const uint8_t> bytes, uint64_t offset)>;
using ArchiveData = std::function<void(const DataSink&)>;

// Reads the tar archive from `fd` and calls `each(entry, data)` per entry; a File's data is read
// only if `each` calls data(sink). `origin` names the archive in errors. Throws space::Error on an
// unreadable or malformed archive.
void read_archive_entries(int fd, const std::string& origin,
                          const std::function<void(const TreeEntry&, const ArchiveData&)>& each);

// Writes a pax tar stream to `fd`.
class ArchiveWriter : public TreeSink {
 public:
  // Entries are written beneath `top` (a single file name; the stream's "" entry is `top`
  // itself); with top "" they are written as they are, the "" entry as "." (a directory).
  ArchiveWriter(int fd, std::string top, std::string origin);
  // Without close(), the stream is abandoned: what libarchive still holds is dropped and no
  // end-of-archive blocks are written (libarchive's archive_write_fail would leak its buffer).
  ~ArchiveWriter() override;
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;
  // Writes `e`'s header (names as entry_components normalises them: "./a//b" is "a/b"); a
  // File's e.size bytes follow through data(). Throws space::Error naming the entry, having
  // written nothing of it, for a name that is absolute, has a `..` or NUL, names or lies beneath
  // an earlier symbolic link entry, or is the root but not a directory; for a symbolic link
  // without a target or with a NUL in it; for a hard link whose target breaks the same name
  // rules or is not an earlier non-directory entry. A hard link to an earlier symbolic link is
  // written as a copy of that link.
  void begin(const TreeEntry& e);
  void data(std::span<const uint8_t> bytes);
  // TreeSink: the data arrives in order, so offsets are not needed.
  bool begin_entry(const TreeEntry& e) override {
    begin(e);
    return e.kind == EntryKind::File;
  }
  void file_data(std::span<const uint8_t> bytes, uint64_t) override { data(bytes); }
  void end_file() override {}
  // Writes the end-of-archive blocks. Throws space::Error if the output fails.
  void close();

 private:
  // libarchive's output: the blocks go to fd_, or nowhere once the stream is abandoned.
  static la_ssize_t write_out(archive* a, void* self, const void* buf, size_t n);
  [[noreturn]] void fail_write(const std::string& what);
  [[noreturn]] void refuse(const std::string& name, const std::string& why) const;
  // `name`'s components beneath top_; refuses what entry_components refuses.
  std::vector<std::string> components(const std::string& name, const std::string& entry,
                                      const char* what) const;
  // The earlier symbolic link entry that `c` (one of its leading components) lies beneath, or "".
  std::string symlink_above(const std::vector<std::string>& c) const;
  archive* a_ = nullptr;
  int fd_;
  std::string top_, origin_;
  bool closed_ = false, abandoned_ = false;
  int write_errno_ = 0;  // why the last write to fd_ failed
  // What the stream holds so far, by emitted name: symbolic links (with their targets), which
  // nothing may be written beneath or as, and the entries a hard link may name (files, nodes and
  // hard links). Both grow with the stream, as TreeWriter's record of what it created does.
  std::unordered_map<std::string, std::string> symlinks_;
  std::unordered_set<std::string> linkable_;
};

}  // namespace space::store

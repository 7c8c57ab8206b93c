// Tar archives as tree entries (util/tree.h), both ways, through libarchive (store/libarchive.h):
// read_archive_entries turns any tar libarchive reads (plain, gzip, xz, zstd, bzip2; ustar, pax,
// GNU) into entries with their data, and ArchiveWriter writes entries as a pax tar stream. Image
// import extracts layers with the first; `space cp` reads a tar on stdin with the first and
// writes one on stdout with the second. Sockets and other kinds a tree cannot hold are skipped.
#pragma once
#include <archive.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

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
  // Entries are written beneath `top` (the stream's "" entry is `top` itself); with top "" they
  // are written as they are, the "" entry as ".".
  ArchiveWriter(int fd, std::string top, std::string origin);
  ~ArchiveWriter() override;
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;
  // Writes `e`'s header; a File's e.size bytes follow through data().
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
  [[noreturn]] void fail_write(const std::string& what);
  archive* a_ = nullptr;
  std::string top_, origin_;
  bool closed_ = false;
};

}  // namespace space::store

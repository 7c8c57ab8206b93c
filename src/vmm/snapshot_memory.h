// The snapshot's `memory` file: guest RAM byte for byte, sparse. Writing skips all-zero 4 KiB
// pages by seeking over them (the file keeps holes there), coalesces the rest into large
// pwrite()s, and commits atomically (temp file, fsync, rename, fsync of the directory). A restore
// maps the file MAP_PRIVATE (GuestMemory::from_file): lazily faulted, shared copy-on-write with
// the page cache and every other sandbox restored from it.
// A guest whose RAM privately maps a memory file (a sandbox made from a template, restored from a
// checkpoint, or branched) is written as a diff instead: the new file starts as a reflink of that
// base file (no data written) and only the pages the guest has written since, which the kernel
// reports as anonymous in the VMM's pagemap, are written over it (all-zero ones as holes). A
// jailed VMM has no /proc: whoever asks for the snapshot passes its pagemap as a descriptor, and
// the base is the descriptor RAM was mapped from, never a path.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/fd.h"
#include "util/fs.h"

namespace space::vmm::snapshot {

struct MemoryFileStats {
  uint64_t size = 0;        // logical size (== guest RAM)
  uint64_t data_bytes = 0;  // bytes actually written (non-zero pages)
};

// Writes `ram` (a multiple of 4 KiB) to `to` atomically and durably, as a sparse file.
MemoryFileStats write_memory_file(const fs::FileAt& to, std::span<const uint8_t> ram);
MemoryFileStats write_memory_file(const std::string& path, std::span<const uint8_t> ram);

// The file a guest's RAM privately maps: the descriptor it was mapped from (a file renamed over
// its path since, a newer checkpoint, is no base of this RAM).
struct MemoryBase {
  std::string path;  // "" = anonymous RAM: no base; otherwise for messages
  int fd = -1;       // not owned: it stays open as long as the mapping
};
// The base of RAM mapped from the open memory file `fd` at `path`.
MemoryBase memory_base_of(int fd, const std::string& path);

// The pagemap entries for the pages of `ram` in this process, read from `pagemap_fd` (this
// process's /proc/PID/pagemap, opened by whoever could) or, when it is -1, /proc/self/pagemap;
// empty if unreadable.
std::vector<uint64_t> read_pagemap(std::span<const uint8_t> ram, int pagemap_fd = -1);
// True for the entry of a page of a private file mapping that no longer shows the file: written
// (present and anonymous) or swapped out (only anonymous pages are).
bool page_written(uint64_t pagemap_entry);

// Like write_memory_file, but as a diff against `base`, which `ram` (this process's mapping)
// privately maps: a reflink of the base plus the pages this process has written. Falls back to
// write_memory_file when there is no base, it cannot be reflinked (another filesystem) or the
// pagemap cannot be read. `diff` in the result says which way it went.
MemoryFileStats write_memory_diff(const fs::FileAt& to, std::span<const uint8_t> ram,
                                  const MemoryBase& base, int pagemap_fd, bool* diff = nullptr);
// True when the 4 KiB page at `p` is all zero.
bool page_is_zero(const uint8_t* p);
// Checks that the memory file open as `fd` (opened before the guest's size was known, by the VMM
// before its jail) is a regular file of exactly `expected_bytes`; throws space::Error
// "snapshot <path>: not a regular file of N bytes" otherwise.
void check_memory_file(int fd, const std::string& path, uint64_t expected_bytes);

}  // namespace space::vmm::snapshot

// The snapshot's `memory` file: guest RAM byte for byte, sparse. Writing skips all-zero 4 KiB
// pages by seeking over them (the file keeps holes there), coalesces the rest into large
// pwrite()s, and commits atomically (temp file, fsync, rename, fsync of the directory). A restore
// maps the file MAP_PRIVATE (GuestMemory::from_file): lazily faulted, shared copy-on-write with
// the page cache and every other sandbox restored from it.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "util/fd.h"

namespace space::snapshot {

struct MemoryFileStats {
  uint64_t size = 0;        // logical size (== guest RAM)
  uint64_t data_bytes = 0;  // bytes actually written (non-zero pages)
};

// Writes `ram` (a multiple of 4 KiB) to `path` atomically and durably, as a sparse file.
MemoryFileStats write_memory_file(const std::string& path, std::span<const uint8_t> ram);
// True when the 4 KiB page at `p` is all zero.
bool page_is_zero(const uint8_t* p);
// Opens a memory file for mapping and checks it holds exactly `expected_bytes`; throws
// space::Error "snapshot <path>: ..." otherwise.
Fd open_memory_file(const std::string& path, uint64_t expected_bytes);

}  // namespace space::snapshot

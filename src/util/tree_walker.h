// Reading a file tree as a stream of entries (util/tree.h), the sending side of `space cp`: the
// host walks the user's files to copy in, guest-init walks the guest's to copy out. The walk is
// by descriptor: each directory is opened beneath its parent with O_NOFOLLOW, so a symbolic link
// is always sent as a link and never followed (except the top with follow_top), and a directory
// swapped for a link meanwhile fails to open instead of leading elsewhere. Files with several
// names are sent once, then as hard links to the first name. Sockets are skipped (counted), and
// directories holding a kernel pseudo filesystem (proc, sysfs, devpts, cgroup, debugfs, tracefs,
// securityfs, bpf) are sent empty: their contents are not files.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "util/tree.h"

namespace space {

struct WalkOptions {
  bool follow_top = false;  // a top that is a symbolic link: send what it points to
  bool xattrs = true;       // read extended attributes of files and directories
};

struct WalkStats {
  uint64_t entries = 0;
  uint64_t skipped = 0;  // sockets
};

// Calls `each(entry, fd)` for the top, `top_fd`, and everything beneath it, parents before
// children. `top_fd` is an O_PATH descriptor of the top (opened with O_NOFOLLOW unless the caller
// follows it). For a File, `fd` is open for reading and `each` must consume exactly entry.size
// bytes through send_file_data(); for other kinds it is -1. Throws space::Error naming the path.
WalkStats walk_tree(int top_fd, const WalkOptions& opts,
                    const std::function<void(const TreeEntry&, int fd)>& each);

// Reads `size` bytes of `fd` from its start and hands them to `chunk` in pieces of at most
// `max_chunk`; a file that shrank meanwhile is padded with zeros, one that grew is cut at `size`
// (the entry's size was already sent). Throws on a read error.
void send_file_data(int fd, uint64_t size, size_t max_chunk,
                    const std::function<void(const uint8_t*, size_t)>& chunk);

}  // namespace space

// diskfill: a static test program that writes a file with O_DIRECT, a MiB at a time from one
// buffer it filled once, until it has written the MiB asked for or a write fails: a guest filling
// its disk without the guest kernel copying every page (on a PVM host the guest kernel is
// interpreted, and buffered writes of a GiB would take minutes). It prints how far it got and the
// error that stopped it, and exits 0 when it wrote everything, 1 when a write failed. tests/
// integration/98_disk_full.sh runs it in a sandbox to fill the host's store. Usage:
// diskfill FILE MIB
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  long mib = argc > 2 ? std::atol(argv[2]) : 0;
  if (mib <= 0) {
    std::fprintf(stderr, "usage: diskfill FILE MIB\n");
    return 2;
  }
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "diskfill: open %s: %s\n", argv[1], std::strerror(errno));
    return 2;
  }
  constexpr size_t kChunk = 1 << 20;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, kChunk) != 0) return 2;
  // Not zeros: a store that compressed or deduplicated zeros would never fill.
  auto* b = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < kChunk; i++) b[i] = static_cast<unsigned char>(i * 2654435761u >> 24);
  for (long i = 0; i < mib; i++) {
    b[0] = static_cast<unsigned char>(i);
    ssize_t n = pwrite(fd, buf, kChunk, static_cast<off_t>(i) * kChunk);
    if (n != static_cast<ssize_t>(kChunk)) {
      int err = n < 0 ? errno : ENOSPC;
      std::printf("wrote %ld MiB, then: %s\n", i, std::strerror(err));
      return 1;
    }
  }
  if (fsync(fd) != 0) {
    std::printf("wrote %ld MiB, then fsync: %s\n", mib, std::strerror(errno));
    return 1;
  }
  std::printf("wrote %ld MiB\n", mib);
  return 0;
}

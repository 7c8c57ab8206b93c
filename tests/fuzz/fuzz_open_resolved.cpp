// libFuzzer harness for util/open_resolved's walk, the stand-in for openat2 where a kernel has
// none (guest-init inside gVisor resolves the host's cp paths with it): differential against
// the kernel's own openat2 on one fixed tree of hostile links (absolute, relative, climbing out,
// a loop, a link to a directory, a file where a directory is wanted). The input's first byte
// picks the rule and the open flags, the rest is the path (NUL ends it). Both must give the same
// inode or the same errno (__builtin_trap otherwise). O_CREAT is left out: it would change the
// tree between inputs. Built with clang++ -fsanitize=fuzzer when clang is found (CMakeLists.txt).
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "util/open_resolved.h"

namespace {

std::string top;  // the tree's directory, removed at exit

int remove_entry(const char* path, const struct stat*, int, FTW*) {
  return ::remove(path);
}

int root_fd() {
  static int fd = [] {
    char tmpl[] = "/tmp/space-fuzz-resolve-XXXXXX";
    if (!::mkdtemp(tmpl)) __builtin_trap();
    top = tmpl;
    std::atexit([] { ::nftw(top.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS); });
    std::string r = top + "/root";
    for (const char* d : {"/root", "/root/etc", "/root/a", "/root/a/b"})
      ::mkdir((top + d).c_str(), 0755);
    for (const char* f : {"/outside", "/root/etc/hosts", "/root/a/b/c"})
      ::close(::open((top + f).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ::symlink("/etc/hosts", (r + "/abs").c_str());
    ::symlink("a/b", (r + "/rel").c_str());
    ::symlink("../../outside", (r + "/a/up").c_str());
    ::symlink("l2", (r + "/l1").c_str());
    ::symlink("l1", (r + "/l2").c_str());
    ::symlink("/a/b/c", (r + "/a/b/abs-c").c_str());
    ::symlink("/..", (r + "/dotdot").c_str());
    return ::open(r.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  }();
  return fd;
}

long long outcome(int fd) {
  if (fd < 0) return -errno;
  struct stat st {};
  ::fstat(fd, &st);
  ::close(fd);
  return static_cast<long long>(st.st_ino);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const uint64_t rules[] = {
      RESOLVE_IN_ROOT, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, RESOLVE_BENEATH,
      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
  static const int flag_sets[] = {O_RDONLY, O_PATH, O_PATH | O_NOFOLLOW, O_RDONLY | O_DIRECTORY};
  const uint64_t rule = rules[data[0] & 3];
  const int flags = flag_sets[(data[0] >> 2) & 3];
  std::string path(reinterpret_cast<const char*>(data + 1), size - 1);
  path = path.substr(0, path.find('\0'));
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = rule;
  long long kernel =
      outcome(static_cast<int>(::syscall(SYS_openat2, root_fd(), path.c_str(), &how, sizeof how)));
  long long walk = outcome(space::open_resolved_walk(root_fd(), path, flags, rule));
  if (kernel != walk) __builtin_trap();
  return 0;
}

// Secret memory; see secret_memory.h.
#include "util/secret_memory.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "util/error.h"

namespace space {

namespace {

size_t page_size() {
  static const size_t size = size_t(::sysconf(_SC_PAGESIZE));
  return size;
}

// `n` rounded up to whole pages (at least one); 0 when that overflows.
size_t pages_for(size_t n) {
  const size_t page = page_size();
  if (n == 0) return page;
  if (n > size_t(-1) - (page - 1)) return 0;
  return (n + page - 1) / page * page;
}

}  // namespace

void protect_process_memory() {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    throw Error(std::string("prctl(PR_SET_DUMPABLE, 0): ") + ::strerror(errno), errno,
                "a process holding secrets must not be dumpable; check the kernel's seccomp or "
                "LSM policy for this process");
  rlimit none{0, 0};
  if (::setrlimit(RLIMIT_CORE, &none) != 0)
    throw Error(std::string("setrlimit(RLIMIT_CORE, 0): ") + ::strerror(errno), errno,
                "a process holding secrets must not write core files; check the kernel's "
                "seccomp or LSM policy for this process");
}

void* secret_allocate(size_t n) {
  const size_t len = pages_for(n);
  if (len == 0) throw std::bad_alloc();
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  // Best effort each: a kernel without MADV_DONTDUMP is rare; mlock fails past RLIMIT_MEMLOCK
  // (EPERM, ENOMEM, EAGAIN), and then the pages may be swapped but are still not dumped.
  // mlock through syscall(): the sanitizers' mlock interceptor locks nothing, which would leave
  // a sanitized build (and its tests) believing the pages were locked.
  (void)::madvise(p, len, MADV_DONTDUMP);
  (void)::syscall(SYS_mlock, p, len);
  return p;
}

void secret_free(void* p, size_t n) noexcept {
  if (!p) return;
  const size_t len = pages_for(n);
  ::explicit_bzero(p, len);
  (void)::syscall(SYS_munlock, p, len);
  ::munmap(p, len);
}

}  // namespace space

// Mapping::map: the one place the project calls mmap() for owned regions.
#include "util/mmap.h"

#include "util/error.h"

namespace space {

Mapping Mapping::map(size_t len, int prot, int flags, int fd, off_t off, const char* what) {
  void* p = ::mmap(nullptr, len, prot, flags, fd, off);
  if (p == MAP_FAILED) throw_errno(std::string("mmap ") + what);
  return Mapping(p, len);
}

}  // namespace space

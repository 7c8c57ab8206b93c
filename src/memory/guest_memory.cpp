// GuestMemory constructors: validate the size, then map private memory, left out of core dumps
// (MADV_DONTDUMP: guest RAM may hold the guest's secrets).
#include "memory/guest_memory.h"

#include <sys/mman.h>

#include "util/error.h"

namespace space::memory {
namespace {
void check_size(uint64_t bytes) {
  if (bytes == 0 || bytes % 4096 != 0)
    fail("guest memory size " + std::to_string(bytes) + " is not a positive multiple of 4 KiB");
  if (bytes > GuestMemory::kMaxBytes)
    fail("guest memory of " + std::to_string(bytes >> 20) + " MiB is too large",
         "use --memory 3072 or less");
}

Mapping no_dump(Mapping m) {
  if (::madvise(m.data(), m.size(), MADV_DONTDUMP) != 0)
    throw_errno("madvise(MADV_DONTDUMP) guest memory");
  return m;
}
}  // namespace

GuestMemory GuestMemory::anonymous(uint64_t bytes) {
  check_size(bytes);
  return GuestMemory(
      no_dump(Mapping::map(bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, "guest memory")));
}

GuestMemory GuestMemory::from_file(int fd, uint64_t bytes) {
  check_size(bytes);
  return GuestMemory(no_dump(Mapping::map(
      bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0, "guest memory file")));
}

GuestMemory GuestMemory::adopt(uint8_t* base, uint64_t bytes) {
  check_size(bytes);
  return GuestMemory(Mapping(base, bytes));
}

}  // namespace space::memory

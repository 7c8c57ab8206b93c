// Keeping secret values out of core dumps, swap and other processes' reach. The credential
// helper and `space secret set` call protect_process_memory() before they hold a value: the
// process is no longer dumpable (no core dump, and no ptrace or /proc/PID/mem by other
// processes of its uid) and its RLIMIT_CORE is 0. Secret bytes themselves live in pages of
// their own (SecretAllocator, behind SecretString in util/wipe.h): excluded from core dumps
// (MADV_DONTDUMP, which also holds where a dump goes to a pipe such as systemd-coredump and
// RLIMIT_CORE does not apply), locked in RAM (mlock) unless RLIMIT_MEMLOCK refuses, then only
// excluded from dumps, without an error; wiped, unlocked and unmapped when freed.
#pragma once
#include <cstddef>
#include <new>
#include <string>

namespace space {

// Makes this process not dumpable (prctl PR_SET_DUMPABLE 0) and sets RLIMIT_CORE to 0, soft and
// hard, so that nothing of its memory reaches a core file. Throws Error when the kernel refuses.
void protect_process_memory();

// `n` bytes (a whole number of pages of their own) for secret bytes: MADV_DONTDUMP, and mlock'ed
// when RLIMIT_MEMLOCK allows. Throws std::bad_alloc when no memory is left.
void* secret_allocate(size_t n);
// Wipes, unlocks and unmaps what secret_allocate(n) returned.
void secret_free(void* p, size_t n) noexcept;

// An allocator whose memory is secret_allocate()'s; for strings and buffers of secret bytes.
template <class T>
struct SecretAllocator {
  using value_type = T;
  SecretAllocator() noexcept = default;
  template <class U>
  SecretAllocator(const SecretAllocator<U>&) noexcept {}  // NOLINT: converting, as allocators do
  T* allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(secret_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { secret_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const SecretAllocator<U>&) const noexcept {
    return true;
  }
};

// A string of secret bytes. Its first 15 bytes would sit inside the object itself (the short
// string optimisation) until it has reserved more: SecretString reserves kSecretMinCapacity
// before it holds anything.
using SecretBytes = std::basic_string<char, std::char_traits<char>, SecretAllocator<char>>;
constexpr size_t kSecretMinCapacity = 16;

}  // namespace space

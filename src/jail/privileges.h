// Dropping a jailed process's privileges for good, in the order that makes each step possible:
// the capability bounding set is emptied while CAP_SETPCAP is still held, then supplementary
// groups go, then the gid and uid become the sandbox's own (real, effective and saved alike, so
// nothing can be taken back), which clears every remaining capability, ambient ones included.
// Then no_new_privs, not dumpable (no core file, /proc/PID owned by root, no ptrace by the same
// uid), RLIMIT_CORE 0, RLIMIT_NOFILE at the size the VMM's connection limits need and RLIMIT_FSIZE
// at the largest file it may write. Each step
// is checked: drop() throws if a capability survived.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace space::jail {

struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Descriptors a VMM may hold: its vsock connections (1024) and handshakes, the control socket's
// clients, the descriptors a branch request brings (7 per branch, up to 64), logs and disks.
constexpr uint64_t kVmmMaxFiles = 2048;

// Drops to `who` as above, with RLIMIT_NOFILE = `max_files` and, when `max_file_bytes` is not 0,
// RLIMIT_FSIZE = `max_file_bytes`: no file the process writes can grow past it (a write, a
// fallocate or an ftruncate beyond fails with EFBIG; SIGXFSZ is ignored so that the call fails
// rather than killing it). A VMM's bound is its largest disk or its memory: it cannot extend its
// disks into the shared store. Throws Error naming the step that failed; the process must then
// exit (it may be half-dropped).
void drop(const Identity& who, uint64_t max_files = kVmmMaxFiles, uint64_t max_file_bytes = 0);

// The process's effective, permitted and bounding capability sets are all empty.
bool has_no_capabilities();

// Opens `path` with `flags` while CAP_SYS_ADMIN is out of the calling thread's effective set, then
// puts it back: for files that decide at open time what their reader may see, such as
// /proc/PID/pagemap, whose physical frame numbers are shown only to an opener with CAP_SYS_ADMIN.
// A descriptor handed to a jailed VMM is opened this way. Returns the descriptor, or -1 with
// errno; throws if the capability cannot be put back.
int open_without_sys_admin(const std::string& path, int flags);

}  // namespace space::jail

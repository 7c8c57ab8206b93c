// openat2(2) with its RESOLVE_* rules, and the same rules walked one component at a time where
// the kernel has no openat2: gVisor's user-space kernel (the gvisor engine's guest) answers
// ENOSYS. The walk opens each directory with O_PATH | O_NOFOLLOW, reads a symlink's target with
// readlinkat and splices it into the names still to resolve (at most 40 links, ELOOP beyond), and
// applies the rules as the kernel does: RESOLVE_IN_ROOT treats "/" and ".." at the top as the
// root itself; RESOLVE_BENEATH fails with EXDEV on an absolute path or link, or a ".." above the
// root; RESOLVE_NO_SYMLINKS fails with ELOOP on any link; RESOLVE_NO_XDEV fails with EXDEV when a
// component lies on another filesystem than the root; RESOLVE_NO_MAGICLINKS is met because the
// walk never follows a link the kernel's way, only by its text. The kernel's check that no
// rename moved a directory during the walk is not made: where the walk runs (inside a gVisor
// sandbox, for guest-init) the caller is inside the boundary it resolves for. The host's kernel
// has openat2, so the host never walks.
#pragma once
#include <cstdint>
#include <string>

namespace space {

// openat2(dir, path, {flags | O_CLOEXEC, mode, resolve}), or the walk when the kernel has no
// openat2. Returns the fd, or -1 with errno set, as openat2 does.
int open_resolved(int dir, const std::string& path, int flags, uint64_t resolve, mode_t mode = 0);
// The walk alone (for tests, which compare it with the kernel's openat2).
int open_resolved_walk(int dir, const std::string& path, int flags, uint64_t resolve,
                       mode_t mode = 0);

}  // namespace space

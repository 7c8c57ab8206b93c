// Starting the process of one exec. Everything the child needs (argv, the merged environment,
// the user, the pipes or the pty) is prepared first; then clone(CLONE_VM | CLONE_VFORK |
// CLONE_PIDFD) runs a child that only makes raw syscalls until execve, the way posix_spawn
// works. Sharing the memory means no page tables to copy and no copy-on-write faults in
// guest-init afterwards (each fault is costly under PVM); the vfork semantics mean the parent
// resumes only once execve succeeded or the child failed, and the child's failure (which step,
// which errno) is read straight from shared memory with no pipe. CLONE_PIDFD gives a pidfd
// that turns readable when the process exits, for the exec's poll loop, at no extra syscall;
// where the kernel lacks CLONE_PIDFD (gVisor's), an eventfd the reaper signals stands in.
// The child: its own session with the pty as controlling terminal (tty) or its own process
// group (pipes); stdio on 0-2; cwd; rlimits and umask; setgroups/setgid/setuid through syscall()
// (glibc's wrappers would broadcast the change to every guest-init thread, as they share our
// memory); an empty signal mask; then execve, with a PATH search like execvp's but without its
// /bin/sh fallback. With an image root (image_root.h) the child first chroots into it (fchdir +
// chroot: the clone has no CLONE_FS, so guest-init keeps its own root), and the user is looked up
// in the image's /etc/passwd and /etc/group.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/exec.h"
#include "reaper.h"
#include "util/fd.h"

namespace space::guest {

struct Spawned {
  pid_t pid = -1;  // also the process group id
  Fd pidfd;        // readable once the process has exited
  Fd master;       // tty: the pty master, for stdin, stdout and stderr (non-blocking)
  Fd in;           // pipes: the write end of its stdin (non-blocking); invalid without stdin
  Fd out, err;     // pipes: the read ends of its stdout and stderr
};

// Why a process could not be started; becomes the Exit frame.
struct SpawnFailed {
  proto::ExitKind kind;  // NotFound or CannotExecute
  int err;
  std::string message;  // e.g. "exec nosuch: No such file or directory"
};

// The first MiB of /`path` in the root `root_fd` (-1: guest-init's own), resolved inside it;
// "" if it cannot be read.
std::string read_small_file(int root_fd, const char* path);

// Starts req's command, registering `on_exit` with `reaper` for its status. Throws SpawnFailed
// if it cannot be started (the failed child is reaped through the same callback). Entries of
// `secret_env` ("VAR=value", may be nullptr) go last into the environment; they and every copy
// made here are wiped before this returns or throws. `root_fd` (an O_PATH directory, or -1 for
// guest-init's own root) is the root the command runs in.
Spawned spawn_exec(const proto::ExecRequest& req, Reaper& reaper, Reaper::ExitFn on_exit,
                   std::vector<std::string>* secret_env = nullptr, int root_fd = -1);

}  // namespace space::guest

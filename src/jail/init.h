// The jail's PID 1. A jailed VMM starts as PID 1 of its own PID namespace and forks the real VMM;
// the parent stays behind as the namespace's init: it reaps every process of the jail (the VMM,
// and branch VMMs forked from it, which become its children when their source exits), forwards
// SIGTERM, SIGINT and SIGHUP to the VMM while it lives, and exits once the last process has
// gone, with the VMM's exit status (its code, or 128+N when signal N killed it), so whoever
// waits for the jail learns how the sandbox ended. It is the reason a branch outlives its
// source: when a PID namespace's init exits, the kernel kills everything left in it.
#pragma once
#include <sys/types.h>

namespace space::jail {

// Serves as init until no child is left; never returns. Call with the signals above blocked in
// every thread of the process (it takes them with sigtimedwait) and with `vmm` its child.
[[noreturn]] void serve_as_init(pid_t vmm);
// The exit code for a waitpid() status: the code, or 128+N for a signal N.
int exit_code_of(int status);

}  // namespace space::jail

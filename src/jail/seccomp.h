// seccomp filters for the jailed VMM, one per thread role, built with libseccomp. Every filter
// kills the whole process (SCMP_ACT_KILL_PROCESS, so the VMM dies with SIGSYS) on any system call
// it does not name, on a call from another architecture's ABI (x32, i386), and on execve and
// execveat in every role: nothing in a jail ever runs a program. The roles:
//   Vmm   the main thread: the event loop, the control socket, snapshots, building a VM (also the
//         one a branch child builds after fork(), since a branch is a whole VMM in turn, and may
//         itself be branched); installed before the guest's state is even decoded
//   Vcpu  a vCPU thread: KVM_RUN and the few calls its exit handlers make (port and MMIO devices,
//         disk reads and writes, the vector state keeper); stacked on the Vmm filter it inherits
//   Init  the jail's PID 1 (jail/init.h): wait, forward signals, exit
// clone3 fails with ENOSYS instead (glibc then uses clone, whose flags a filter can read), and
// clone may not make namespaces. socket() is AF_UNIX only. ioctl() takes only the KVM, reflink
// and block-size requests the VMM issues. The filters are compiled to BPF ahead of loading (at
// build time: jail/seccomp_prebuilt.h) and loaded with one system call, so loading needs no
// allocation (safe between fork and exec).
#pragma once
#include <linux/filter.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace space::jail {

enum class Role { Vmm, Vcpu, Init };

// "vmm", "vcpu" or "init".
const char* role_name(Role r);

// A compiled filter, ready to load.
struct Program {
  std::vector<sock_filter> code;
};

// What a filter does with a call it does not allow.
enum class Unlisted {
  Kill,  // the default: the process dies with SIGSYS
  Log,   // allowed, and logged by the kernel (audit / dmesg type=1326): for finding what a new code
         // path needs, never for production (SPACE_SECCOMP=log); execve and execveat still kill
};

// Compiles the filter for `role`. Throws Error (naming libseccomp's failure) on failure.
Program compile(Role role, Unlisted unlisted = Unlisted::Kill);
// A filter stacked on a branch child's Vmm filter: kill and tgkill reach only process `self` (the
// child's own pid, as its PID namespace numbers it) and fail with EPERM for any other, so a
// branch, which shares its source's uid and PID namespace, cannot signal its source or its
// siblings. Every other call is left to the filters below it.
Program signal_self_only(pid_t self);
// Sets no_new_privs and installs `p` on the calling thread (and its future threads). Async-
// signal-safe: no allocation. Returns 0 or an errno value.
int load(const Program& p);
// The system calls `role` allows (some only with the argument checks above), sorted by name: for
// `space check` and the docs.
std::vector<std::string> allowed_syscalls(Role role);
// Unlisted::Log when $SPACE_SECCOMP is "log", Kill when it is unset, empty or "kill"; throws on
// any other value.
Unlisted unlisted_from_env();
// What to tell the user while $SPACE_SECCOMP=log weakens every VMM's filter: `space create`
// warns with it on each VMM it starts, `space check` reports it as a problem.
constexpr const char* kSeccompLogWarning =
    "SPACE_SECCOMP=log is set: the VMM's seccomp filters log unlisted system calls instead of "
    "killing the VMM, which weakens its jail; unset SPACE_SECCOMP outside development";

}  // namespace space::jail

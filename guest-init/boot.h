// Boot steps of guest-init as PID 1, in the order main() runs them. Every step is best effort:
// a failure is logged to the console and boot goes on, because PID 1 must never give up.
// Each step costs a handful of syscalls, no fork, no exec: guest kernel time is dear on a PVM
// host (ARCHITECTURE.md, "Measurements").
#pragma once
#include <string>

#include "console.h"

namespace space::guest {

// Mounts /proc, /sys, /dev (devtmpfs), /dev/pts (devpts, ptmxmode=0666), /dev/shm, /tmp and /run;
// EBUSY (already mounted, e.g. the kernel's devtmpfs automount) counts as success.
void mount_api_filesystems(const Console& con);
// If fd 2 is closed (the kernel found no /dev/console), opens /dev/console as fds 0, 1, 2.
void ensure_stdio();
// Reads /proc/cmdline, sets the hostname from space.id (default "space"), returns it.
std::string set_hostname_from_cmdline(const Console& con);
// PATH, HOME and SHELL for every process guest-init starts.
void set_child_env();
// Sets lo up when the kernel has IPv4 (127.0.0.1 comes with it); silent if it cannot.
void bring_up_loopback();

}  // namespace space::guest

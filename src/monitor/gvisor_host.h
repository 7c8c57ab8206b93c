// The host-side steps of a gvisor monitor (monitor/gvisor_main.h), apart from its loop: the
// signals it takes through a signalfd, joining the sandbox's cgroup, a mount namespace of its own
// and the read-only loop mounts made there, and the relay of a guest connection to a helper's
// socket. Each throws Error naming the step.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <string>

#include "util/fd.h"

namespace space::monitor {

// SIGTERM, SIGINT, SIGHUP and SIGCHLD blocked and delivered through the returned signalfd.
Fd block_monitor_signals();
// Moves this process (single threaded still) into the sandbox's cgroup `rel`, which the CLI made
// with the sandbox's limits, in every hierarchy space uses; "" = none.
void join_cgroup(const std::string& rel);
// A mount namespace of our own, private from the host's: what we mount there goes with it.
// Returns the host's, to go back to once runsc's processes have taken what they need from ours
// (a copy of every host mount, other sandboxes' stores among them, would otherwise stay pinned
// for as long as the monitor lives).
Fd enter_own_mount_namespace();
// mkdir `path` unless it exists.
void make_dir(const std::string& path, mode_t mode);
// The ext4 `image` mounted read-only (no journal replay) on `target`, made if missing.
void mount_read_only(const std::string& image, const std::string& target);
// A guest connection to a helper's port relayed, on a thread of its own, to `socket`; `open`
// counts the relays running.
void forward_to_helper(Fd guest, std::string socket, std::atomic<int>& open);

}  // namespace space::monitor

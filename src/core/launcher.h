// Starting a sandbox's VMM and waiting until it is usable. The VMM is `space __vmm <id>`
// (re-executing /proc/self/exe) started as a detached daemon with the write end of a ready pipe
// as fd 3. It writes "ok\n" there once the VM runs, or "error: <message>\n" and exits. After
// that the guest is up only when guest-init answers the agent handshake on vsock port 1024.
#pragma once
#include <string>

#include "core/context.h"
#include "core/paths.h"
#include "proto/agent.h"
#include "util/fd.h"
#include "util/process.h"
#include "util/socket.h"

namespace space::core {

struct VmmLaunch {
  proc::Child child;  // killed on destruction unless released
  Fd ready;           // read end of the ready pipe (non-blocking)
};

// Starts the VMM of sandbox `id`; its stdout and stderr go to vmm.log.
VmmLaunch spawn_vmm(const Context& ctx, const SandboxPaths& p, const std::string& id);
// Reads the VMM's ready line. Throws with the VMM's own message, or if it exits without one.
void wait_vmm_ready(const Fd& ready, const net::Deadline& dl);
// Dials guest-init through vsock.sock and does the handshake, redialing every 100 ms while the
// guest boots. Throws on deadline (naming the last failure) or on a non-retryable error.
proto::HelloReply wait_guest_ready(const SandboxPaths& p, const net::Deadline& dl);
// Seconds to wait for a boot: $SPACE_BOOT_TIMEOUT, default 120. Throws if it is not a positive integer.
int boot_timeout_seconds();

}  // namespace space::core

// Starting a VMM and waiting until it is usable. The VMM is `space __vmm <id>` (re-executing
// /proc/self/exe) started as a detached daemon with the write end of a ready pipe as fd 3, and a
// fixed environment (util/env.h: nothing of the caller's). Jailed (the default,
// launch/jail_setup.h) a process cloned from the CLI becomes PID 1 of a new PID namespace, starts
// the VMM as PID 2 and stays as the jail's init (jail/init.h), holding the uid's claim; the VMM
// enters its own jail (monitor/vmm_jail.h) without forking. The VMM writes "ok\n" there once the VM
// runs, or "error: <message>\n" and exits. Which process serves the sandbox is asked of its control
// socket (SO_PEERCRED names whoever listens: the VMM, in our PID namespace). After a cold boot the
// guest is up only when guest-init answers the agent handshake on vsock port 1024; after a
// restore it is up at once (the snapshot was taken with guest-init listening).
// Also here: what a cold boot is made of (BootSpec), shared by create and template build.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "launch/jail_setup.h"
#include "proto/agent.h"
#include "store/config.h"
#include "store/context.h"
#include "store/paths.h"
#include "util/fd.h"
#include "util/process.h"
#include "util/socket.h"

namespace space::launch {

// A cold boot's VM: resolved from flags, then config.toml, then the defaults, and checked.
struct BootSpec {
  uint32_t vcpus = 1, memory_mib = 256;
  std::string kernel, rootfs_image;  // absolute; both exist
};
// Resolves and checks a BootSpec (ranges; kernel and image are regular files). Throws with a hint.
BootSpec resolve_boot_spec(const store::HostConfig& hc, std::optional<uint32_t> vcpus,
                           std::optional<uint32_t> memory_mib, const std::string& kernel_flag,
                           const std::string& rootfs_flag);

// The same for a gvisor sandbox or template: its size and rootfs (the kernel stays empty).
BootSpec resolve_gvisor_spec(const store::HostConfig& hc, std::optional<uint32_t> vcpus,
                             std::optional<uint32_t> memory_mib, const std::string& rootfs_flag);

// How a VMM starts: a cold boot of config.json or a restore; with a sandbox's paths (from its
// id) or explicit ones (a template build).
struct VmmMode {
  std::string restore_dir;        // "" = cold boot; else the directory holding memory and vmstate
  bool explicit_paths = false;    // pass p.dir and p.run_dir (--dir, --run-dir)
  std::string shared_memory_dir;  // a template dir whose memory file to map if still the same
  int64_t expires_at = 0;         // the sandbox's expiry (core/expiry.h), 0 = never
  std::string on_expiry;          // with it: "destroy" or "checkpoint"
  bool probe = false;             // a VMM that only enters its jail (launch/vmm_probe.h)
};

// The jail a VMM gets: the uid claim's key, and the cgroup (id "" = none) for a VM of this size.
struct JailRequest {
  std::string key;
  std::string cgroup_id;
  uint32_t vcpus = 1, memory_mib = 256;
};

struct VmmLaunch {
  proc::Child child;   // killed on destruction unless released: jailed, the jail's PID 1, whose
                       // SIGKILL ends every process of the jail
  Fd ready;            // read end of the ready pipe (non-blocking)
  uid_t uid = 0;       // the jail's uid, 0 = not jailed
  std::string cgroup;  // the sandbox's cgroup, "" = none (the caller removes it on failure)
};

// Throws unless the VMM's socket paths under p.run_dir fit in sun_path.
void check_socket_paths(const store::SandboxPaths& p);
// Makes p.run_dir afresh: a stale one left by a crashed VMM of the same name is removed first.
// For a jail of uid `gid` it is root's with group `gid`, mode 0710: the jailed VMM may reach the
// sockets in it and nothing else may; and the run directories' base (made mode 0700 if missing)
// must be searchable by no one else (or this throws, naming the chmod), so that ".." from a
// branch child's run directory stops there.
void make_run_dir(const store::SandboxPaths& p, gid_t gid = 0);
// Prepares the VMM's jail (jail_setup.h) as `jr` says and its run directory, and starts the VMM
// for `id`; its stdout and stderr go to p.vmm_log.
VmmLaunch launch_vmm(const store::Context& ctx, const store::HostConfig& hc,
                     const store::SandboxPaths& p, const std::string& id, const VmmMode& mode,
                     const JailRequest& jr);
// The process serving `control_sock` (in our PID namespace). Throws if none does.
pid_t served_by(const std::string& control_sock);
// Waits for a spawned VMM (`vmm`, with the ready pipe `ready`): its ready line, then, when `guest`,
// guest-init's handshake; at most `timeout_s` seconds. A signal pending on `sig` or the VMM's exit
// ends the wait with an Error saying which; on the deadline the error names the timeout.
// `who` names the process in messages ("the gvisor monitor" for that engine's).
void wait_started(proc::Child& vmm, const Fd& ready, const store::SandboxPaths& p, bool guest,
                  proc::SignalGuard& sig, int timeout_s, const std::string& who = "the VMM");
// Reads the VMM's ready line. Throws with the VMM's own message, or if it exits without one.
void wait_vmm_ready(const Fd& ready, const net::Deadline& dl, const std::string& who = "the VMM");
// Dials guest-init through vsock.sock and does the handshake, redialing every 100 ms while the
// guest boots. When the VM has an image (p.image_meta exists) the Hello says so, and guest-init
// mounts it before answering. Throws on deadline (naming the last failure) or on a non-retryable
// error.
proto::HelloReply wait_guest_ready(const store::SandboxPaths& p, const net::Deadline& dl);
// The last lines of vmm.log and console.log, to append to a failed start's message before the
// directory is deleted; "" when both are empty.
std::string log_tails(const store::SandboxPaths& p);
// Seconds to wait for a boot: $SPACE_BOOT_TIMEOUT, default 300. Throws if it is not a positive
// integer.
int boot_timeout_seconds();

}  // namespace space::launch

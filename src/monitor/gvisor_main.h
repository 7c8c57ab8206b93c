// Entry point of a gVisor sandbox's monitor (`space __gvisor ID [--restore DIR]`), the gVisor
// engine's counterpart of the VMM process: started by `create` (launch/launcher.h) and living as
// long as the sandbox, with the same two sockets in the same run directory, so everything above
// the engine (exec, cp, forward, pause/resume, stats, stop, list's liveness by pid) is shared:
//   - control.sock: the control protocol (proto/control.h); pause, resume and checkpoint are
//     runsc's, stop ends the sandbox;
//   - vsock.sock: "CONNECT 1024" clients paired with guest-init's dialled connections
//     (monitor/agent_pool.h).
// Before runsc starts, the monitor enters a mount namespace of its own and mounts the sandbox's
// root images there read-only (the rootfs space built, and a user image's disk); runsc's gofer
// and sandbox make their namespaces from it, keeping only what they serve, and the monitor then
// returns to the host's. The mounts end with the sandbox's last process, so a killed monitor
// leaks none, and no copy of another mount (another root's store) stays pinned by a monitor. It
// listens on the sandbox's host directory (<run>/gvisor/host, bound read-only into the sandbox,
// proto/agent.h) for guest-init's agent connections and forwards the credential and egress ports to
// the helpers' sockets in its run directory, as the VMM does: the helpers see the monitor's pid,
// the one state.json records, and know the sandbox by the socket. It is a child subreaper, so
// runsc's daemons are its children: stop kills them at once (runsc's own delete takes seconds) and
// the monitor exits when the sandbox ends by itself. A pool member's monitor (--pool) runs the same
// way under the pool's paths until create hands it a sandbox (control `adopt`).
#pragma once
#include <cstdint>
#include <string>

namespace space::monitor {

struct GvisorOptions {
  std::string root;         // space's root directory
  std::string id;           // the sandbox id
  int ready_fd = -1;        // "ok\n" once guest-init has dialled in, or "error: <why>\n"
  std::string restore_dir;  // restore runsc's checkpoint in this directory instead of booting
  int64_t expires_at = 0;   // Unix s of the sandbox's expiry, 0 = never
  std::string on_expiry;    // "destroy" or "checkpoint"
  std::string runsc;        // absolute path of runsc (launch/engine.h resolved it)
  std::string platform = "systrap";
  // The sandbox's cgroup ("space/ID"), made by the CLI with its memory and pids limits: the
  // monitor joins it first, so runsc's commands, sandbox and gofer are in it from birth (destroy
  // kills them all there, whatever a killed monitor left), and sets its CPU quota once the
  // sandbox runs.
  std::string cgroup;
  // A pool member of this gvisor template (core/pool.h): its files are in the pool's paths
  // (store::pool_member_paths) until `adopt` names the sandbox it becomes, whose paths create
  // has moved them to. runsc knows it by `id` for as long as it runs.
  std::string pool_template;
};

// Runs the monitor until the sandbox ends; returns the process's exit code.
int gvisor_main(const GvisorOptions& opts);

}  // namespace space::monitor

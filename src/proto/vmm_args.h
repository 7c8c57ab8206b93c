// The launch contract of the per-sandbox VMM process: what `space __vmm` is started with, typed.
// The launcher (launch/launcher.cpp) fills a VmmArgs and encodes it into the arguments that follow
// "__vmm"; the new process (cli/cmd_vmm.cpp) decodes them back into the same struct, which the
// VMM (monitor/vmm_main.h) runs with. One encoder and one decoder, so the two sides cannot drift:
// a flag one side writes and the other does not know is an error at the VMM's start, naming it.
//   ID [--ready-fd N] [--restore DIR [--shared-memory DIR]] [--dir DIR --run-dir DIR]
//      [--jail-uid U --jail-netns-fd N --jail-mntns-fd N [--jail-placed-fd N]]
//      [--expires-at S --on-expiry destroy|checkpoint] [--probe]
// Descriptors are numbers in the new process (the launcher hands them over as fds 3, 4, ...).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace space::proto {

struct VmmArgs {
  std::string id;           // the sandbox's id
  int ready_fd = -1;        // pipe to the launcher: "ok\n" once running, or "error: <msg>\n"
  std::string restore_dir;  // if set: resume the snapshot in this dir (vmstate + memory), no boot
  std::string shared_memory_dir;  // map its memory instead when its vmstate is the same snapshot
  std::string dir;                // files (config.json, logs, disk) here instead of
  std::string run_dir;            // store/sandboxes/<id>, and sockets here: both or neither
  // The jail (jail/): 0 = none. Otherwise the uid and gid to run as; the process must be in a PID
  // namespace of its own, whose PID 1 serves as the jail's init (the launcher starts it so).
  uid_t jail_uid = 0;
  // The jails' shared network namespace (jail/network.h); -1: a new one of its own.
  int jail_netns_fd = -1;
  // The jails' base mount namespace (jail/mount_base.h); -1: the jail's mount namespace is a
  // copy of the host's, pivoted (jail/root.h).
  int jail_mntns_fd = -1;
  // A pipe the jail's PID 1 writes a byte to once this VMM is in its cgroups; -1: none (no
  // cgroups). The VMM maps no guest memory before it has the byte.
  int jail_placed_fd = -1;
  int64_t expires_at = 0;  // Unix s when the sandbox expires (core/expiry.h), 0 = never
  std::string on_expiry;   // "destroy" or "checkpoint" (with expires_at)
  // Enter the jail (when jail_uid is set), report "ok" and exit, with no VM and none of its
  // files: a real VMM start that needs no KVM (launch/vmm_probe.h). Needs dir and run_dir.
  bool probe = false;
};

// The arguments that follow "__vmm" for `a`.
std::vector<std::string> encode_vmm_args(const VmmArgs& a);
// The VmmArgs `args` encode; throws ProtoError naming the first unknown flag, missing or
// malformed value, or broken pairing (--dir without --run-dir, --on-expiry without
// --expires-at, --probe without --dir).
VmmArgs decode_vmm_args(const std::vector<std::string>& args);

}  // namespace space::proto

// The OCI runtime spec (config.json) of a gVisor sandbox, as the monitor hands it to runsc. The
// root is space's rootfs, mounted read-only in the monitor's own mount namespace (an image space
// built, never written: runsc's overlay keeps the sandbox's writes), with guest-init as
// /sbin/init, run as `/sbin/init --gvisor --id ID`. The sandbox's host directory (the monitor's
// port sockets) is bind-mounted read-only at proto::kGvisorHostDir, and a user image's root, also
// read-only on the host, at proto::kGvisorImageDir, where the overlay makes it writable inside;
// the rootfs has both mount points, as runsc makes none in a read-only root. /proc, /sys, /dev,
// /dev/pts, /dev/shm, /tmp and /run are the spec's mounts, made by gVisor's own kernel. Root in
// the sandbox has the capabilities root has in a VM guest, enforced by gVisor's kernel, not the
// host's. Resources: the memory limit, which gVisor's kernel shows as the sandbox's RAM, and the
// sandbox's cgroup, which space made (runsc finds it made and joins it, setting nothing). No CPU
// quota: the monitor sets it on the group once the sandbox runs, because runsc's start, a burst
// of several threads, spent 170-270 ms throttled under a quota of one CPU (cpu.stat), about
// half of `runsc create`.
#pragma once
#include <cstdint>
#include <string>

#include "util/json.h"

namespace space::gvisor {

// Where the sandbox sees what the monitor binds in: all inside the spec's /run tmpfs, which
// gVisor's kernel makes, so no mount point is ever created in the read-only root on the host.
struct SandboxSpec {
  std::string id;                        // the sandbox id: its hostname and guest-init's --id
  std::string root;                      // host directory of the read-only rootfs
  std::string image;                     // host directory of a user image's root; "" = none
  std::string host_dir;                  // host directory of the monitor's port sockets
  uint64_t memory_bytes = 256ull << 20;  // the sandbox's RAM as gVisor's kernel shows it
  std::string cgroups_path;              // "space/ID", made by space; "" = runsc's default
};

// The config.json for `s`. Throws space::Error if a path is not absolute or the id is empty.
json::Value sandbox_spec(const SandboxSpec& s);

}  // namespace space::gvisor

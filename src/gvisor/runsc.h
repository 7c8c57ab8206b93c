// Runsc: the gVisor engine's runtime, `runsc` from bookworm-backports, driven one command at a
// time. runsc keeps no global flags between invocations (../shared/gvisor-notes.md), so every
// command line carries all of them: the sandbox's own state directory (--root, inside its run
// directory), the platform, no network (the sandbox's only way out is guest-init's proxy over
// its agent channel), an overlay for the root (writes never reach the image) and --host-uds=open
// (the sandbox may connect to the monitor's sockets bind-mounted into it, and nothing else: it
// may not listen on a host path). Each sandbox has a root of its own, so one container id per
// root and runsc's matching of ids by prefix cannot pick another sandbox's container.
#pragma once
#include <string>
#include <vector>

#include "util/process.h"

namespace space::gvisor {

struct RunscConfig {
  std::string binary;                   // absolute path of runsc
  std::string root;                     // --root: the sandbox's runsc state directory
  std::string platform = "systrap";     // --platform
  std::string overlay = "root:memory";  // --overlay2: "root:memory" or "root:dir=<abs dir>"
};

// The whole command line: binary, the global flags, then `command` (e.g. {"pause", id}).
std::vector<std::string> runsc_argv(const RunscConfig& c, const std::vector<std::string>& command);

// Runs one runsc command to completion; throws an Error naming the command and quoting the end
// of runsc's output (or, with `output_fd`, pointing there) unless it exits 0. With `output_fd`,
// runsc's stdout and stderr are that fd, which a `create` hands on to the container's process.
void run_runsc(const RunscConfig& c, const std::vector<std::string>& command, int output_fd = -1);

// The version line of `binary` ("runsc version 0.0~20240729.0"), or "" if it does not run.
std::string runsc_version(const std::string& binary);
// The release date in a version line (20240729), or 0 when it has none.
int runsc_release(const std::string& version_line);
// The oldest runsc the engine works with: Debian 12's own (20221219) lacks systrap, fails
// bookworm's ls and stat, and cannot checkpoint and keep running.
constexpr int kMinRunscRelease = 20240729;

}  // namespace space::gvisor

// A container's shim: its host process (oci/runtime.h). `create` forks one that makes the
// sandbox, copies the bundle's bind mounts in, reports to its parent and waits for `start`, then
// runs process.args in the guest; `exec` forks one per process it runs detached. Each forwards
// the signals it receives to its process (forwarded_signals), gets a pty from --console-socket
// when the process has a terminal, and exits with its process's code.
#pragma once
#include <string>
#include <vector>

#include "oci/container.h"
#include "oci/rootfs.h"
#include "oci/runtime.h"
#include "oci/spec.h"
#include "ops/exec.h"
#include "util/fd.h"

namespace space::oci {

// Signals a shim forwards to its process: every standard one it can receive and that does not
// stop, continue or concern the shim itself (SIGCHLD, SIGWINCH: a resize, SIGPIPE).
const std::vector<int>& forwarded_signals();
// A pty for a process with terminal true: the master goes to the engine over `console_socket`
// (SCM_RIGHTS, as runc sends it), the slave becomes this process's controlling terminal (so a
// resize on the master reaches us as SIGWINCH). Returns the slave. Call after setsid().
Fd console_for(const std::string& console_socket);
// What runs `p` in the container's sandbox, with its stdio a pty when `tty`.
agent::ExecOptions exec_options(const ContainerRecord& r, const Process& p, bool tty);
// Runs the exec and returns the exit code a container's process reports; errors on the way are
// printed on io.err (the container's stderr), as runc's init prints its own.
int run_process(const Runtime& rt, const ContainerRecord& r, const agent::ExecOptions& o,
                const agent::StdioFds& io);
// Reads the shim's one ready line; "" once it wrote "ok", else why it failed.
std::string read_report(const Fd& ready);
// A shim's start: its own session, out of the caller's directory, and no descriptor of the
// caller's but stdio and `keep_fd` (an engine's sync pipes held open would make it wait for us).
void detach_shim(int keep_fd);
// The network policy a container's sandbox is created with: the `space.net` annotation's, else
// "" (config.toml's default), when the bundle names a network namespace to leave from; "none"
// when it names none, whatever the annotation asks (with a warning): egress would otherwise
// leave from the host's own namespace.
std::string net_policy_for(const Spec& spec);
// The shim `create` forks: the container `req` from bundle `spec` with root filesystem `image`,
// reporting "ok" or why not on `ready`. Never returns.
[[noreturn]] void shim_main(const Runtime& rt, const CreateRequest& req, const Spec& spec,
                            const RootfsImage& image, Fd ready);

}  // namespace space::oci

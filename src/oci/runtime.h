// space as an OCI runtime: the operations behind runc's command line (cli/oci_app.cpp), as
// conmon (podman, CRI-O) and containerd's runc shim call them. A container is a space sandbox
// of the same id, restored from a template, with the bundle's root filesystem as its image disk
// (oci/rootfs.h). Its record lives in the engine's state directory (--root, default
// /run/space-oci), the sandbox in the usual space store, so one host serves both.
//
// The process model: `create` forks a shim, the container's host process, whose pid goes to
// --pid-file. The shim makes the sandbox, copies the bundle's bind-mounted files in, and waits on
// <state>/<id>/shim.sock; `start` tells it to run process.args in the guest with the stdio it
// inherited from `create` (or a pty whose master went to --console-socket). It forwards the
// signals it receives to that process and exits with its status (128+N for signal N), stopping
// the VM first. `kill` signals the shim (SIGKILL also kills the VM); `exec` runs one more
// process the same way, its own shim holding its stdio.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oci/container.h"
#include "oci/spec.h"
#include "store/context.h"
#include "util/json.h"

namespace space::oci {

// OCI status: creating, created, running, paused or stopped.
std::string container_status(const Runtime& rt, const ContainerRecord& r);

struct CreateRequest {
  std::string id, bundle, pid_file, console_socket;
};
// Makes the container; returns once its sandbox runs and the shim waits for `start`. Throws
// (nothing left behind) on a bad bundle or a sandbox that cannot be made.
void create_container(const Runtime& rt, const CreateRequest& req);
// Starts the container's process. Throws unless the container is "created".
void start_container(const Runtime& rt, const std::string& id);
// The OCI state document of container `id`.
json::Value container_state(const Runtime& rt, const std::string& id);
// Every container's state document, sorted by creation time.
std::vector<json::Value> list_containers(const Runtime& rt);
// Sends `sig` to the container's process. Throws if the container is stopped.
void kill_container(const Runtime& rt, const std::string& id, int sig, bool all);
// Removes a stopped container (with `force`, any: its process and VM are killed first).
void delete_container(const Runtime& rt, const std::string& id, bool force);
void pause_container(const Runtime& rt, const std::string& id);
void resume_container(const Runtime& rt, const std::string& id);

struct ExecRequest {
  std::string id, process_file, pid_file, console_socket;
  std::optional<json::Value> process;  // the process.json document itself, instead of a file
  bool detach = false;
  std::optional<bool> tty;  // --tty / process.terminal
};
// Runs a process from process.json in a created or running container. Detached: returns 0 once
// its shim runs (the shim's pid in pid_file). Otherwise: its exit code.
int exec_container(const Runtime& rt, const ExecRequest& req);

// `features`: what this runtime supports, as the runtime-spec's features document.
json::Value features();
// "KILL", "SIGKILL", "9" -> 9. Throws on anything else.
int parse_signal(const std::string& s);

}  // namespace space::oci

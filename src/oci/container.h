// A container of space's OCI runtime as it lies on disk (oci/runtime.h has the whole model): the
// engine's state directory (Runtime), a container's files there (its directory, its record
// state.json, the "started" marker, its shim's socket), its record and whether its shim still
// runs, and the sandbox behind it (its id, its state, stopping its VMM).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "store/context.h"
#include "store/state.h"
#include "util/json.h"

namespace space::oci {

struct Runtime {
  std::string state_root = "/run/space-oci";  // --root: the engine's state directory
  store::Context ctx;                         // the space store
};

// A container's record, <state_root>/<id>/state.json.
struct ContainerRecord {
  std::string id;
  std::string sandbox;  // its sandbox's id (sandbox_id_for)
  std::string bundle;   // absolute
  std::string rootfs;   // root.path, absolute
  std::string created;  // RFC 3339
  int pid = 0;          // the shim
  uint64_t pid_start_time = 0;
  std::string hostname;
  std::map<std::string, std::string> annotations;
};
json::Value record_json(const ContainerRecord& r);
// The annotations as a JSON object (the record's, and the OCI state document's).
json::Value annotations_json(const std::map<std::string, std::string>& m);
ContainerRecord parse_record(const json::Value& v);

// The id of container `id`'s sandbox: the id itself when it has at most kMaxSandboxIdLength
// characters, else its first 12 (the short id podman and docker show) and 8 hex digits of its
// SHA-256: engines use 64-character ids, and the sandbox's socket paths must fit sun_path.
constexpr size_t kMaxSandboxIdLength = 32;
std::string sandbox_id_for(const std::string& id);

// Throws unless `id` is a valid container id (the sandbox id rules).
void validate_container_id(const std::string& id);
// <state_root>/<id>, and in it state.json, started (once `start` ran) and shim.sock.
std::string container_dir(const Runtime& rt, const std::string& id);
std::string record_path(const Runtime& rt, const std::string& id);
std::string started_path(const Runtime& rt, const std::string& id);
std::string shim_sock(const Runtime& rt, const std::string& id);
// The record of container `id`; throws naming the container when it does not exist, or is still
// being created.
ContainerRecord read_record(const Runtime& rt, const std::string& id);
// Whether the container's shim (its host process: pid and start time) still runs.
bool shim_alive(const ContainerRecord& r);
// Sandbox `id`'s state, nullopt when it has none (gone, or unreadable, or `id` is "": a pod's
// sandbox container has no sandbox, oci/shim.h).
std::optional<store::SandboxState> sandbox_of(const Runtime& rt, const std::string& id);
// Stops the sandbox's VMM, keeping its files (delete removes them).
void stop_sandbox_vm(const Runtime& rt, const std::string& id);
// Writes `pid` to the --pid-file `path` ("" = none), atomically.
void write_pid_file(const std::string& path, pid_t pid);

}  // namespace space::oci

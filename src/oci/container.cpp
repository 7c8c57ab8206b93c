// A container's files and record; see container.h.
#include "oci/container.h"

#include "core/sandbox.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/procfs.h"
#include "util/sha256.h"

namespace space::oci {

std::string container_dir(const Runtime& rt, const std::string& id) {
  return rt.state_root + "/" + id;
}
std::string record_path(const Runtime& rt, const std::string& id) {
  return container_dir(rt, id) + "/state.json";
}
std::string started_path(const Runtime& rt, const std::string& id) {
  return container_dir(rt, id) + "/started";
}
std::string shim_sock(const Runtime& rt, const std::string& id) {
  return container_dir(rt, id) + "/shim.sock";
}

void validate_container_id(const std::string& id) {
  store::validate_id(id, "container id");
}

std::string sandbox_id_for(const std::string& id) {
  validate_container_id(id);
  if (id.size() <= kMaxSandboxIdLength) return id;
  Sha256 h;
  h.update(id);
  return id.substr(0, 12) + "-" + h.hex().substr(0, 8);
}

ContainerRecord read_record(const Runtime& rt, const std::string& id) {
  validate_container_id(id);
  if (!fs::is_dir(container_dir(rt, id)))
    fail("container " + id + " does not exist", "list containers with: space-oci list");
  if (!fs::exists(record_path(rt, id))) fail("container " + id + " is still being created");
  return json::load_file(record_path(rt, id), "container record", parse_record);
}

bool shim_alive(const ContainerRecord& r) {
  return r.pid > 0 && proc::is_alive(r.pid, r.pid_start_time);
}

std::optional<store::SandboxState> sandbox_of(const Runtime& rt, const std::string& id) {
  if (id.empty()) return std::nullopt;  // a pod's sandbox container has none (oci/shim.h)
  store::SandboxPaths p = store::sandbox_paths(rt.ctx.root, id);
  if (!fs::exists(p.state)) return std::nullopt;
  try {
    return core::sandbox_state(rt.ctx, id);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Stops the sandbox's VMM, keeping its files (delete removes them).
void stop_sandbox_vm(const Runtime& rt, const std::string& id) {
  if (auto st = sandbox_of(rt, id); st && st->pid > 0)
    core::stop_vmm(*st, store::sandbox_paths(rt.ctx.root, id), 2000);
}

void write_pid_file(const std::string& path, pid_t pid) {
  if (path.empty()) return;
  fs::write_file_atomic(fs::absolute(path), std::to_string(pid), 0644, fs::Sync::Volatile);
}

json::Value annotations_json(const std::map<std::string, std::string>& m) {
  json::Value a = json::Value::object();
  for (const auto& [k, val] : m) a.set(k, val);
  return a;
}

json::Value record_json(const ContainerRecord& r) {
  json::Value v = json::Object{{"id", r.id},
                               {"sandbox", r.sandbox},
                               {"bundle", r.bundle},
                               {"rootfs", r.rootfs},
                               {"created", r.created},
                               {"pid", r.pid},
                               {"pid_start_time", r.pid_start_time},
                               {"hostname", r.hostname},
                               {"annotations", annotations_json(r.annotations)}};
  return v;
}

ContainerRecord parse_record(const json::Value& v) {
  ContainerRecord r;
  r.id = json::string_field(v, "id");
  r.sandbox = json::string_field(v, "sandbox");
  r.bundle = json::string_field(v, "bundle");
  r.rootfs = json::string_field_or(v, "rootfs", "");
  r.created = json::string_field(v, "created");
  r.pid = static_cast<int>(json::uint_field(v, "pid", INT32_MAX));
  r.pid_start_time = json::uint_field_or(v, "pid_start_time", INT64_MAX, 0);
  r.hostname = json::string_field_or(v, "hostname", "");
  if (auto* a = v.find("annotations"); a && a->is_object())
    for (const auto& [k, val] : a->as_object())
      if (val.is_string()) r.annotations[k] = val.as_string();
  return r;
}

}  // namespace space::oci

// state.json (de)serialisation, observed liveness and the per-sandbox lock; see state.h.
#include "store/state.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "store/paths.h"
#include "util/enum_names.h"
#include "util/error.h"
#include "util/process.h"
#include "util/procfs.h"
#include "util/utc.h"

namespace space::store {

namespace {
constexpr EnumName<Status> kStatusNames[] = {
    {Status::Creating, "creating"}, {Status::Running, "running"},
    {Status::Paused, "paused"},     {Status::Checkpointed, "checkpointed"},
    {Status::Stopped, "stopped"},
};
}  // namespace

const char* status_name(Status s) {
  return name_in(kStatusNames, s, "unknown");
}

std::optional<Status> parse_status(std::string_view name) {
  return value_in(kStatusNames, name);
}

bool claims_vmm(Status s, int pid) {
  return s == Status::Running || s == Status::Paused || (s == Status::Creating && pid > 0);
}

std::string recorded_engine(const std::string& root, const std::string& id) {
  try {
    return read_state(sandbox_paths(root, id).state).engine;
  } catch (const Error&) {
    return "";
  }
}

json::Value state_to_json(const SandboxState& s) {
  auto or_null = [](const std::string& v) { return v.empty() ? json::Value() : json::Value(v); };
  json::Value v =
      json::Object{{"id", s.id},
                   {"status", status_name(s.status)},
                   {"engine", s.engine},
                   {"pid", s.pid},
                   {"pid_start_time", s.pid_start_time},
                   {"created", s.created},
                   {"template", or_null(s.template_name)},
                   {"parent", or_null(s.parent)},
                   {"image", or_null(s.image)},
                   {"vcpus", s.vcpus},
                   {"memory_mib", s.memory_mib},
                   {"uid", s.uid},
                   {"cgroup", or_null(s.cgroup)},
                   {"expires", or_null(s.expires)},
                   {"on_expiry", or_null(s.on_expiry)},
                   {"disk_limit_bytes", s.disk_limit ? json::Value(s.disk_limit) : json::Value()}};
  if (s.idle_pause_ms || s.idle_checkpoint_ms) {
    auto ms_or_null = [](uint64_t ms) { return ms ? json::Value(ms) : json::Value(); };
    json::Value idle = json::Object{{"pause_after_ms", ms_or_null(s.idle_pause_ms)},
                                    {"checkpoint_after_ms", ms_or_null(s.idle_checkpoint_ms)},
                                    {"asleep", s.idle_asleep}};
    v.set("idle", std::move(idle));
  } else {
    v.set("idle", json::Value());
  }
  json::Value ann = json::Value::object();
  for (auto& [k, val] : s.annotations) ann.set(k, val);
  v.set("annotations", std::move(ann));
  return v;
}

SandboxState state_from_json(const json::Value& v) {
  SandboxState s;
  s.id = json::string_field(v, "id");
  validate_id(s.id);
  std::string status = json::string_field(v, "status");
  auto parsed = parse_status(status);
  if (!parsed) fail("field \"status\": unknown status \"" + status + "\"");
  s.status = *parsed;
  s.engine = json::string_field_or(v, "engine", "vm");  // records older than engines: a VM
  if (s.engine != "vm" && s.engine != "gvisor")
    fail("field \"engine\": \"" + s.engine + "\" is neither vm nor gvisor");
  s.pid = static_cast<int>(json::uint_field_or(v, "pid", INT32_MAX, 0));
  s.pid_start_time = json::uint_field_or(v, "pid_start_time", INT64_MAX, 0);
  s.created = json::string_field_or(v, "created", "");
  s.template_name = json::string_field_or(v, "template", "");
  s.parent = json::string_field_or(v, "parent", "");
  s.image = json::string_field_or(v, "image", "");
  s.vcpus = static_cast<uint32_t>(json::uint_field_or(v, "vcpus", UINT32_MAX, 1));
  s.memory_mib = static_cast<uint32_t>(json::uint_field_or(v, "memory_mib", UINT32_MAX, 256));
  s.uid = static_cast<uint32_t>(json::uint_field_or(v, "uid", UINT32_MAX, 0));
  s.cgroup = json::string_field_or(v, "cgroup", "");
  s.expires = json::string_field_or(v, "expires", "");
  if (!s.expires.empty() && !parse_rfc3339(s.expires))
    fail("field \"expires\": \"" + s.expires + "\" is not an RFC 3339 UTC time");
  s.on_expiry = json::string_field_or(v, "on_expiry", "");
  if (const json::Value* d = v.find("disk_limit_bytes"); d && !d->is_null())
    s.disk_limit = json::uint_field(v, "disk_limit_bytes");
  if (!s.on_expiry.empty() && s.on_expiry != "destroy" && s.on_expiry != "checkpoint")
    fail("field \"on_expiry\": \"" + s.on_expiry + "\" is neither destroy nor checkpoint");
  if (const json::Value* idle = v.find("idle"); idle && !idle->is_null()) {
    if (!idle->is_object()) fail("field \"idle\": expected an object or null");
    auto ms = [&](const char* key) -> uint64_t {
      const json::Value* f = idle->find(key);
      if (!f || f->is_null()) return 0;
      return json::uint_field(*idle, key);
    };
    s.idle_pause_ms = ms("pause_after_ms");
    s.idle_checkpoint_ms = ms("checkpoint_after_ms");
    if (const json::Value* a = idle->find("asleep"); a && !a->is_null()) {
      if (!a->is_bool()) fail("field \"idle.asleep\": expected true or false");
      s.idle_asleep = a->as_bool();
    }
  }
  if (const json::Value* ann = v.find("annotations"); ann && !ann->is_null()) {
    if (!ann->is_object()) fail("field \"annotations\": expected an object");
    for (auto& [k, val] : ann->as_object()) {
      if (!val.is_string()) fail("field \"annotations\": value of \"" + k + "\" is not a string");
      s.annotations[k] = val.as_string();
    }
  }
  return s;
}

SandboxState read_state(const std::string& path) {
  return json::load_file(path, "sandbox state", state_from_json);
}

void write_state(const std::string& path, const SandboxState& s, fs::Sync sync) {
  json::save_file(path, state_to_json(s), 0644, sync);
}

Status observed_status(const SandboxState& s) {
  if (claims_vmm(s.status, s.pid) && !proc::is_alive(s.pid, s.pid_start_time))
    return Status::Stopped;
  return s.status;
}

std::string rfc3339_now() {
  return rfc3339(::time(nullptr));
}

std::optional<int64_t> parse_rfc3339(std::string_view text) {
  return utc::parse(text);
}

std::string rfc3339(int64_t unix_s) {
  return utc::rfc3339(unix_s);
}

SandboxLock::SandboxLock(const std::string& lock_path, bool nonblocking, LockFile file) {
  const int create = file == LockFile::Create ? O_CREAT : 0;
  Fd fd(::open(lock_path.c_str(), O_RDWR | create | O_CLOEXEC, 0600));
  if (!fd) {
    if (errno == ENOENT && (nonblocking || file == LockFile::Existing)) {
      missing_ = true;
      return;
    }
    throw_errno("open sandbox lock " + lock_path);
  }
  for (;;) {
    if (::flock(fd.get(), LOCK_EX | (nonblocking ? LOCK_NB : 0)) == 0) break;
    if (errno == EINTR) continue;
    if (nonblocking && errno == EWOULDBLOCK) return;
    throw_errno("lock " + lock_path);
  }
  fd_ = std::move(fd);
}

std::string vmm_peer_problem(const std::string& root, const std::string& id, int pid,
                             std::string* engine) {
  SandboxState st;
  try {
    st = read_state(sandbox_paths(root, id).state);
  } catch (const Error& e) {
    return std::string("the sandbox's state cannot be read: ") + e.what();
  }
  if (engine) *engine = st.engine;
  if (st.pid <= 0) return "sandbox " + id + " has no running VMM";
  if (pid != st.pid)
    return "the connection comes from pid " + std::to_string(pid) + ", not from the VMM of " + id +
           " (pid " + std::to_string(st.pid) + ")";
  if (!proc::is_alive(st.pid, st.pid_start_time))
    return "pid " + std::to_string(pid) + " is not the process recorded as the VMM of " + id;
  return "";
}

}  // namespace space::store

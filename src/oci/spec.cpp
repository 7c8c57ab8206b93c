// Parsing config.json and process.json (oci/spec.h). Only the members space uses are checked for
// type; unknown members are ignored, as the runtime spec asks of a runtime.
#include "oci/spec.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include "util/error.h"
#include "util/fs.h"

namespace space::oci {
namespace {

// An absolute mount destination with empty and "." components dropped ("//proc/./x" -> "/proc/x",
// so the checks by prefix see it as it is). A ".." component is refused: it would climb out of
// wherever the destination is applied, and on the host that is the staging directory.
std::string clean_destination(const std::string& d, const std::string& where) {
  std::string out;
  size_t i = 0;
  while (i <= d.size()) {
    size_t j = d.find('/', i);
    if (j == std::string::npos) j = d.size();
    std::string_view c(d.data() + i, j - i);
    if (c == "..")
      fail(where + ": \"" + d + "\" has a '..' component",
           "name the path inside the container without '..'");
    if (!c.empty() && c != ".") out.append("/").append(c);
    i = j + 1;
  }
  return out.empty() ? "/" : out;
}

const json::Value* member(const json::Value& obj, std::string_view key) {
  const json::Value* v = obj.find(key);
  return v && !v->is_null() ? v : nullptr;
}

std::string str(const json::Value& v, const std::string& where) {
  if (!v.is_string()) fail(where + ": expected a string, got " + json::kind_name(v.kind()));
  return v.as_string();
}

std::vector<std::string> strings(const json::Value& v, const std::string& where) {
  if (!v.is_array())
    fail(where + ": expected an array of strings, got " + json::kind_name(v.kind()));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.as_array().size(); i++)
    out.push_back(str(v.as_array()[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

uint64_t unsigned_of(const json::Value& v, const std::string& where, uint64_t max) {
  if (!v.is_int() || v.as_int() < 0 || static_cast<uint64_t>(v.as_int()) > max)
    fail(where + ": expected an integer from 0 to " + std::to_string(max));
  return static_cast<uint64_t>(v.as_int());
}

const json::Value& object_at(const json::Value& obj, std::string_view key,
                             const std::string& where) {
  const json::Value* v = member(obj, key);
  if (!v) fail(where + ": " + std::string(key) + ": missing");
  if (!v->is_object()) fail(where + ": " + std::string(key) + ": expected an object");
  return *v;
}

}  // namespace

bool Mount::is_bind() const {
  if (type == "bind") return true;
  for (const auto& o : options)
    if (o == "bind" || o == "rbind") return true;
  return false;
}

bool Mount::read_only() const {
  for (const auto& o : options)
    if (o == "ro") return true;
  return false;
}

bool is_pod_sandbox(const Spec& spec) {
  for (const char* key : {"io.kubernetes.cri.container-type", "io.kubernetes.cri-o.ContainerType"})
    if (auto a = spec.annotations.find(key); a != spec.annotations.end() && a->second == "sandbox")
      return true;
  return false;
}

bool mount_copied_in(const Mount& m) {
  if (!m.is_bind()) return false;
  if (m.destination == "/etc/hosts" || m.destination == "/etc/hostname") return false;
  for (const char* p : {"/proc", "/sys", "/dev"}) {
    std::string_view d = m.destination, top = p;
    if (d == top || (d.starts_with(top) && d.size() > top.size() && d[top.size()] == '/'))
      return false;
  }
  return true;
}

Process parse_process(const json::Value& v, const std::string& where) {
  if (!v.is_object()) fail(where + ": expected an object");
  Process p;
  if (auto* t = member(v, "terminal")) {
    if (!t->is_bool()) fail(where + ".terminal: expected true or false");
    p.terminal = t->as_bool();
  }
  const json::Value* args = member(v, "args");
  if (!args) fail(where + ".args: missing", "name the command to run, e.g. \"args\": [\"sh\"]");
  p.args = strings(*args, where + ".args");
  if (p.args.empty() || p.args[0].empty()) fail(where + ".args: empty: there is no command to run");
  if (auto* e = member(v, "env")) p.env = strings(*e, where + ".env");
  for (const auto& kv : p.env)
    if (kv.find('=') == std::string::npos || kv[0] == '=')
      fail(where + ".env: \"" + kv + "\" is not NAME=VALUE");
  if (auto* c = member(v, "cwd")) p.cwd = str(*c, where + ".cwd");
  if (p.cwd.empty() || p.cwd[0] != '/')
    fail(where + ".cwd: \"" + p.cwd + "\" is not an absolute path");
  if (auto* u = member(v, "user")) {
    if (!u->is_object()) fail(where + ".user: expected an object");
    if (auto* x = member(*u, "uid"))
      p.uid = static_cast<uint32_t>(unsigned_of(*x, where + ".user.uid", UINT32_MAX - 1));
    if (auto* x = member(*u, "gid"))
      p.gid = static_cast<uint32_t>(unsigned_of(*x, where + ".user.gid", UINT32_MAX - 1));
    if (auto* x = member(*u, "umask"))
      p.umask = static_cast<uint32_t>(unsigned_of(*x, where + ".user.umask", 0777));
    if (auto* g = member(*u, "additionalGids")) {
      if (!g->is_array()) fail(where + ".user.additionalGids: expected an array");
      for (const auto& x : g->as_array())
        p.additional_gids.push_back(
            static_cast<uint32_t>(unsigned_of(x, where + ".user.additionalGids", UINT32_MAX - 1)));
    }
  }
  if (auto* rl = member(v, "rlimits")) {
    if (!rl->is_array()) fail(where + ".rlimits: expected an array");
    static const std::pair<const char*, int> kNames[] = {
        {"RLIMIT_CPU", RLIMIT_CPU},           {"RLIMIT_FSIZE", RLIMIT_FSIZE},
        {"RLIMIT_DATA", RLIMIT_DATA},         {"RLIMIT_STACK", RLIMIT_STACK},
        {"RLIMIT_CORE", RLIMIT_CORE},         {"RLIMIT_RSS", RLIMIT_RSS},
        {"RLIMIT_NPROC", RLIMIT_NPROC},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
        {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},   {"RLIMIT_AS", RLIMIT_AS},
        {"RLIMIT_LOCKS", RLIMIT_LOCKS},       {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
        {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
        {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},     {"RLIMIT_RTTIME", RLIMIT_RTTIME}};
    for (size_t i = 0; i < rl->as_array().size(); i++) {
      const auto& e = rl->as_array()[i];
      std::string at = where + ".rlimits[" + std::to_string(i) + "]";
      if (!e.is_object()) fail(at + ": expected an object");
      const json::Value* t = member(e, "type");
      if (!t) fail(at + ".type: missing");
      std::string type = str(*t, at + ".type");
      Process::Rlimit r;
      bool known = false;
      for (const auto& [name, res] : kNames)
        if (type == name) {
          r.resource = static_cast<uint32_t>(res);
          known = true;
        }
      if (!known) fail(at + ".type: unknown resource \"" + type + "\"");
      for (const auto& o : p.rlimits)
        if (o.resource == r.resource) fail(at + ": " + type + " is given twice");
      const json::Value* soft = member(e, "soft");
      const json::Value* hard = member(e, "hard");
      if (!soft || !hard) fail(at + ": soft and hard are both required");
      auto value = [&](const json::Value& x, const char* k) -> uint64_t {
        if (x.is_int() && x.as_int() >= 0) return static_cast<uint64_t>(x.as_int());
        // 2^64-1 (RLIM_INFINITY) does not fit an int64: JSON parsers hand it over as a double.
        if (x.is_number() && x.as_double() >= 1.8e19) return UINT64_MAX;
        fail(at + "." + k + ": expected a non-negative integer");
      };
      r.soft = value(*soft, "soft");
      r.hard = value(*hard, "hard");
      if (r.soft > r.hard) fail(at + ": soft is above hard");
      p.rlimits.push_back(r);
    }
  }
  return p;
}

namespace {

// root: its path (relative to the bundle, or absolute), a directory already, and readonly.
void parse_root(const json::Value& v, const std::string& bundle_dir, Spec& s) {
  const json::Value& root = object_at(v, "root", "config.json");
  const json::Value* path = member(root, "path");
  if (!path) fail("config.json: root.path: missing");
  s.root_path = str(*path, "config.json: root.path");
  if (s.root_path.empty()) fail("config.json: root.path: empty");
  if (s.root_path[0] != '/') s.root_path = bundle_dir + "/" + s.root_path;
  if (!fs::is_dir(s.root_path))
    fail("config.json: root.path: " + s.root_path + " is not a directory",
         "the bundle's root filesystem must be prepared before create");
  if (auto* ro = member(root, "readonly")) {
    if (!ro->is_bool()) fail("config.json: root.readonly: expected true or false");
    s.root_readonly = ro->as_bool();
  }
}

// mounts: each destination absolute and cleaned; a bind's relative source is the bundle's.
void parse_mounts(const json::Value* ms, const std::string& bundle_dir, Spec& s) {
  if (!ms->is_array()) fail("config.json: mounts: expected an array");
  for (size_t i = 0; i < ms->as_array().size(); i++) {
    const auto& m = ms->as_array()[i];
    std::string where = "config.json: mounts[" + std::to_string(i) + "]";
    if (!m.is_object()) fail(where + ": expected an object");
    Mount mt;
    const json::Value* d = member(m, "destination");
    if (!d) fail(where + ".destination: missing");
    mt.destination = str(*d, where + ".destination");
    if (mt.destination.empty() || mt.destination[0] != '/')
      fail(where + ".destination: \"" + mt.destination + "\" is not an absolute path");
    mt.destination = clean_destination(mt.destination, where + ".destination");
    if (auto* t = member(m, "type")) mt.type = str(*t, where + ".type");
    if (auto* src = member(m, "source")) mt.source = str(*src, where + ".source");
    if (auto* o = member(m, "options")) mt.options = strings(*o, where + ".options");
    if (mt.is_bind() && !mt.source.empty() && mt.source[0] != '/')
      mt.source = bundle_dir + "/" + mt.source;
    s.mounts.push_back(std::move(mt));
  }
}

// linux: the memory limit, the CPU quota and period, and the network namespace.
void parse_linux(const json::Value* lx, Spec& s) {
  if (!lx->is_object()) fail("config.json: linux: expected an object");
  if (auto* r = member(*lx, "resources")) {
    if (!r->is_object()) fail("config.json: linux.resources: expected an object");
    if (auto* m = member(*r, "memory")) {
      if (auto* l = member(*m, "limit")) {
        if (!l->is_int()) fail("config.json: linux.resources.memory.limit: expected an integer");
        if (l->as_int() > 0) s.memory_limit = static_cast<uint64_t>(l->as_int());
      }
    }
    if (auto* c = member(*r, "cpu")) {
      if (auto* q = member(*c, "quota"); q && q->is_int() && q->as_int() > 0)
        s.cpu_quota = static_cast<uint64_t>(q->as_int());
      if (auto* p = member(*c, "period"))
        s.cpu_period = unsigned_of(*p, "config.json: linux.resources.cpu.period", UINT32_MAX);
    }
  }
  if (auto* ns = member(*lx, "namespaces")) {
    if (!ns->is_array()) fail("config.json: linux.namespaces: expected an array");
    for (const auto& n : ns->as_array()) {
      if (!n.is_object()) fail("config.json: linux.namespaces: expected objects");
      if (string_field_or(n, "type", "") != "network") continue;
      s.netns_path = string_field_or(n, "path", "");
      s.new_netns = s.netns_path.empty();
    }
  }
}

}  // namespace

Spec parse_spec(std::string_view text, const std::string& bundle_dir) {
  json::Value v;
  try {
    v = json::parse(text);
  } catch (Error& e) {
    e.add_context("config.json");
    throw;
  }
  if (!v.is_object()) fail("config.json: expected an object");
  Spec s;
  const json::Value* ver = member(v, "ociVersion");
  if (!ver)
    fail("config.json: ociVersion: missing", "a bundle's config.json names its spec version");
  s.oci_version = str(*ver, "config.json: ociVersion");
  const json::Value* proc = member(v, "process");
  if (!proc) fail("config.json: process: missing", "space runs one process per container: give it");
  s.process = parse_process(*proc, "config.json: process");
  parse_root(v, bundle_dir, s);
  if (auto* h = member(v, "hostname")) s.hostname = str(*h, "config.json: hostname");
  if (auto* ms = member(v, "mounts")) parse_mounts(ms, bundle_dir, s);
  if (auto* a = member(v, "annotations")) {
    if (!a->is_object()) fail("config.json: annotations: expected an object");
    for (const auto& [k, val] : a->as_object())
      s.annotations[k] = str(val, "config.json: annotations." + k);
  }
  if (auto* lx = member(v, "linux")) parse_linux(lx, s);
  return s;
}

Spec load_spec(const std::string& bundle_dir) {
  std::string dir = fs::absolute(bundle_dir);
  std::string text;
  try {
    text = fs::read_file(dir + "/config.json", 4u << 20);
  } catch (Error& e) {
    e.add_context("bundle " + dir);
    throw;
  }
  return parse_spec(text, dir);
}

}  // namespace space::oci

// The OCI spec of a gVisor sandbox; see spec.h.
#include "gvisor/spec.h"

#include "proto/agent.h"
#include "util/error.h"

namespace space::gvisor {
namespace {

json::Value strings(std::initializer_list<const char*> list) {
  json::Value a = json::Value::array();
  for (const char* s : list) a.push_back(s);
  return a;
}

json::Value mount(const char* dest, const char* type, const std::string& source,
                  std::initializer_list<const char*> options) {
  json::Value m = json::Object{{"destination", dest}, {"type", type}, {"source", source}};
  if (options.size()) m.set("options", strings(options));
  return m;
}

void check_path(const std::string& p, const char* what) {
  if (p.empty() || p[0] != '/')
    fail(std::string("gvisor spec: ") + what + " '" + p + "' is not absolute");
}

// guest-init as PID 1, root with the capabilities root has in a VM guest (gVisor's kernel is
// what enforces them).
json::Value init_process(const std::string& id) {
  json::Value caps = strings({"CAP_CHOWN",           "CAP_DAC_OVERRIDE",
                              "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
                              "CAP_FSETID",          "CAP_KILL",
                              "CAP_SETGID",          "CAP_SETUID",
                              "CAP_SETPCAP",         "CAP_NET_BIND_SERVICE",
                              "CAP_NET_RAW",         "CAP_NET_ADMIN",
                              "CAP_SYS_CHROOT",      "CAP_SYS_PTRACE",
                              "CAP_SYS_ADMIN",       "CAP_MKNOD",
                              "CAP_AUDIT_WRITE",     "CAP_SETFCAP",
                              "CAP_SYS_RESOURCE",    "CAP_SYS_NICE",
                              "CAP_IPC_LOCK"});
  json::Value capabilities = json::Value::object();
  for (const char* set : {"bounding", "effective", "permitted", "inheritable"})
    capabilities.set(set, caps);

  json::Value nofile = json::Object{{"type", "RLIMIT_NOFILE"}, {"hard", 65536}, {"soft", 65536}};

  json::Value user = json::Value::object();
  user.set("uid", 0);
  user.set("gid", 0);

  json::Value process =
      json::Object{{"terminal", false},
                   {"user", user},
                   {"args", json::Value(json::Array{"/sbin/init", "--gvisor", "--id", id})}};
  process.set("env",
              strings({"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}));
  process.set("cwd", "/");
  process.set("capabilities", capabilities);
  process.set("rlimits", json::Value(json::Array{nofile}));

  return process;
}

// The kernel's filesystems, tmpfs where a guest has them, and the host directory (and image)
// bound in.
json::Value sandbox_mounts(const SandboxSpec& s) {
  json::Value mounts = json::Value::array();
  mounts.push_back(mount("/proc", "proc", "proc", {}));
  mounts.push_back(mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755"}));
  mounts.push_back(mount("/dev/pts", "devpts", "devpts",
                         {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}));
  mounts.push_back(mount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777"}));
  mounts.push_back(mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}));
  mounts.push_back(mount("/tmp", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=1777"}));
  mounts.push_back(mount("/run", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=755"}));
  mounts.push_back(mount(proto::kGvisorHostDir, "bind", s.host_dir, {"bind", "ro"}));
  if (!s.image.empty()) mounts.push_back(mount(proto::kGvisorImageDir, "bind", s.image, {"bind"}));

  return mounts;
}

// Its own namespaces, the memory limit and, when given, the cgroup.
json::Value sandbox_linux(const SandboxSpec& s) {
  json::Value namespaces = json::Value::array();
  for (const char* ns : {"pid", "network", "ipc", "uts", "mount"}) {
    json::Value n = json::Value::object();
    n.set("type", ns);
    namespaces.push_back(n);
  }
  json::Value memory = json::Value::object();
  memory.set("limit", s.memory_bytes);
  json::Value resources = json::Value::object();
  resources.set("memory", memory);
  json::Value linux = json::Value::object();
  linux.set("namespaces", namespaces);
  linux.set("resources", resources);
  if (!s.cgroups_path.empty()) linux.set("cgroupsPath", "/" + s.cgroups_path);

  return linux;
}

}  // namespace

json::Value sandbox_spec(const SandboxSpec& s) {
  if (s.id.empty()) fail("gvisor spec: no sandbox id");
  check_path(s.root, "root");
  check_path(s.host_dir, "host directory");
  if (!s.image.empty()) check_path(s.image, "image");

  json::Value root = json::Value::object();
  root.set("path", s.root);
  // Writable inside: runsc's overlay takes the writes. On the host the directory is a read-only
  // mount, so nothing the sandbox does reaches the image.
  root.set("readonly", false);

  json::Value spec = json::Object{
      {"ociVersion", "1.0.2"}, {"process", init_process(s.id)}, {"root", root},
      {"hostname", s.id},      {"mounts", sandbox_mounts(s)},   {"linux", sandbox_linux(s)}};
  return spec;
}

}  // namespace space::gvisor

// The OCI runtime spec as space reads it: a bundle's config.json (for `create`) and a process.json
// (for `exec --process`), parsed strictly into the few fields a microVM can honour. Everything
// else in the file (namespaces, seccomp, capabilities, masked paths, devices) describes a Linux
// container and is accepted and ignored: the VM boundary replaces it. Errors name the field
// ("config.json: process.args: ...") so an engine's user sees what was wrong.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace space::oci {

// The OCI runtime-spec version space implements.
constexpr const char* kSpecVersion = "1.0.2";

struct Process {
  bool terminal = false;
  std::vector<std::string> args;  // never empty
  std::vector<std::string> env;   // "K=V"
  std::string cwd = "/";          // absolute
  uint32_t uid = 0, gid = 0;
  std::vector<uint32_t> additional_gids;
  std::optional<uint32_t> umask;
  struct Rlimit {
    uint32_t resource = 0;  // RLIMIT_NOFILE ...
    uint64_t soft = 0, hard = 0;
  };
  std::vector<Rlimit> rlimits;  // process.rlimits: {"type": "RLIMIT_NOFILE", "soft", "hard"}
};

struct Mount {
  std::string destination;  // absolute, in the container
  std::string type;         // "" for a bind mount written without a type
  std::string source;       // absolute on the host for bind mounts
  std::vector<std::string> options;
  bool is_bind() const;    // type "bind" or a "bind"/"rbind" option
  bool read_only() const;  // an "ro" option
};

struct Spec {
  std::string oci_version;
  Process process;
  std::string root_path;  // absolute (a relative root.path is resolved against the bundle)
  bool root_readonly = false;
  std::string hostname;
  std::vector<Mount> mounts;
  std::map<std::string, std::string> annotations;
  std::optional<uint64_t> memory_limit;  // linux.resources.memory.limit, bytes
  std::optional<uint64_t> cpu_quota, cpu_period;
  std::string netns_path;  // linux.namespaces' network entry with a path; "" = none given
  bool new_netns = false;  // a network namespace entry without a path (a new, empty one)
};

// Parses the process object `v` (of config.json or a process.json); `where` prefixes errors.
Process parse_process(const json::Value& v, const std::string& where);
// Parses config.json text of the bundle in `bundle_dir` (absolute). Throws space::Error naming the
// field on a missing or mistyped member; root.path must name a directory.
Spec parse_spec(std::string_view text, const std::string& bundle_dir);
// Reads and parses <bundle_dir>/config.json.
Spec load_spec(const std::string& bundle_dir);

// The mounts whose content must be copied into the container's disk: bind mounts of files and
// directories, except those below /proc, /sys and /dev, which the guest provides itself, and
// /etc/hosts and /etc/hostname, which guest-init writes from the hostname (localhost and the
// container's own name: the guest has no network interface for an engine's entries to name).
bool mount_copied_in(const Mount& m);

// Whether the bundle is a Kubernetes pod's sandbox ("pause") container, as the CRI annotates it
// (containerd: io.kubernetes.cri.container-type, CRI-O: io.kubernetes.cri-o.ContainerType, both
// "sandbox"). space runs no sandbox for it (oci/shim.h).
bool is_pod_sandbox(const Spec& spec);

}  // namespace space::oci

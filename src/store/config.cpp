// config.toml parsing with toml++; see config.h. Every key is checked against a fixed list so a
// typo is reported rather than silently ignored.
#include "store/config.h"

#include <toml++/toml.h>

#include <cstdlib>

#include "store/paths.h"
#include "store/toml_fields.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fs.h"

namespace space::store {

std::string host_config_path(const std::string& root) {
  return fs::absolute(root) + "/config.toml";
}

HostConfig parse_host_config(std::string_view text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    fail(source + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " +
         std::string(e.description()));
  }
  const TomlFields f{source, "see space(1), section FILES, for the config.toml keys"};
  HostConfig c;
  for (auto&& [tkey, tnode] : doc) {
    std::string table(tkey.str());
    const toml::table* t = tnode.as_table();
    if (!t)
      f.bad(table,
            "expected a table ([defaults], [store], [cp], [net], [egress], [jail] or [engine])");
    if (table != "defaults" && table != "store" && table != "cp" && table != "net" &&
        table != "egress" && table != "jail" && table != "engine")
      f.bad("[" + table + "]", "unknown table");
    for (auto&& [k, n] : *t) {
      std::string key(k.str());
      std::string full = table + "." + key;
      if (table == "defaults" && key == "cpus") {
        c.cpus = f.uint(n, full, 1, kMaxCpus);
      } else if (table == "defaults" && key == "memory_mib") {
        c.memory_mib = f.uint(n, full, kMinMemoryMib, kMaxMemoryMib);
      } else if (table == "defaults" && key == "kernel") {
        c.kernel = f.path(n, full);
      } else if (table == "defaults" && key == "rootfs") {
        c.rootfs = f.path(n, full);
      } else if (table == "defaults" && key == "template") {
        auto v = n.value_exact<std::string>();
        if (!v) f.bad(full, "expected a string");
        try {
          validate_id(*v, "template name");
        } catch (const Error& e) {
          f.bad(full, e.what());
        }
        c.default_template = *v;
      } else if (table == "defaults" && (key == "idle_pause" || key == "idle_checkpoint")) {
        std::string v = f.str(n, full);
        uint64_t ms = 0;
        try {
          if (v != "off") ms = parse_duration_ms(v, key + " = ");
        } catch (const Error& e) {
          f.bad(full, std::string(e.what()) + " (or \"off\")");
        }
        (key == "idle_pause" ? c.idle_pause_ms : c.idle_checkpoint_ms) = ms;
      } else if (table == "engine" && key == "default") {
        c.engine_default = f.str(n, full);
        if (c.engine_default != "vm" && c.engine_default != "gvisor")
          f.bad(full, "expected \"vm\" or \"gvisor\"");
      } else if (table == "engine" && key == "gvisor") {
        const toml::table* g = n.as_table();
        if (!g) f.bad(full, "expected a table ([engine.gvisor])");
        for (auto&& [gk, gn] : *g) {
          std::string gkey(gk.str());
          std::string gfull = full + "." + gkey;
          if (gkey == "runsc") {
            c.gvisor_runsc = f.path(gn, gfull);
          } else if (gkey == "platform") {
            c.gvisor_platform = f.str(gn, gfull);
            if (c.gvisor_platform != "systrap" && c.gvisor_platform != "ptrace" &&
                c.gvisor_platform != "kvm")
              f.bad(gfull, "expected \"systrap\", \"ptrace\" or \"kvm\"");
          } else if (gkey == "pool") {
            c.gvisor_pool = f.uint(gn, gfull, 0, kMaxPool);
          } else {
            f.bad(gfull, "unknown key");
          }
        }
      } else if (table == "store" && key == "size_gib") {
        c.store_size_gib = f.uint(n, full, 1, 1u << 16);
      } else if (table == "cp" && key == "max_size_mib") {
        c.cp_max_size_mib = f.uint(n, full, 0, 1u << 30);
      } else if (table == "net" && key == "allow") {
        const toml::array* a = n.as_array();
        if (!a) f.bad(full, "expected an array of rule strings");
        for (auto&& item : *a) {
          auto v = item.value_exact<std::string>();
          if (!v) f.bad(full, "expected an array of rule strings");
          c.net_allow.push_back(*v);
        }
      } else if (table == "net" && key == "max_connections") {
        c.net_max_connections = f.uint(n, full, 1, 4096);
      } else if (table == "net" && key == "audit_max_mib") {
        c.net_audit_max_mib = f.uint(n, full, 1, 4096);
      } else if (table == "egress" && key == "ca_file") {
        c.egress_ca_file = f.str(n, full);
        if (c.egress_ca_file.empty() || c.egress_ca_file[0] != '/')
          f.bad(full, "expected an absolute path of a PEM file of CA certificates");
      } else if (table == "jail" && key == "enable") {
        c.jail_enable = f.boolean(n, full);
      } else if (table == "jail" && key == "uid_first") {
        c.jail_uid_first = f.uint(n, full, 1000, 0x7fffffffu);
      } else if (table == "jail" && key == "uid_count") {
        c.jail_uid_count = f.uint(n, full, 1, 0x7fffffffu);
      } else if (table == "jail" && key == "cgroups") {
        c.jail_cgroups = f.boolean(n, full);
      } else if (table == "jail" && key == "cgroup_parent") {
        std::string v = f.str(n, full);
        if (v.front() == '/' || v.back() == '/' || v.find("..") != std::string::npos ||
            v.find("//") != std::string::npos)
          f.bad(full, "expected a relative cgroup path such as \"space\"");
        c.jail_cgroup_parent = v;
      } else if (table == "jail" && key == "memory_overhead_mib") {
        c.jail_memory_overhead_mib = f.uint(n, full, 16, 1u << 16);
      } else {
        f.bad(full, "unknown key");
      }
    }
  }
  if (uint64_t(c.jail_uid_first) + c.jail_uid_count > 0x80000000ull)
    f.bad("jail.uid_count", "uid_first + uid_count must stay below 2^31");
  return c;
}

std::string cache_dir() {
  const char* env = std::getenv("SPACE_CACHE");
  return env && *env ? fs::absolute(env) : "/var/cache/space";
}

std::string resolve_kernel(const HostConfig& c, const std::string& flag) {
  if (!flag.empty()) return fs::absolute(flag);
  if (!c.kernel.empty()) return c.kernel;
  return cache_dir() + "/kernel/current/vmlinux";
}

std::string resolve_rootfs(const HostConfig& c, const std::string& flag) {
  if (!flag.empty()) return fs::absolute(flag);
  if (!c.rootfs.empty()) return c.rootfs;
  return cache_dir() + "/rootfs/current/rootfs.ext4";
}

HostConfig load_host_config(const std::string& root) {
  std::string path = host_config_path(root);
  if (!fs::exists(path)) return {};
  return parse_host_config(fs::read_file(path, 1u << 20), path);
}

}  // namespace space::store

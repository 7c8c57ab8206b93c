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
#include "util/size.h"

namespace space::store {

std::string host_config_path(const std::string& root) {
  return fs::absolute(root) + "/config.toml";
}

namespace {

// One key of a table: `key` of table [TABLE] is `n`, named `full` ("table.key") in errors.
using KeyParser = void (*)(const TomlFields& f, const std::string& key, const std::string& full,
                           const toml::node& n, HostConfig& c);

void parse_defaults(const TomlFields& f, const std::string& key, const std::string& full,
                    const toml::node& n, HostConfig& c) {
  if (key == "cpus") {
    c.cpus = f.uint(n, full, 1, kMaxCpus);
  } else if (key == "memory_mib") {
    c.memory_mib = f.uint(n, full, kMinMemoryMib, kMaxMemoryMib);
  } else if (key == "kernel") {
    c.kernel = f.path(n, full);
  } else if (key == "rootfs") {
    c.rootfs = f.path(n, full);
  } else if (key == "template") {
    auto v = n.value_exact<std::string>();
    if (!v) f.bad(full, "expected a string");
    try {
      validate_id(*v, "template name");
    } catch (const Error& e) {
      f.bad(full, e.what());
    }
    c.default_template = *v;
  } else if (key == "idle_pause" || key == "idle_checkpoint") {
    std::string v = f.str(n, full);
    uint64_t ms = 0;
    try {
      if (v != "off") ms = parse_duration_ms(v, key + " = ");
    } catch (const Error& e) {
      f.bad(full, std::string(e.what()) + " (or \"off\")");
    }
    (key == "idle_pause" ? c.idle_pause_ms : c.idle_checkpoint_ms) = ms;
  } else {
    f.bad(full, "unknown key");
  }
}

void parse_gvisor(const TomlFields& f, const std::string& full, const toml::node& n,
                  HostConfig& c) {
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
}

void parse_engine(const TomlFields& f, const std::string& key, const std::string& full,
                  const toml::node& n, HostConfig& c) {
  if (key == "default") {
    c.engine_default = f.str(n, full);
    if (c.engine_default != "vm" && c.engine_default != "gvisor")
      f.bad(full, "expected \"vm\" or \"gvisor\"");
  } else if (key == "gvisor") {
    parse_gvisor(f, full, n, c);
  } else {
    f.bad(full, "unknown key");
  }
}

void parse_store(const TomlFields& f, const std::string& key, const std::string& full,
                 const toml::node& n, HostConfig& c) {
  if (key != "size_gib") f.bad(full, "unknown key");
  c.store_size_gib = f.uint(n, full, 1, 1u << 16);
}

void parse_limits(const TomlFields& f, const std::string& key, const std::string& full,
                  const toml::node& n, HostConfig& c) {
  if (key != "disk_size") f.bad(full, "unknown key");
  std::string v = f.str(n, full);
  try {
    c.limits_disk_bytes = v == "off" ? 0 : parse_size(v);
  } catch (const Error& e) {
    f.bad(full, std::string(e.what()) + " (or \"off\")");
  }
  if (c.limits_disk_bytes && c.limits_disk_bytes < (64ull << 20))
    f.bad(full, "below 64 MiB, the least --disk-size takes");
}

void parse_cp(const TomlFields& f, const std::string& key, const std::string& full,
              const toml::node& n, HostConfig& c) {
  if (key != "max_size_mib") f.bad(full, "unknown key");
  c.cp_max_size_mib = f.uint(n, full, 0, 1u << 30);
}

void parse_net(const TomlFields& f, const std::string& key, const std::string& full,
               const toml::node& n, HostConfig& c) {
  if (key == "allow") {
    const toml::array* a = n.as_array();
    if (!a) f.bad(full, "expected an array of rule strings");
    for (auto&& item : *a) {
      auto v = item.value_exact<std::string>();
      if (!v) f.bad(full, "expected an array of rule strings");
      c.net_allow.push_back(*v);
    }
  } else if (key == "max_connections") {
    c.net_max_connections = f.uint(n, full, 1, 4096);
  } else if (key == "audit_max_mib") {
    c.net_audit_max_mib = f.uint(n, full, 1, 4096);
  } else {
    f.bad(full, "unknown key");
  }
}

void parse_egress(const TomlFields& f, const std::string& key, const std::string& full,
                  const toml::node& n, HostConfig& c) {
  if (key != "ca_file") f.bad(full, "unknown key");
  c.egress_ca_file = f.str(n, full);
  if (c.egress_ca_file.empty() || c.egress_ca_file[0] != '/')
    f.bad(full, "expected an absolute path of a PEM file of CA certificates");
}

void parse_jail(const TomlFields& f, const std::string& key, const std::string& full,
                const toml::node& n, HostConfig& c) {
  if (key == "enable") {
    c.jail_enable = f.boolean(n, full);
  } else if (key == "uid_first") {
    c.jail_uid_first = f.uint(n, full, 1000, 0x7fffffffu);
  } else if (key == "uid_count") {
    c.jail_uid_count = f.uint(n, full, 1, 0x7fffffffu);
  } else if (key == "cgroups") {
    c.jail_cgroups = f.boolean(n, full);
  } else if (key == "cgroup_parent") {
    std::string v = f.str(n, full);
    if (v.front() == '/' || v.back() == '/' || v.find("..") != std::string::npos ||
        v.find("//") != std::string::npos)
      f.bad(full, "expected a relative cgroup path such as \"space\"");
    c.jail_cgroup_parent = v;
  } else if (key == "memory_overhead_mib") {
    c.jail_memory_overhead_mib = f.uint(n, full, 16, 1u << 16);
  } else {
    f.bad(full, "unknown key");
  }
}

// The tables config.toml may have, each with the parser of its keys.
KeyParser parser_of(const std::string& table) {
  if (table == "defaults") return parse_defaults;
  if (table == "store") return parse_store;
  if (table == "cp") return parse_cp;
  if (table == "limits") return parse_limits;
  if (table == "net") return parse_net;
  if (table == "egress") return parse_egress;
  if (table == "jail") return parse_jail;
  if (table == "engine") return parse_engine;
  return nullptr;
}

}  // namespace

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
            "expected a table ([defaults], [store], [cp], [limits], [net], [egress], [jail] or "
            "[engine])");
    KeyParser parse = parser_of(table);
    if (!parse) f.bad("[" + table + "]", "unknown table");
    for (auto&& [k, n] : *t) {
      std::string key(k.str());
      parse(f, key, table + "." + key, n, c);
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

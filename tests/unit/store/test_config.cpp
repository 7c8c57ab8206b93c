// Unit tests for store/config (config.toml): a full file, defaults, errors that name the key,
// loading from a root and the kernel and rootfs defaults.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "store/config.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

namespace {
std::string error_of(std::string_view toml) {
  try {
    store::parse_host_config(toml, "config.toml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("config.toml: a full file") {
  auto c = store::parse_host_config(R"(
[defaults]
cpus = 2
memory_mib = 512
kernel = "/k/vmlinux"
rootfs = "/r/rootfs.ext4"
[store]
size_gib = 40
)",
                                    "config.toml");
  CHECK(c.cpus == 2u);
  CHECK(c.memory_mib == 512u);
  CHECK(c.kernel == "/k/vmlinux");
  CHECK(c.rootfs == "/r/rootfs.ext4");
  CHECK(c.store_size_gib == 40u);
  CHECK(c.default_template == "default");
  CHECK(store::parse_host_config("[defaults]\ntemplate = \"py3\"\n", "c").default_template ==
        "py3");
}

TEST_CASE("config.toml: empty means defaults") {
  auto c = store::parse_host_config("", "config.toml");
  CHECK_FALSE(c.cpus.has_value());
  CHECK_FALSE(c.memory_mib.has_value());
  CHECK(c.kernel.empty());
  CHECK(c.store_size_gib == 20u);
  CHECK(c.cp_max_size_mib == 1024u);
  CHECK(store::parse_host_config("[cp]\nmax_size_mib = 0\n", "c").cp_max_size_mib == 0u);
  CHECK(c.limits_disk_bytes == 0u);
}

TEST_CASE("config.toml: [limits] disk_size") {
  CHECK(store::parse_host_config("[limits]\ndisk_size = \"4G\"\n", "c").limits_disk_bytes ==
        (4ull << 30));
  CHECK(store::parse_host_config("[limits]\ndisk_size = \"off\"\n", "c").limits_disk_bytes == 0u);
  CHECK(error_of("[limits]\ndisk_size = \"1M\"\n") ==
        "config.toml: limits.disk_size: below 64 MiB, the least --disk-size takes");
  CHECK(error_of("[limits]\ndisk_size = \"lots\"\n").find("limits.disk_size") != std::string::npos);
  CHECK(error_of("[limits]\ndisk_size = 4\n") ==
        "config.toml: limits.disk_size: expected a non-empty string");
  CHECK(error_of("[limits]\nsize = \"4G\"\n") == "config.toml: limits.size: unknown key");
}

TEST_CASE("config.toml: errors name the key") {
  CHECK(error_of("[defaults]\ncpu = 1\n") == "config.toml: defaults.cpu: unknown key");
  CHECK(error_of("[store]\nsize = 1\n") == "config.toml: store.size: unknown key");
  CHECK(error_of("[extra]\na = 1\n") == "config.toml: [extra]: unknown table");
  CHECK(error_of("top = 1\n") ==
        "config.toml: top: expected a table ([defaults], [store], [cp], [limits], [net], [egress], "
        "[jail] or [engine])");
  CHECK(error_of("[cp]\nmax_size_mib = -1\n").find("out of range") != std::string::npos);
  CHECK(error_of("[defaults]\ncpus = \"2\"\n") ==
        "config.toml: defaults.cpus: expected an integer");
  CHECK(error_of("[defaults]\ncpus = 1.5\n") == "config.toml: defaults.cpus: expected an integer");
  CHECK(error_of("[defaults]\ncpus = 0\n") ==
        "config.toml: defaults.cpus: 0 is out of range 1..64");
  CHECK(error_of("[defaults]\nmemory_mib = -5\n").find("out of range") != std::string::npos);
  CHECK(error_of("[defaults]\nkernel = 3\n") == "config.toml: defaults.kernel: expected a string");
  CHECK(error_of("[defaults]\nkernel = \"rel/vmlinux\"\n") ==
        "config.toml: defaults.kernel: expected an absolute path");
  CHECK(error_of("[defaults\n").rfind("config.toml:1:", 0) == 0);  // syntax error with position
  CHECK(error_of("[defaults]\ntemplate = 1\n") ==
        "config.toml: defaults.template: expected a string");
  CHECK(error_of("[defaults]\ntemplate = \"Bad/Name\"\n").find("invalid template name") !=
        std::string::npos);
}

TEST_CASE("config.toml: loading from a root") {
  test::TempDir d("config");
  std::string root = d.path;
  CHECK(store::load_host_config(root).store_size_gib == 20u);  // absent file
  fs::write_file_atomic(root + "/config.toml", "[defaults]\nkernel = \"/x/vmlinux\"\n");
  auto c = store::load_host_config(root);
  CHECK(c.kernel == "/x/vmlinux");
  CHECK(store::resolve_kernel(c, "") == "/x/vmlinux");
  CHECK(store::resolve_kernel(c, "/flag/vmlinux") == "/flag/vmlinux");  // flag wins
  ::setenv("SPACE_CACHE", "/cache", 1);
  CHECK(store::resolve_rootfs(c, "") == "/cache/rootfs/current/rootfs.ext4");
  CHECK(store::resolve_kernel({}, "") == "/cache/kernel/current/vmlinux");
  ::unsetenv("SPACE_CACHE");
  CHECK(store::resolve_kernel({}, "") == "/var/cache/space/kernel/current/vmlinux");
  fs::write_file_atomic(root + "/config.toml", "[defaults]\nbogus = 1\n");
  CHECK_THROWS_WITH_AS(store::load_host_config(root),
                       doctest::Contains("defaults.bogus: unknown key"), Error);
}

TEST_CASE("config.toml: [net] allow, max_connections and audit_max_mib") {
  auto c = store::parse_host_config(R"([net]
allow = ["pypi.org:443", "127.0.0.2:8080"]
max_connections = 16
audit_max_mib = 2
)",
                                    "config.toml");
  REQUIRE(c.net_allow.size() == 2);
  CHECK(c.net_allow[0] == "pypi.org:443");
  CHECK(c.net_allow[1] == "127.0.0.2:8080");
  CHECK(c.net_max_connections == 16u);
  CHECK(c.net_audit_max_mib == 2u);
  auto d = store::parse_host_config("", "config.toml");
  CHECK(d.net_allow.empty());
  CHECK(d.net_max_connections == 64u);
  CHECK(d.net_audit_max_mib == 8u);
  CHECK(error_of("[net]\naudit_max_mib = 0\n").find("net.audit_max_mib") != std::string::npos);
  CHECK(error_of("[net]\nallow = \"x:1\"\n") ==
        "config.toml: net.allow: expected an array of rule strings");
  CHECK(error_of("[net]\nallow = [1]\n") ==
        "config.toml: net.allow: expected an array of rule strings");
  CHECK(error_of("[net]\nmax_connections = 0\n").find("net.max_connections") != std::string::npos);
}

TEST_CASE("config.toml: [jail]") {
  auto d = store::parse_host_config("", "config.toml");
  CHECK(d.jail_enable);
  CHECK(d.jail_cgroups);
  CHECK(d.jail_uid_first == 1000000000u);
  CHECK(d.jail_uid_count == 1000000u);
  CHECK(d.jail_cgroup_parent == "space");
  CHECK(d.jail_memory_overhead_mib == 128u);
  auto c = store::parse_host_config(R"([jail]
enable = false
cgroups = false
uid_first = 200000
uid_count = 1000
cgroup_parent = "ci/space"
memory_overhead_mib = 64
)",
                                    "config.toml");
  CHECK_FALSE(c.jail_enable);
  CHECK_FALSE(c.jail_cgroups);
  CHECK(c.jail_uid_first == 200000u);
  CHECK(c.jail_uid_count == 1000u);
  CHECK(c.jail_cgroup_parent == "ci/space");
  CHECK(c.jail_memory_overhead_mib == 64u);
  CHECK(error_of("[jail]\nenable = 1\n") == "config.toml: jail.enable: expected true or false");
  CHECK(error_of("[jail]\nuid_first = 0\n").find("jail.uid_first") != std::string::npos);
  CHECK(error_of("[jail]\nuid_first = 2000000000\nuid_count = 200000000\n").find("below 2^31") !=
        std::string::npos);
  for (const char* bad : {"\"/space\"", "\"space/\"", "\"a/../b\"", "\"a//b\"", "\"\""})
    CHECK(
        error_of(std::string("[jail]\ncgroup_parent = ") + bad + "\n").find("jail.cgroup_parent") !=
        std::string::npos);
  CHECK(error_of("[jail]\nmemory_overhead_mib = 8\n").find("out of range") != std::string::npos);
  CHECK(error_of("[jail]\nuids = 1\n") == "config.toml: jail.uids: unknown key");
}

TEST_CASE("config.toml: [egress] ca_file, an absolute path") {
  test::TempDir d;
  fs::write_file_atomic(d.path + "/config.toml", "[egress]\nca_file = \"/etc/test-ca.pem\"\n",
                        0644);
  CHECK(store::load_host_config(d.path).egress_ca_file == "/etc/test-ca.pem");
  fs::write_file_atomic(d.path + "/config.toml", "[egress]\nca_file = \"relative.pem\"\n", 0644);
  CHECK_THROWS_WITH_AS(store::load_host_config(d.path), doctest::Contains("absolute path"), Error);
}

TEST_CASE("config.toml: [engine.gvisor] pool") {
  CHECK(store::parse_host_config("", "c").gvisor_pool == 0);  // off unless asked for
  CHECK(store::parse_host_config("[engine.gvisor]\npool = 3\n", "c").gvisor_pool == 3);
  CHECK(store::parse_host_config("[engine]\ndefault = \"gvisor\"\n[engine.gvisor]\npool = 0\n", "c")
            .gvisor_pool == 0);
  CHECK(error_of("[engine.gvisor]\npool = 65\n").find("engine.gvisor.pool") != std::string::npos);
  CHECK(error_of("[engine.gvisor]\npool = -1\n").find("engine.gvisor.pool") != std::string::npos);
  CHECK(error_of("[engine.gvisor]\npool = \"2\"\n").find("engine.gvisor.pool") !=
        std::string::npos);
}

TEST_CASE("config.toml: idle pause and checkpoint defaults") {
  auto c = store::parse_host_config("[defaults]\nidle_pause = \"5m\"\nidle_checkpoint = \"off\"\n",
                                    "config.toml");
  CHECK(c.idle_pause_ms == 300'000);
  CHECK(c.idle_checkpoint_ms == 0);
  CHECK(store::parse_host_config("", "config.toml").idle_pause_ms == 0);
  CHECK(error_of("[defaults]\nidle_checkpoint = \"soon\"\n").find("defaults.idle_checkpoint") !=
        std::string::npos);
  CHECK(error_of("[defaults]\nidle_pause = 30\n").find("defaults.idle_pause") != std::string::npos);
}

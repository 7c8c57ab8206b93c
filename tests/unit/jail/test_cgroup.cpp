// Unit tests for jail/cgroup: the layout read from mountinfo texts (pure v1 with cpu and cpuacct
// co-mounted, pure v2, hybrid with an empty unified mount, no memory controller, escaped mount
// points, lines that are not mounts), the sandbox limits' arithmetic, the group directories and
// procs files of each layout, and create/join/usage/remove on fake v1 and v2 trees in a
// temporary directory (plain files standing for the controls, checked for what was written).
// As root on a host with a usable hierarchy, a real group is made, joined by a forked child,
// measured and removed; and launch::remove_sandbox_cgroup kills a process left in a group (a branch
// VMM no record names) and removes the group.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "jail/cgroup.h"
#include "launch/jail_setup.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;
using jail::CgroupLayout;
using jail::CgroupVersion;

namespace {

constexpr const char* kRootMount = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n";
constexpr const char* kV1Mounts =
    "25 22 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "27 25 0:24 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup "
    "cgroup rw,xattr,name=systemd\n"
    "30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:14 - cgroup "
    "cgroup rw,cpu,cpuacct\n"
    "31 25 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup "
    "cgroup rw,memory\n"
    "32 25 0:29 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup "
    "rw,pids\n"
    "33 25 0:30 / /sys/fs/cgroup/blkio rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup "
    "rw,blkio\n"
    "34 25 0:31 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:18 - cgroup "
    "cgroup rw,cpuset\n";
constexpr const char* kUnified =
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 "
    "cgroup2 rw,nsdelegate\n";
constexpr const char* kV2Mount =
    "26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

std::string v1_text() {
  return std::string(kRootMount) + kV1Mounts;
}
std::string v2_text() {
  return std::string(kRootMount) + kV2Mount;
}

void put(const std::string& path, const std::string& data = "") {
  fs::write_file_atomic(path, data, 0644, fs::Sync::Volatile);
}
std::string got(const std::string& path) {
  return fs::read_file(path, 4096);
}

// A fake v1 tree under `prefix`: the hierarchies' mounts, and the group `rel` with the control
// files create_group() writes, empty (no blkio group: create_group() must make it).
CgroupLayout fake_v1(const std::string& prefix, const std::string& rel) {
  CgroupLayout l = jail::parse_mountinfo(v1_text(), prefix);
  for (auto& [c, m] : l.v1) fs::mkdir_p(m);
  const std::string mem = l.v1.at("memory") + "/" + rel, pids = l.v1.at("pids") + "/" + rel,
                    cpu = l.v1.at("cpu") + "/" + rel;
  for (auto& d : {mem, pids, cpu}) fs::mkdir_p(d);
  put(mem + "/memory.limit_in_bytes");
  put(pids + "/pids.max");
  for (const char* f : {"cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.shares"}) put(cpu + "/" + f);
  return l;
}

// RealGroup: a group "space-unit-test/<name>-<pid>" on this host's hierarchy, made with small
// limits, or a reason to skip (not root, no usable hierarchy, or the kernel refused); the
// groups are removed when it goes.
// Skipped unless root on a host with a usable cgroup hierarchy; there a group that cannot be
// made is a failure.
doctest::skip real_cgroups() {
  return doctest::skip(::geteuid() != 0 || jail::detect_layout().version == CgroupVersion::None);
}

struct RealGroup {
  CgroupLayout l;
  std::string rel;
  std::string skip;  // why the real-host case cannot run here; "" when the group exists
  explicit RealGroup(const std::string& name) {
    rel = "space-unit-test/" + name + "-" + std::to_string(::getpid());
    if (::geteuid() != 0) {
      skip = "needs root";
      return;
    }
    l = jail::detect_layout();
    if (l.version == CgroupVersion::None) {
      skip = "no usable cgroup hierarchy on this host";
      return;
    }
    try {
      jail::create_group(l, rel, jail::sandbox_limits(1, 64, 64));
    } catch (const Error& e) {
      skip = std::string("cannot make a cgroup here: ") + e.what();
    }
  }
  ~RealGroup() {
    if (l.version == CgroupVersion::None) return;
    try {
      jail::remove_group(l, rel);
      jail::remove_group(l, "space-unit-test");
    } catch (...) {
    }
  }
  // A child that joins the group, says whether it could, then waits for the write end of
  // `hold` to close (or, with no `hold`, for a signal). Returns its pid once it has joined.
  pid_t fork_member(Pipe* hold = nullptr) {
    Pipe joined = Pipe::make();
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      joined.read.reset();
      char ok = 'y';
      try {
        jail::join_group(l, rel);
      } catch (...) {
        ok = 'n';
      }
      write_all(joined.write.get(), &ok, 1);
      char b;
      if (hold) {
        hold->write.reset();
        while (::read(hold->read.get(), &b, 1) > 0) {
        }
      } else {
        for (;;) ::pause();  // until killed
      }
      ::_exit(0);
    }
    joined.write.reset();
    char ok = 0;
    CHECK(read_full(joined.read.get(), &ok, 1) == 1);
    CHECK(ok == 'y');
    return pid;
  }
};

}  // namespace

TEST_CASE("cgroup: parse_mountinfo on pure v1, cpu and cpuacct sharing a hierarchy") {
  CgroupLayout l = jail::parse_mountinfo(v1_text());
  CHECK(l.version == CgroupVersion::V1);
  CHECK(l.v2.empty());
  CHECK(l.v1.size() == 5);
  CHECK(l.v1["memory"] == "/sys/fs/cgroup/memory");
  CHECK(l.v1["pids"] == "/sys/fs/cgroup/pids");
  CHECK(l.v1["cpu"] == "/sys/fs/cgroup/cpu,cpuacct");
  CHECK(l.v1["cpuacct"] == "/sys/fs/cgroup/cpu,cpuacct");
  CHECK(l.v1["blkio"] == "/sys/fs/cgroup/blkio");
  CHECK(l.v1.count("cpuset") == 0);  // not one space uses
  CgroupLayout p = jail::parse_mountinfo(v1_text(), "/fake");
  CHECK(p.v1["memory"] == "/fake/sys/fs/cgroup/memory");
  // v2 controllers do not matter without a cgroup2 mount.
  CHECK(jail::parse_mountinfo(v1_text(), "", "memory pids").version == CgroupVersion::V1);
}

TEST_CASE("cgroup: parse_mountinfo on pure v2 counts it only with the memory controller") {
  CgroupLayout l = jail::parse_mountinfo(v2_text(), "", "cpuset cpu io memory pids\n");
  CHECK(l.version == CgroupVersion::V2);
  CHECK(l.v2 == "/sys/fs/cgroup");
  CHECK(l.v1.empty());
  CHECK(jail::parse_mountinfo(v2_text(), "/fake", "cpu memory\n").v2 == "/fake/sys/fs/cgroup");
  CHECK(jail::parse_mountinfo(v2_text(), "", "memory").version == CgroupVersion::V2);
  CHECK(jail::parse_mountinfo(v2_text(), "", "cpuset cpu io pids\n").version ==
        CgroupVersion::None);
  CHECK(jail::parse_mountinfo(v2_text(), "", "memoryx").version == CgroupVersion::None);
  CHECK(jail::parse_mountinfo(v2_text()).version == CgroupVersion::None);
}

TEST_CASE("cgroup: parse_mountinfo on a hybrid host, without memory, and on odd lines") {
  // The empty unified mount of a hybrid host does not make it v2.
  std::string hybrid = std::string(kRootMount) + kUnified + kV1Mounts;
  CgroupLayout h = jail::parse_mountinfo(hybrid, "", "");
  CHECK(h.version == CgroupVersion::V1);
  CHECK(h.v2.empty());
  CHECK(h.v1["memory"] == "/sys/fs/cgroup/memory");
  // ...but one that offers memory does, and v1 is then ignored.
  CgroupLayout h2 = jail::parse_mountinfo(hybrid, "", "memory pids\n");
  CHECK(h2.version == CgroupVersion::V2);
  CHECK(h2.v2 == "/sys/fs/cgroup/unified");
  CHECK(h2.v1.empty());
  // No memory controller anywhere.
  std::string no_memory = std::string(kRootMount) +
                          "30 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                          "32 25 0:29 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
  CgroupLayout n = jail::parse_mountinfo(no_memory);
  CHECK(n.version == CgroupVersion::None);
  CHECK(n.v1.empty());
  CHECK(jail::parse_mountinfo("").version == CgroupVersion::None);
  // An escaped mount point, and lines that are not mounts.
  std::string odd =
      "garbage\n"
      "1 2 3 - cgroup\n"
      "\n"
      "40 25 0:40 / /sys/fs/cgroup/my\\040memory rw,relatime - cgroup cgroup rw,memory\n"
      "41 25 0:41 / /mnt/tab\\011and\\134slash rw - cgroup cgroup rw,pids\n"
      "42 25 0:42 / /sys/fs/cgroup/memory2 rw - cgroup cgroup rw,memory\n";
  CgroupLayout e = jail::parse_mountinfo(odd);
  CHECK(e.version == CgroupVersion::V1);
  CHECK(e.v1["memory"] == "/sys/fs/cgroup/my memory");  // the first mount of a controller wins
  CHECK(e.v1["pids"] == "/mnt/tab\tand\\slash");
  CHECK(jail::parse_mountinfo("40 25 0:40 / /m\\040 rw - cgroup cgroup rw,memory").v1["memory"] ==
        "/m ");
}

TEST_CASE("cgroup: parse_moves finds favordynmods on any cgroup mount, and the cgroup2 mount") {
  std::string hybrid = std::string(kRootMount) + kUnified + kV1Mounts;
  jail::CgroupMoves off = jail::parse_moves(hybrid);
  CHECK_FALSE(off.favored);
  CHECK(off.cgroup2 == "/sys/fs/cgroup/unified");
  jail::CgroupMoves on = jail::parse_moves(
      std::string(kRootMount) +
      "36 25 0:31 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 "
      "rw,nsdelegate,favordynmods\n" +
      kV1Mounts);
  CHECK(on.favored);
  CHECK(on.cgroup2 == "/sys/fs/cgroup/unified");
  // On a v1 mount too; the option must be whole, and other file systems' options do not count.
  CHECK(jail::parse_moves("30 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,favordynmods")
            .favored);
  CHECK_FALSE(jail::parse_moves("30 25 0:27 / /c rw - cgroup cgroup rw,favordynmodsx").favored);
  CHECK_FALSE(jail::parse_moves("30 25 0:27 / /t rw - tmpfs tmpfs rw,favordynmods").favored);
  jail::CgroupMoves none = jail::parse_moves("garbage\n1 2 3 - cgroup2\n");
  CHECK_FALSE(none.favored);
  CHECK(none.cgroup2.empty());
}

TEST_CASE("cgroup: version names and sandbox limits") {
  CHECK(std::string(jail::version_name(CgroupVersion::V1)) == "v1");
  CHECK(std::string(jail::version_name(CgroupVersion::V2)) == "v2");
  CHECK(std::string(jail::version_name(CgroupVersion::None)) == "none");
  auto l = jail::sandbox_limits(2, 1024, 64);
  CHECK(l.memory_bytes == (1088ull << 20));
  CHECK(l.pids == jail::kSandboxPids);
  CHECK(l.cpu_percent == 250);
  CHECK(l.cpu_weight == 200);
  auto big = jail::sandbox_limits(200, 65536, 256);
  CHECK(big.memory_bytes == ((65536ull + 256) << 20));  // no 32-bit overflow
  CHECK(big.cpu_percent == 20050);
  CHECK(big.cpu_weight == 10000);  // clamped
  CHECK(jail::sandbox_limits(0, 0, 0).cpu_weight == 1);
  auto huge = jail::sandbox_limits(1, 0xffffffffu, 0xffffffffu);
  CHECK(huge.memory_bytes == ((2 * 0xffffffffull) << 20));
}

TEST_CASE("cgroup: group directories and procs files of each layout") {
  CgroupLayout v1 = jail::parse_mountinfo(v1_text(), "/f");
  std::vector<std::string> dirs = {
      "/f/sys/fs/cgroup/memory/space/id", "/f/sys/fs/cgroup/pids/space/id",
      "/f/sys/fs/cgroup/cpu,cpuacct/space/id", "/f/sys/fs/cgroup/blkio/space/id"};
  CHECK(jail::group_dirs(v1, "space/id") == dirs);
  auto procs = jail::procs_files(v1, "space/id");
  REQUIRE(procs.size() == dirs.size());
  for (size_t i = 0; i < dirs.size(); i++) CHECK(procs[i] == dirs[i] + "/cgroup.procs");
  CgroupLayout v2 = jail::parse_mountinfo(v2_text(), "", "memory");
  CHECK(jail::group_dirs(v2, "space/id") == std::vector<std::string>{"/sys/fs/cgroup/space/id"});
  CHECK(jail::procs_files(v2, "space/id") ==
        std::vector<std::string>{"/sys/fs/cgroup/space/id/cgroup.procs"});
  CgroupLayout none;
  CHECK(jail::group_dirs(none, "space/id").empty());
  CHECK(jail::procs_files(none, "space/id").empty());
  CHECK_THROWS_WITH_AS(jail::create_group(none, "space/id", {}),
                       doctest::Contains("no usable cgroup hierarchy"), Error);
}

TEST_CASE("cgroup: create_group on a fake v1 tree writes the limits") {
  test::TempDir t("cg1");
  CgroupLayout l = fake_v1(t.path, "space/box");
  const std::string mem = l.v1.at("memory") + "/space/box", pids = l.v1.at("pids") + "/space/box",
                    cpu = l.v1.at("cpu") + "/space/box", blkio = l.v1.at("blkio") + "/space/box";
  jail::CgroupLimits lim{1ull << 30, 512, 250, 200};
  jail::create_group(l, "space/box", lim);
  CHECK(got(mem + "/memory.limit_in_bytes") == "1073741824");
  CHECK_FALSE(fs::exists(mem + "/memory.memsw.limit_in_bytes"));  // no swap accounting: none
  put(mem + "/memory.memsw.limit_in_bytes");
  jail::create_group(l, "space/box", lim);
  CHECK(got(mem + "/memory.memsw.limit_in_bytes") == "1073741824");  // no swap beyond the limit
  CHECK(got(pids + "/pids.max") == "512");
  CHECK(got(cpu + "/cpu.cfs_period_us") == "100000");
  CHECK(got(cpu + "/cpu.cfs_quota_us") == "250000");
  CHECK(got(cpu + "/cpu.shares") == "2048");
  CHECK(fs::is_dir(blkio));  // made, even without limits
  // Reused, without limits (the files emptied first: plain files keep what follows a write).
  for (auto f : {mem + "/memory.limit_in_bytes", pids + "/pids.max", cpu + "/cpu.cfs_quota_us",
                 cpu + "/cpu.shares"})
    put(f);
  jail::create_group(l, "space/box", jail::CgroupLimits{});
  CHECK(got(mem + "/memory.limit_in_bytes") == "-1");
  CHECK(got(pids + "/pids.max") == "max");
  CHECK(got(cpu + "/cpu.cfs_quota_us") == "-1");
  CHECK(got(cpu + "/cpu.shares") == "1024");
  // A control file that is not there is an error naming it.
  ::unlink((pids + "/pids.max").c_str());
  CHECK_THROWS_WITH_AS(jail::create_group(l, "space/box", lim),
                       doctest::Contains((pids + "/pids.max").c_str()), Error);
}

TEST_CASE("cgroup: set_cpu_quota on fake v1 and v2 trees") {
  test::TempDir t("cg-cpu");
  CgroupLayout l = fake_v1(t.path, "space/box");
  const std::string cpu = l.v1.at("cpu") + "/space/box";
  jail::set_cpu_quota(l, "space/box", 50000, 200000);
  CHECK(got(cpu + "/cpu.cfs_period_us") == "200000");
  CHECK(got(cpu + "/cpu.cfs_quota_us") == "50000");
  CHECK_THROWS_WITH_AS(jail::set_cpu_quota(l, "space/box", 500, 100000),
                       doctest::Contains("below the kernel's minimum"), Error);
  CHECK_THROWS_WITH_AS(jail::set_cpu_quota(l, "space/box", 50000, 10),
                       doctest::Contains("out of range"), Error);
  CHECK_THROWS_AS(jail::set_cpu_quota(l, "space/missing", 50000, 100000), Error);
  CgroupLayout v2;
  v2.version = jail::CgroupVersion::V2;
  v2.v2 = t.path + "/v2";
  fs::mkdir_p(v2.v2 + "/space/box");
  put(v2.v2 + "/space/box/cpu.max");
  jail::set_cpu_quota(v2, "space/box", 150000, 100000);
  CHECK(got(v2.v2 + "/space/box/cpu.max") == "150000 100000");
  CgroupLayout none;
  jail::set_cpu_quota(none, "space/box", 50000, 100000);  // no hierarchy: nothing to do
}

TEST_CASE("cgroup: join, usage and remove on a fake v1 tree") {
  test::TempDir t("cg1");
  CgroupLayout l = fake_v1(t.path, "space/box");
  jail::create_group(l, "space/box", jail::sandbox_limits(1, 64, 64));
  for (auto& f : jail::procs_files(l, "space/box")) put(f);
  jail::join_group(l, "space/box");
  for (auto& f : jail::procs_files(l, "space/box")) CHECK(got(f) == "0");
  const std::string mem = l.v1.at("memory") + "/space/box", cpu = l.v1.at("cpu") + "/space/box";
  put(cpu + "/cpuacct.usage", "123456789\n");
  put(mem + "/memory.usage_in_bytes", "4096\n");
  put(mem + "/memory.max_usage_in_bytes", "8192\n");
  put(mem + "/memory.limit_in_bytes", "134217728\n");
  put(l.v1.at("pids") + "/space/box/pids.current", "3\n");
  jail::CgroupUsage u = jail::read_usage(l, "space/box");
  CHECK(u.cpu_ns == 123456789u);
  CHECK(u.memory_bytes == 4096u);
  CHECK(u.memory_peak_bytes == 8192u);
  CHECK(u.memory_limit_bytes == 134217728u);
  CHECK(u.pids == 3u);
  jail::CgroupUsage none = jail::read_usage(l, "space/missing");
  CHECK_FALSE(none.cpu_ns.has_value());
  CHECK_FALSE(none.memory_bytes.has_value());
  CHECK_FALSE(none.memory_limit_bytes.has_value());
  CHECK_FALSE(none.pids.has_value());
  CHECK_FALSE(jail::read_usage(CgroupLayout{}, "space/box").pids.has_value());
  // remove_group: empty directories stand for groups without processes; a missing one is fine.
  for (auto& d : jail::group_dirs(l, "space/empty")) fs::mkdir_p(d);
  ::rmdir(jail::group_dirs(l, "space/empty").back().c_str());  // one hierarchy lacks it
  CHECK(jail::remove_group(l, "space/empty"));
  for (auto& d : jail::group_dirs(l, "space/empty")) CHECK_FALSE(fs::exists(d));
  for (auto& d : jail::group_dirs(l, "space/empty")) fs::mkdir_p(d);
  CHECK(jail::remove_group(l, "space/empty"));
  for (auto& d : jail::group_dirs(l, "space/empty")) CHECK_FALSE(fs::exists(d));
  for (auto& d : jail::group_dirs(l, "space")) CHECK(fs::is_dir(d));
  CHECK(jail::remove_group(l, "space/empty"));
  // group_pids: the union over the hierarchies, each pid once, junk lines skipped.
  put(l.v1.at("memory") + "/space/box/cgroup.procs", "12\n34\n");
  put(l.v1.at("pids") + "/space/box/cgroup.procs", "34\n56\nnot-a-pid\n-3\n");
  CHECK(jail::group_pids(l, "space/box") == std::vector<int>{12, 34, 56});
  CHECK(jail::group_pids(l, "space/missing").empty());
}

TEST_CASE("cgroup: create_group on a fake v2 tree enables controllers and writes the limits") {
  test::TempDir t("cg2");
  CgroupLayout l = jail::parse_mountinfo(v2_text(), t.path, "cpuset cpu io memory pids");
  REQUIRE(l.version == CgroupVersion::V2);
  const std::string root = l.v2, parent = root + "/space", box = parent + "/box";
  fs::mkdir_p(box);
  for (auto& d : {root, parent}) {
    put(d + "/cgroup.controllers", "memory\n");
    put(d + "/cgroup.subtree_control");
  }
  for (const char* f : {"memory.max", "memory.swap.max", "pids.max", "cpu.max", "cpu.weight"})
    put(box + "/" + f);
  jail::create_group(l, "space/box", jail::sandbox_limits(1, 960, 64));
  CHECK(got(box + "/memory.swap.max") == "0");  // a VMM cannot swap past its memory limit
  CHECK(got(root + "/cgroup.subtree_control") == "+memory");
  CHECK(got(parent + "/cgroup.subtree_control") == "+memory");
  CHECK_FALSE(fs::exists(box + "/cgroup.subtree_control"));  // the group's own is left alone
  CHECK(got(box + "/memory.max") == "1073741824");
  CHECK(got(box + "/pids.max") == "512");
  CHECK(got(box + "/cpu.max") == "150000 100000");
  CHECK(got(box + "/cpu.weight") == "100");
  // Controllers already enabled are not written again; no limits are "max".
  for (auto& d : {root, parent}) {
    put(d + "/cgroup.controllers", "cpuset cpu io memory pids\n");
    put(d + "/cgroup.subtree_control", "cpu io memory pids\n");
  }
  for (const char* f : {"memory.max", "pids.max", "cpu.max", "cpu.weight"}) put(box + "/" + f);
  jail::create_group(l, "space/box", jail::CgroupLimits{});
  CHECK(got(root + "/cgroup.subtree_control") == "cpu io memory pids\n");
  CHECK(got(parent + "/cgroup.subtree_control") == "cpu io memory pids\n");
  CHECK(got(box + "/memory.max") == "max");
  CHECK(got(box + "/pids.max") == "max");
  CHECK(got(box + "/cpu.max") == "max 100000");
  CHECK(got(box + "/cpu.weight") == "100");
  // Without pids and cpu controls only memory.max is written.
  const std::string bare = parent + "/bare";
  fs::mkdir_p(bare);
  put(bare + "/memory.max");
  jail::create_group(l, "space/bare", jail::sandbox_limits(1, 64, 64));
  CHECK(got(bare + "/memory.max") == "134217728");
  CHECK_FALSE(fs::exists(bare + "/pids.max"));
  CHECK_FALSE(fs::exists(bare + "/cpu.max"));
  // A parent without the memory controller is refused, naming it.
  put(parent + "/cgroup.controllers", "cpu io pids\n");
  put(parent + "/cgroup.subtree_control", "cpu\n");
  CHECK_THROWS_WITH_AS(
      jail::create_group(l, "space/box", {}),
      doctest::Contains(("memory controller is not available in " + parent).c_str()), Error);
}

TEST_CASE("cgroup: usage on a fake v2 tree") {
  test::TempDir t("cg2");
  CgroupLayout l = jail::parse_mountinfo(v2_text(), t.path, "memory");
  const std::string box = l.v2 + "/space/box";
  fs::mkdir_p(box);
  put(box + "/cpu.stat", "user_usec 1000\nusage_usec 1500\nsystem_usec 500\n");
  put(box + "/memory.current", "4096\n");
  put(box + "/memory.max", "max\n");
  put(box + "/pids.current", "2\n");
  jail::CgroupUsage u = jail::read_usage(l, "space/box");
  CHECK(u.cpu_ns == 1500000u);
  CHECK(u.memory_bytes == 4096u);
  CHECK_FALSE(u.memory_peak_bytes.has_value());   // no memory.peak on this "kernel"
  CHECK_FALSE(u.memory_limit_bytes.has_value());  // "max"
  CHECK(u.pids == 2u);
  put(box + "/memory.peak", "65536\n");
  put(box + "/memory.max", "134217728\n");
  u = jail::read_usage(l, "space/box");
  CHECK(u.memory_peak_bytes == 65536u);
  CHECK(u.memory_limit_bytes == 134217728u);
}

TEST_CASE("cgroup: a real group on this host, joined, measured and removed" * real_cgroups()) {
  RealGroup g("real");
  REQUIRE_MESSAGE(g.skip.empty(), g.skip);
  const CgroupLayout& l = g.l;
  const std::string& rel = g.rel;
  for (auto& d : jail::group_dirs(l, rel)) CHECK(fs::is_dir(d));
  Pipe hold = Pipe::make();
  pid_t pid = g.fork_member(&hold);
  hold.read.reset();
  jail::CgroupUsage u = jail::read_usage(l, rel);
  REQUIRE(u.pids.has_value());
  CHECK(*u.pids >= 1);
  CHECK(u.memory_limit_bytes == (128ull << 20));
  CHECK(u.memory_bytes.has_value());
  CHECK(u.cpu_ns.has_value());
  for (auto& f : jail::procs_files(l, rel))
    CHECK(fs::read_file(f).find(std::to_string(pid)) != std::string::npos);
  CHECK(jail::group_pids(l, rel) == std::vector<int>{pid});
  CHECK_FALSE(jail::remove_group(l, rel));  // busy while the child is in it
  hold.write.reset();
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(jail::remove_group(l, rel));
  for (auto& d : jail::group_dirs(l, rel)) CHECK_FALSE(fs::exists(d));
}

TEST_CASE("cgroup: remove_sandbox_cgroup kills a process left in the group, then removes it" *
          real_cgroups()) {
  RealGroup g("left");
  REQUIRE_MESSAGE(g.skip.empty(), g.skip);
  const CgroupLayout& l = g.l;
  const std::string& rel = g.rel;
  pid_t pid = g.fork_member();
  launch::remove_sandbox_cgroup(rel);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  // The kill came first, the rmdir after it once the process was reaped: at most a second.
  for (int i = 0; i < 100 && !jail::remove_group(l, rel); i++) ::usleep(10'000);
  for (auto& d : jail::group_dirs(l, rel)) CHECK_FALSE(fs::exists(d));
}

namespace {
// The mount point of this host's cgroup v1 freezer hierarchy, or "".
std::string v1_freezer_mount() {
  std::string text = fs::read_file("/proc/self/mountinfo", 1u << 20);
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    size_t dash = line.find(" - cgroup ");
    if (dash == std::string::npos || line.find("freezer", dash) == std::string::npos) continue;
    size_t f = 0;
    for (int i = 0; i < 4; i++) f = line.find(' ', f) + 1;
    return line.substr(f, line.find(' ', f) - f);
  }
  return "";
}
}  // namespace

TEST_CASE("cgroup: freeze_group stops a group's processes and thaws them" *
          doctest::skip(::geteuid() != 0 || v1_freezer_mount().empty())) {
  const std::string rel = "space-unit-test/freeze-" + std::to_string(::getpid());
  const std::string dir = v1_freezer_mount() + "/" + rel;
  fs::mkdir_p(dir);
  CHECK_FALSE(jail::freeze_group("space-unit-test/no-such-group", true));
  Pipe ticks = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // a tick every millisecond
    for (;;) {
      (void)!::write(ticks.write.get(), "t", 1);
      ::usleep(1000);
    }
  }
  ticks.write.reset();
  set_nonblocking(ticks.read.get());
  {
    Fd procs(::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    REQUIRE(procs.valid());
    std::string text = std::to_string(pid);
    write_all(procs.get(), text.data(), text.size());
  }
  auto drain = [&] {
    char b[4096];
    ssize_t n, total = 0;
    while ((n = ::read(ticks.read.get(), b, sizeof b)) > 0) total += n;
    return total;
  };
  REQUIRE(jail::freeze_group(rel, true));
  CHECK(fs::read_file(dir + "/freezer.state").rfind("FROZEN", 0) == 0);
  drain();
  ::usleep(50'000);
  CHECK(drain() == 0);  // frozen: no tick in 50 ms
  REQUIRE(jail::freeze_group(rel, false));
  ::usleep(50'000);
  CHECK(drain() > 0);
  // Frozen again and killed: remove_sandbox_cgroup thaws it, so the kill takes effect.
  REQUIRE(jail::freeze_group(rel, true));
  ::kill(pid, SIGKILL);
  launch::remove_sandbox_cgroup(rel);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  ::rmdir(dir.c_str());
  ::rmdir((v1_freezer_mount() + "/space-unit-test").c_str());
}

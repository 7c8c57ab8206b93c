// Sandbox control groups; see cgroup.h.
#include "jail/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

#include "util/enum_names.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

namespace space::jail {
namespace {

constexpr uint32_t kCpuPeriodUs = 100000;
constexpr const char* kV2Controllers[] = {"memory", "pids", "cpu", "io"};

// Undoes mountinfo's octal escapes (\040 for a space, and so on).
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::strtol(std::string(s.substr(i + 1, 3)).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void write_value(const std::string& path, const std::string& value) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw_errno("cgroup: open " + path);
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    throw_errno("cgroup: write \"" + value + "\" to " + path);
}

std::optional<uint64_t> read_number(const std::string& path) {
  try {
    std::string s = fs::read_file(path, 4096);
    if (s.empty() || s.rfind("max", 0) == 0) return std::nullopt;
    char* end = nullptr;
    uint64_t v = std::strtoull(s.c_str(), &end, 10);
    if (end == s.c_str()) return std::nullopt;
    return v;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The value of `key` in a "key value" file (cpu.stat).
std::optional<uint64_t> read_keyed(const std::string& path, const std::string& key) {
  try {
    std::istringstream in(fs::read_file(path, 64 * 1024));
    std::string k;
    uint64_t v;
    while (in >> k >> v)
      if (k == key) return v;
  } catch (const Error&) {
  }
  return std::nullopt;
}

// The distinct hierarchy mounts of a v1 layout (cpu and cpuacct may share one).
std::vector<std::string> v1_mounts(const CgroupLayout& l) {
  std::vector<std::string> out;
  for (const char* c : kV1Controllers) {
    auto it = l.v1.find(c);
    if (it != l.v1.end() && std::find(out.begin(), out.end(), it->second) == out.end())
      out.push_back(it->second);
  }
  return out;
}

// A cgroup or cgroup2 mount of a mountinfo line ("... MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE
// SOURCE SUPER_OPTIONS").
struct CgroupMount {
  std::string_view type;  // "cgroup" or "cgroup2"
  std::string point;      // unescaped
  std::string_view options;
};

std::vector<CgroupMount> cgroup_mounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (auto line : split(mountinfo, '\n')) {
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    auto pre = split(line.substr(0, dash), ' ');
    auto post = split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3 || (post[0] != "cgroup" && post[0] != "cgroup2"))
      continue;
    out.push_back({post[0], unescape(pre[4]), post[2]});
  }
  return out;
}

void mkdirs(const std::string& base, const std::string& rel) {
  // The group alone first: its parent usually exists (one call instead of one per level).
  const std::string whole = base + "/" + rel;
  if (::mkdir(whole.c_str(), 0755) == 0 || errno == EEXIST) return;
  if (errno != ENOENT) throw_errno("cgroup: mkdir " + whole);
  std::string path = base;
  for (auto part : split(rel, '/')) {
    path += "/" + std::string(part);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) throw_errno("cgroup: mkdir " + path);
  }
}

// v2: enables our controllers for the children of every directory from the root down to `rel`'s
// parent; a controller the host lacks is skipped, except memory, which a sandbox needs.
void enable_v2_controllers(const std::string& root, const std::string& rel) {
  std::string dir = root;
  auto parts = split(rel, '/');
  for (size_t i = 0; i < parts.size(); i++) {
    std::string have;
    try {
      have = fs::read_file(dir + "/cgroup.controllers", 4096);
    } catch (const Error&) {
    }
    std::string enabled;
    try {
      enabled = fs::read_file(dir + "/cgroup.subtree_control", 4096);
    } catch (const Error&) {
    }
    auto has = [](const std::string& list, const char* c) {
      for (auto w : split(list, ' '))
        if (std::string(w.substr(0, w.find('\n'))) == c) return true;
      return false;
    };
    for (const char* c : kV2Controllers) {
      if (has(enabled, c)) continue;
      if (!has(have, c)) {
        if (std::string(c) == "memory")
          fail("cgroup: the memory controller is not available in " + dir,
               "enable it for the cgroup space uses, or set [jail] cgroups = false");
        continue;
      }
      write_value(dir + "/cgroup.subtree_control", std::string("+") + c);
    }
    dir += "/" + std::string(parts[i]);
  }
}

}  // namespace

CgroupLayout parse_mountinfo(std::string_view text, const std::string& fs_prefix,
                             const std::string& v2_controllers) {
  CgroupLayout l;
  std::string v2_mount;
  for (const CgroupMount& m : cgroup_mounts(text)) {
    std::string mount = fs_prefix + m.point;
    if (m.type == "cgroup2") {
      if (v2_mount.empty()) v2_mount = mount;
    } else {
      for (auto opt : split(m.options, ','))
        for (const char* c : kV1Controllers)
          if (opt == c && !l.v1.count(c)) l.v1[c] = mount;
    }
  }
  bool v2_has_memory = false;
  for (auto w : split(v2_controllers, ' '))
    if (std::string(w.substr(0, w.find('\n'))) == "memory") v2_has_memory = true;
  if (!v2_mount.empty() && v2_has_memory) {
    l.version = CgroupVersion::V2;
    l.v2 = v2_mount;
    l.v1.clear();
  } else if (l.v1.count("memory")) {
    l.version = CgroupVersion::V1;
  } else {
    l.v1.clear();
  }
  return l;
}

CgroupLayout detect_layout() {
  std::string text;
  try {
    text = fs::read_file("/proc/self/mountinfo", 1u << 20);
  } catch (const Error&) {
    return {};
  }
  // The cgroup2 mount's controllers decide between v2 and v1 on a hybrid host.
  CgroupLayout first = parse_mountinfo(text);
  std::string controllers;
  for (const CgroupMount& m : cgroup_mounts(text)) {
    if (m.type != "cgroup2") continue;
    try {
      controllers = fs::read_file(m.point + "/cgroup.controllers", 4096);
    } catch (const Error&) {
    }
    break;
  }
  if (controllers.empty()) return first;
  return parse_mountinfo(text, "", controllers);
}

CgroupMoves parse_moves(std::string_view mountinfo) {
  CgroupMoves moves;
  for (const CgroupMount& m : cgroup_mounts(mountinfo)) {
    for (auto opt : split(m.options, ','))
      if (opt == "favordynmods") moves.favored = true;
    if (m.type == "cgroup2" && moves.cgroup2.empty()) moves.cgroup2 = m.point;
  }
  return moves;
}

CgroupMoves detect_moves() {
  try {
    return parse_moves(fs::read_file("/proc/self/mountinfo", 1u << 20));
  } catch (const Error&) {
    return {};
  }
}

const char* version_name(CgroupVersion v) {
  static constexpr EnumName<CgroupVersion> kNames[] = {{CgroupVersion::V1, "v1"},
                                                       {CgroupVersion::V2, "v2"}};
  return name_in(kNames, v, "none");
}

CgroupLimits sandbox_limits(uint32_t vcpus, uint32_t memory_mib, uint32_t overhead_mib) {
  CgroupLimits l;
  l.memory_bytes = (uint64_t(memory_mib) + overhead_mib) << 20;
  l.pids = kSandboxPids;
  l.cpu_percent = 100 * vcpus + 50;
  l.cpu_weight = std::clamp<uint32_t>(100 * vcpus, 1, 10000);
  return l;
}

std::vector<std::string> group_dirs(const CgroupLayout& l, const std::string& rel) {
  std::vector<std::string> out;
  if (l.version == CgroupVersion::V2) out.push_back(l.v2 + "/" + rel);
  if (l.version == CgroupVersion::V1)
    for (const auto& m : v1_mounts(l)) out.push_back(m + "/" + rel);
  return out;
}

std::vector<std::string> procs_files(const CgroupLayout& l, const std::string& rel) {
  std::vector<std::string> out;
  for (auto& d : group_dirs(l, rel)) out.push_back(d + "/cgroup.procs");
  return out;
}

void create_group(const CgroupLayout& l, const std::string& rel, const CgroupLimits& lim) {
  if (l.version == CgroupVersion::None) fail("cgroup: this host has no usable cgroup hierarchy");
  if (l.version == CgroupVersion::V2) {
    enable_v2_controllers(l.v2, rel);
    mkdirs(l.v2, rel);
    std::string d = l.v2 + "/" + rel;
    write_value(d + "/memory.max", lim.memory_bytes ? std::to_string(lim.memory_bytes) : "max");
    // No swap beyond a memory limit: pages pushed out to swap would escape it.
    if (fs::exists(d + "/memory.swap.max"))
      write_value(d + "/memory.swap.max", lim.memory_bytes ? "0" : "max");
    if (fs::exists(d + "/pids.max"))
      write_value(d + "/pids.max", lim.pids ? std::to_string(lim.pids) : "max");
    if (fs::exists(d + "/cpu.max")) {
      write_value(d + "/cpu.max",
                  (lim.cpu_percent ? std::to_string(uint64_t(lim.cpu_percent) * kCpuPeriodUs / 100)
                                   : std::string("max")) +
                      " " + std::to_string(kCpuPeriodUs));
      write_value(d + "/cpu.weight", std::to_string(lim.cpu_weight));
    }
    return;
  }
  for (const auto& m : v1_mounts(l)) mkdirs(m, rel);
  auto dir = [&](const char* c) { return l.v1.at(c) + "/" + rel; };
  const std::string mem_limit = lim.memory_bytes ? std::to_string(lim.memory_bytes) : "-1";
  write_value(dir("memory") + "/memory.limit_in_bytes", mem_limit);
  // Memory and swap together at the memory limit: no swap beyond it. The file exists only with
  // swap accounting (swapaccount=1); it must not be below memory.limit_in_bytes, so it is
  // written second (a new group starts unlimited in both).
  if (fs::exists(dir("memory") + "/memory.memsw.limit_in_bytes"))
    write_value(dir("memory") + "/memory.memsw.limit_in_bytes", mem_limit);
  if (l.v1.count("pids"))
    write_value(dir("pids") + "/pids.max", lim.pids ? std::to_string(lim.pids) : "max");
  if (l.v1.count("cpu")) {
    write_value(dir("cpu") + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
    write_value(
        dir("cpu") + "/cpu.cfs_quota_us",
        lim.cpu_percent ? std::to_string(uint64_t(lim.cpu_percent) * kCpuPeriodUs / 100) : "-1");
    write_value(dir("cpu") + "/cpu.shares", std::to_string(uint64_t(lim.cpu_weight) * 1024 / 100));
  }
}

void set_cpu_quota(const CgroupLayout& l, const std::string& rel, uint64_t quota_us,
                   uint64_t period_us) {
  if (period_us < 1000 || period_us > 1000000)
    fail("cpu period " + std::to_string(period_us) + " us is out of range (1000-1000000)");
  if (quota_us < 1000)
    fail("cpu quota " + std::to_string(quota_us) + " us is below the kernel's minimum (1000)");
  if (l.version == CgroupVersion::V2) {
    std::string f = l.v2 + "/" + rel + "/cpu.max";
    if (fs::exists(f)) write_value(f, std::to_string(quota_us) + " " + std::to_string(period_us));
    return;
  }
  if (l.version != CgroupVersion::V1 || !l.v1.count("cpu")) return;
  std::string d = l.v1.at("cpu") + "/" + rel;
  // Unlimited first, so that the new period never meets an old quota the kernel would refuse.
  write_value(d + "/cpu.cfs_quota_us", "-1");
  write_value(d + "/cpu.cfs_period_us", std::to_string(period_us));
  write_value(d + "/cpu.cfs_quota_us", std::to_string(quota_us));
}

bool remove_group(const CgroupLayout& l, const std::string& rel) {
  bool all = true;
  std::vector<std::string> dirs = group_dirs(l, rel);
  // Hierarchies of controllers space does not use (v1 freezer, devices, cpuset, name=systemd)
  // may hold the group too: runsc, the gvisor engine's runtime, makes it in every one.
  if (l.version != CgroupVersion::None) {
    std::string text;
    try {
      text = fs::read_file("/proc/self/mountinfo", 1u << 20);
    } catch (const Error&) {
    }
    for (const CgroupMount& m : cgroup_mounts(text)) {
      std::string d = m.point + "/" + rel;
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end() && fs::is_dir(d)) dirs.push_back(d);
    }
  }
  for (const auto& d : dirs) {
    if (::rmdir(d.c_str()) == 0 || errno == ENOENT) continue;
    if (errno == EBUSY) {
      all = false;
      continue;
    }
    throw_errno("cgroup: rmdir " + d);
  }
  return all;
}

std::vector<int> group_pids(const CgroupLayout& l, const std::string& rel) {
  std::vector<int> out;
  for (const auto& f : procs_files(l, rel)) {
    std::string text;
    try {
      text = fs::read_file(f, 1 << 20);
    } catch (const Error& e) {
      if (e.err() == ENOENT) continue;
      throw;
    }
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(pos, nl - pos);
      pos = nl + 1;
      char* end = nullptr;
      long v = std::strtol(line.c_str(), &end, 10);
      if (line.empty() || *end != '\0' || v <= 0) continue;
      if (std::find(out.begin(), out.end(), static_cast<int>(v)) == out.end())
        out.push_back(static_cast<int>(v));
    }
  }
  return out;
}

void join_group(const CgroupLayout& l, const std::string& rel) {
  for (const auto& f : procs_files(l, rel)) write_value(f, "0");
}

CgroupUsage read_usage(const CgroupLayout& l, const std::string& rel) {
  CgroupUsage u;
  if (l.version == CgroupVersion::V2) {
    std::string d = l.v2 + "/" + rel;
    if (auto us = read_keyed(d + "/cpu.stat", "usage_usec")) u.cpu_ns = *us * 1000;
    u.memory_bytes = read_number(d + "/memory.current");
    u.memory_peak_bytes = read_number(d + "/memory.peak");
    u.memory_limit_bytes = read_number(d + "/memory.max");
    u.pids = read_number(d + "/pids.current");
  } else if (l.version == CgroupVersion::V1) {
    auto dir = [&](const char* c) {
      auto it = l.v1.find(c);
      return it == l.v1.end() ? std::string() : it->second + "/" + rel;
    };
    if (auto d = dir("cpuacct"); !d.empty()) u.cpu_ns = read_number(d + "/cpuacct.usage");
    if (auto d = dir("memory"); !d.empty()) {
      u.memory_bytes = read_number(d + "/memory.usage_in_bytes");
      u.memory_peak_bytes = read_number(d + "/memory.max_usage_in_bytes");
      u.memory_limit_bytes = read_number(d + "/memory.limit_in_bytes");
    }
    if (auto d = dir("pids"); !d.empty()) u.pids = read_number(d + "/pids.current");
  }
  return u;
}

bool freeze_group(const std::string& rel, bool frozen, int wait_ms) {
  std::string text;
  try {
    text = fs::read_file("/proc/self/mountinfo", 1u << 20);
  } catch (const Error&) {
    return false;
  }
  std::string dir;
  for (const CgroupMount& m : cgroup_mounts(text)) {
    if (m.type != "cgroup") continue;
    for (auto opt : split(m.options, ','))
      if (opt == "freezer") dir = m.point + "/" + rel;
    if (!dir.empty()) break;
  }
  if (dir.empty() || !fs::is_dir(dir)) return false;
  const std::string file = dir + "/freezer.state";
  const std::string want = frozen ? "FROZEN" : "THAWED";
  auto state = [&] {
    std::string v = fs::read_file(file, 64);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
    return v;
  };
  write_value(file, want);
  for (int waited_us = 0; state() != want; waited_us += 200) {
    if (waited_us >= wait_ms * 1000) {
      if (frozen) write_value(file, "THAWED");
      fail("cgroup " + rel + ": " + file + " does not read " + want + " after " +
           std::to_string(wait_ms) + " ms");
    }
    ::usleep(200);
  }
  return true;
}

}  // namespace space::jail

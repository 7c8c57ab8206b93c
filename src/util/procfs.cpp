// What /proc says of a process; see procfs.h.
#include "util/procfs.h"

#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "util/error.h"
#include "util/fs.h"

namespace space::proc {

namespace {

struct StatFields {
  char state;
  uint64_t start_time;
};

std::optional<StatFields> read_stat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  auto f = stat_fields(std::to_string(pid));
  auto start_time = stat_number(f, 22);
  if (!start_time || f[0].empty()) return std::nullopt;
  return StatFields{f[0][0], *start_time};
}

}  // namespace

std::vector<std::string> stat_fields(const std::string& who) {
  std::string text;
  try {
    text = fs::read_file("/proc/" + who + "/stat", 4096);
  } catch (const Error&) {
    return {};
  }
  auto rparen = text.rfind(')');
  if (rparen == std::string::npos) return {};
  std::vector<std::string> out;
  for (size_t i = rparen + 1; i < text.size();) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) i++;
    size_t end = text.find_first_of(" \n", i);
    if (i < text.size()) out.push_back(text.substr(i, end == std::string::npos ? end : end - i));
    i = end == std::string::npos ? text.size() : end;
  }
  return out;
}

// Field `n` (3 or more) of `f` as a number; nullopt if missing or not a number.
std::optional<uint64_t> stat_number(const std::vector<std::string>& f, size_t n) {
  if (n < 3 || n - 3 >= f.size() || f[n - 3].empty()) return std::nullopt;
  char* end = nullptr;
  uint64_t v = std::strtoull(f[n - 3].c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

std::optional<uint64_t> start_time(pid_t pid) {
  auto f = read_stat(pid);
  if (!f) return std::nullopt;
  return f->start_time;
}

bool is_alive(pid_t pid, uint64_t start) {
  auto f = read_stat(pid);
  return f && f->state != 'Z' && f->state != 'X' && f->start_time == start;
}

bool is_stopped(pid_t pid) {
  auto f = read_stat(pid);
  return f && (f->state == 'T' || f->state == 't');
}

std::vector<pid_t> flock_holders(const std::string& path) {
  std::vector<pid_t> out;
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) return out;
  const std::string base = path.substr(path.rfind('/') + 1);
  // A process that ends while we look, or one we may not inspect, is skipped.
  auto names = [](const std::string& dir) {
    try {
      return fs::list_dir(dir);
    } catch (const Error&) {
      return std::vector<std::string>{};
    }
  };
  const pid_t self = ::getpid();
  for (const std::string& p : names("/proc")) {
    char* end = nullptr;
    const long pid = std::strtol(p.c_str(), &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    for (const std::string& fd : names("/proc/" + p + "/fd")) {
      const std::string link = "/proc/" + p + "/fd/" + fd;
      char buf[4096];
      ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
      if (n <= 0) continue;
      std::string_view name(buf, static_cast<size_t>(n));
      // A cheap filter by name first; then the file itself, by device and inode.
      if (!name.ends_with(base)) continue;
      struct stat st {};
      if (::stat(link.c_str(), &st) != 0 || st.st_dev != target.st_dev ||
          st.st_ino != target.st_ino)
        continue;
      std::string info;
      try {
        info = fs::read_file("/proc/" + p + "/fdinfo/" + fd, 65536);
      } catch (const Error&) {
        continue;
      }
      // "lock:\t1: FLOCK  ADVISORY  WRITE 1234 00:2f:258 0 EOF" for a lock taken through this
      // open file; a request still waiting is not listed.
      if (info.find("lock:") != std::string::npos && info.find("FLOCK") != std::string::npos) {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
    }
  }
  return out;
}

std::string command_line(pid_t pid) {
  std::string text;
  try {
    text = fs::read_file("/proc/" + std::to_string(pid) + "/cmdline", 1u << 20);
  } catch (const Error&) {
    return "";
  }
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

std::optional<MemoryUse> parse_smaps_rollup(std::string_view text) {
  MemoryUse m;
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    uint64_t* field = line.rfind("Rss:", 0) == 0   ? &m.rss_bytes
                      : line.rfind("Pss:", 0) == 0 ? &m.pss_bytes
                                                   : nullptr;
    if (!field) continue;
    std::string num(line.substr(4));
    char* e = nullptr;
    unsigned long long kb = std::strtoull(num.c_str(), &e, 10);
    if (e == num.c_str()) continue;
    *field = uint64_t(kb) * 1024;
    any = true;
  }
  if (!any) return std::nullopt;
  return m;
}

std::optional<MemoryUse> memory_use(pid_t pid) {
  try {
    return parse_smaps_rollup(
        fs::read_file("/proc/" + std::to_string(pid) + "/smaps_rollup", 1 << 16));
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::optional<uint64_t> cpu_time_ns(pid_t pid) {
  // utime is field 14, stime 15, in clock ticks.
  auto f = stat_fields(std::to_string(pid));
  auto utime = stat_number(f, 14), stime = stat_number(f, 15);
  long hz = ::sysconf(_SC_CLK_TCK);
  if (!utime || !stime || hz <= 0) return std::nullopt;
  return (*utime + *stime) * (1'000'000'000ull / uint64_t(hz));
}

std::optional<uint64_t> threads_cpu_time_ns(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::vector<std::string> tids;
  try {
    tids = fs::list_dir(tasks);
  } catch (const Error&) {
    return std::nullopt;  // gone
  }
  uint64_t sum = 0;
  bool any = false;
  for (const auto& tid : tids) {
    std::string text;
    try {
      text = fs::read_file(tasks + "/" + tid + "/schedstat", 128);
    } catch (const Error&) {
      continue;  // the thread ended meanwhile, or no schedstat
    }
    char* end = nullptr;
    unsigned long long ns = std::strtoull(text.c_str(), &end, 10);
    if (end == text.c_str()) continue;
    sum += ns;
    any = true;
  }
  if (!any) return cpu_time_ns(pid);
  return sum;
}

Quiet wait_quiet(pid_t pid, int window_ms, int windows, double max_share, int limit_ms,
                 int cancel_fd) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto since_ms = [&t0] {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  auto sample = [pid] {
    auto ns = threads_cpu_time_ns(pid);
    if (!ns) fail("process " + std::to_string(pid) + " ended while waiting for it to go quiet");
    return *ns;
  };
  const auto allowed = static_cast<uint64_t>(max_share * window_ms * 1e6);
  Quiet q;
  uint64_t before = sample();
  int quiet = 0;
  for (;;) {
    pollfd pf{cancel_fd, POLLIN, 0};
    int n = ::poll(&pf, cancel_fd >= 0 ? 1 : 0, window_ms);
    if (n < 0 && errno != EINTR) throw_errno("poll");
    if (n > 0)
      fail("interrupted while waiting for process " + std::to_string(pid) + " to go quiet");
    uint64_t now = sample();
    // A thread that ended takes its time out of the sum: count that window as busy.
    q.last_window_ns = now >= before ? now - before : ~uint64_t{0};
    before = now;
    q.waited_ms = since_ms();
    quiet = q.last_window_ns <= allowed ? quiet + 1 : 0;
    if (quiet >= windows) {
      q.settled = true;
      return q;
    }
    if (q.waited_ms >= limit_ms) return q;
  }
}

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out;
  try {
    for (const auto& t : fs::list_dir("/proc/" + std::to_string(pid) + "/task"))
      out.push_back(static_cast<pid_t>(std::stol(t)));
  } catch (const std::exception&) {  // gone, or a name that is no number
  }
  return out;
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  for (pid_t tid : threads_of(pid)) {
    std::string text;
    try {
      text = fs::read_file(
          "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/children", 1 << 16);
    } catch (const Error&) {
      continue;
    }
    size_t i = 0;
    while (i < text.size()) {
      size_t j = text.find(' ', i);
      if (j == std::string::npos) j = text.size();
      if (j > i) out.push_back(static_cast<pid_t>(std::stol(text.substr(i, j - i))));
      i = j + 1;
    }
  }
  return out;
}

}  // namespace space::proc

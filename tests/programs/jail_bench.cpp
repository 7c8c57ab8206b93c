// jail-bench: what the jail adds to the start of a VMM, measured with the production code but no
// VM, so that it runs on any Linux host where space's jail does (root; KVM not needed). Run by
// scripts/bench-jail.sh. Each round, interleaved:
//   unjailed  the launcher's path without a jail: the run directory, a fork, the ready pipe;
//   jailed    the same plus the CLI's share (core::prepare_jail: the uid claim and the cgroups)
//             and a clone into a new PID namespace that runs monitor::enter_vmm_jail, the very
//             function every jailed VMM runs, and reports on the ready pipe from inside the jail,
//             as the VMM's "ok" comes after it.
// Both end where the VMM would start building its VM, so the difference is the jail's cost per
// create. The jailed child also reports its phases (enter_vmm_jail's PhaseLog marks), and the
// bench times the seccomp programs as compile() makes them against the built-in ones.
// Then the same end to end, as create starts a VMM: core::probe_vmm_start, which launches
// `__vmm --probe` through the launcher (exec included) with the jail on and off, interleaved.
// The launcher runs /proc/self/exe, this program, which hands such a command line to the space
// program's own entry (cli::main_entry).
// Usage: jail-bench [--dir SCRATCH] [--rounds N] (default: a directory of its own under /tmp,
// removed at the end; 50 rounds). Prints a table; exits 1 if any round failed, 77 when not root.
// ctest runs it for three rounds (test jail.entry): a jailed start that fails fails the test.
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli/entry.h"
#include "core/jail_setup.h"
#include "core/launcher.h"
#include "core/vmm_probe.h"
#include "jail/cgroup.h"
#include "jail/seccomp_prebuilt.h"
#include "monitor/vmm_jail.h"
#include "store/config.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/process.h"

using namespace space;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Reads one line from `fd` (blocking); "" at EOF.
std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

int wait_for(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

// One unjailed start: ms until the child reported.
double unjailed_round(const store::SandboxPaths& p) {
  auto t0 = Clock::now();
  core::make_run_dir(p, 0);
  Pipe pipe = Pipe::make();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    ssize_t w = ::write(pipe.write.get(), "ok\n", 3);
    ::_exit(w == 3 ? 0 : 1);
  }
  pipe.write.reset();
  std::string line = read_line(pipe.read.get());
  double ms = ms_since(t0);
  wait_for(pid);
  fs::remove_tree(p.run_dir);
  if (line != "ok") fail("the unjailed child did not report");
  return ms;
}

// The jailed child's report: "ok NAME=MS;NAME=MS;..." (the phases of enter_vmm_jail).
[[noreturn]] void jailed_child(const monitor::JailPlan& plan, Fd ready) {
  std::string report;
  try {
    PhaseLog phases;
    monitor::enter_vmm_jail(plan, ready, phases);
    report = "ok ";
    for (const auto& [name, ms] : phases.phases()) report += name + "=" + std::to_string(ms) + ";";
  } catch (const std::exception& e) {
    report = std::string("error ") + e.what();
  }
  report += "\n";
  ssize_t w = ::write(ready.get(), report.data(), report.size());
  // exit_group itself: the VMM's filter is loaded, and this must be one plain system call.
  ::syscall(SYS_exit_group, w == static_cast<ssize_t>(report.size()) ? 0 : 1);
  __builtin_unreachable();
}

struct JailedResult {
  double total_ms = 0;
  double cli_ms = 0;
  std::map<std::string, double> phases;
};

JailedResult jailed_round(const store::HostConfig& hc, const store::SandboxPaths& p,
                          const std::string& id) {
  JailedResult r;
  auto t0 = Clock::now();
  core::VmmJail j = core::prepare_jail(hc, id, id, 1, 256);
  core::make_run_dir(p, j.uid);
  r.cli_ms = ms_since(t0);
  Pipe pipe = Pipe::make();
  monitor::JailPlan plan{{j.uid, static_cast<gid_t>(j.uid)},
                         j.uid_lock.get(),
                         j.cgroup,
                         j.init_cgroup,
                         p.run_dir,
                         id,
                         jail::Unlisted::Kill};
  pid_t pid = static_cast<pid_t>(
      ::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, 0));
  if (pid < 0) throw_errno("clone a new PID namespace");
  if (pid == 0) {
    pipe.read.reset();
    jailed_child(plan, std::move(pipe.write));
  }
  pipe.write.reset();
  std::string line = read_line(pipe.read.get());
  r.total_ms = ms_since(t0);
  int st = wait_for(pid);  // the jail's PID 1 exits once the VMM has
  j.uid_lock.reset();
  core::remove_sandbox_cgroup(j.cgroup);
  fs::remove_tree(p.run_dir);
  if (line.rfind("ok ", 0) != 0)
    fail("the jailed child failed: " + (line.empty() ? "it " + proc::describe_status(st) : line));
  std::string rest = line.substr(3);
  for (size_t pos = 0; pos < rest.size();) {
    size_t semi = rest.find(';', pos);
    std::string kv = rest.substr(pos, semi - pos);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) r.phases[kv.substr(0, eq)] = std::atof(kv.c_str() + eq + 1);
    pos = semi == std::string::npos ? rest.size() : semi + 1;
  }
  return r;
}

void show(const char* what, const std::vector<double>& v) {
  std::printf("  %-52s median %7.3f ms   p90 %7.3f ms\n", what, pct(v, 50), pct(v, 90));
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++)  // a VMM the launcher started: the space program's own
    if (std::strcmp(argv[i], "__vmm") == 0) return cli::main_entry(argc, argv);
  std::string dir;
  int rounds = 50;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: jail-bench [--dir SCRATCH] [--rounds N]\n");
      return 2;
    }
  }
  if (::geteuid() != 0) {
    std::printf("skipped: jail-bench needs root (namespaces, cgroups, uids)\n");
    return 77;
  }
  std::string own_dir;
  if (dir.empty()) {
    char tmpl[] = "/tmp/space-jail-bench.XXXXXX";
    if (!::mkdtemp(tmpl)) {
      std::perror("jail-bench: mkdtemp");
      return 1;
    }
    dir = own_dir = tmpl;
  }
  struct RemoveOwn {
    const std::string& d;
    ~RemoveOwn() {
      try {
        if (!d.empty()) fs::remove_tree(d);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "jail-bench: %s\n", e.what());
      }
    }
  } remove_own{own_dir};
  try {
    dir = fs::absolute(dir);
    ::setenv("SPACE_RUN_DIR", (dir + "/run").c_str(), 1);  // the uid claims and run directories
    store::HostConfig hc;
    hc.jail_cgroup_parent = "space-bench";  // never a real sandbox's group
    jail::CgroupLayout layout = jail::detect_layout();
    if (layout.version == jail::CgroupVersion::None) hc.jail_cgroups = false;

    std::vector<double> bare, jailed, cli, compiled, built_in;
    std::map<std::string, std::vector<double>> phases;
    for (int n = 0; n < rounds; n++) {
      std::string id = "bench-jail-" + std::to_string(n);
      store::SandboxPaths p = store::paths_in(dir + "/sandbox", dir + "/run/" + id);
      bare.push_back(unjailed_round(p));
      JailedResult r = jailed_round(hc, p, id);
      jailed.push_back(r.total_ms);
      cli.push_back(r.cli_ms);
      for (auto& [k, v] : r.phases) phases[k].push_back(v);
      auto t0 = Clock::now();
      for (jail::Role role : {jail::Role::Vmm, jail::Role::Init, jail::Role::Vcpu})
        (void)jail::compile(role);
      compiled.push_back(ms_since(t0));
      t0 = Clock::now();
      for (jail::Role role : {jail::Role::Vmm, jail::Role::Init, jail::Role::Vcpu})
        (void)jail::program(role);
      built_in.push_back(ms_since(t0));
    }
    // End to end, through the launcher: `__vmm --probe`, jailed and not.
    std::vector<double> probe_jailed, probe_bare;
    store::Context ctx{dir + "/root", "warn", "text"};
    store::HostConfig bare_hc = hc;
    bare_hc.jail_enable = false;
    for (int n = 0; n < rounds; n++) {
      probe_bare.push_back(core::probe_vmm_start(ctx, bare_hc));
      probe_jailed.push_back(core::probe_vmm_start(ctx, hc));
    }
    if (hc.jail_cgroups) {
      jail::remove_group(layout, hc.jail_cgroup_parent + "/init");
      jail::remove_group(layout, hc.jail_cgroup_parent);
    }
    std::printf("jail set-up per VMM start, %d rounds interleaved (cgroups %s)\n", rounds,
                hc.jail_cgroups ? jail::version_name(layout.version) : "off");
    show("unjailed: run dir, fork, ready pipe", bare);
    show("jailed: the same, in its jail (enter_vmm_jail)", jailed);
    std::printf("  jail's cost per VMM start: median %+.3f ms, p90 %+.3f ms\n",
                pct(jailed, 50) - pct(bare, 50), pct(jailed, 90) - pct(bare, 90));
    std::printf("  where it goes (medians):\n");
    show("  CLI: uid claim, cgroups, run dir (prepare_jail)", cli);
    for (const char* k : {"seccomp programs", "cgroup open", "jail enter", "fork", "jail"})
      if (phases.count(k)) show((std::string("  VMM: ") + k).c_str(), phases[k]);
    std::printf(
        "end to end, as create starts a VMM (launcher, exec, `__vmm --probe`), %d rounds:\n",
        rounds);
    show("unjailed VMM start to its ready line", probe_bare);
    show("jailed VMM start to its ready line, from inside", probe_jailed);
    std::printf("  jail's cost per VMM start: median %+.3f ms, p90 %+.3f ms\n",
                pct(probe_jailed, 50) - pct(probe_bare, 50),
                pct(probe_jailed, 90) - pct(probe_bare, 90));
    std::printf("  seccomp programs for the three roles:\n");
    show("  compiled by libseccomp at run time (compile)", compiled);
    show("  built in at build time (program)", built_in);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jail-bench: %s\n", e.what());
    return 1;
  }
}

// jail-bench: what the jail adds to the start of a VMM, measured with the production code but no
// VM, so that it runs on any Linux host where space's jail does (root; KVM not needed). Run by
// scripts/bench-jail.sh. Each round, interleaved, starts a VMM as create does, through the
// launcher (launch::probe_vmm_start: uid claim, cgroups, run directory, the new PID namespace and
// its PID 1, exec of `__vmm --probe`), once with the jail off and once on, and times it from the
// launch to the VMM's ready line, which the jailed VMM writes from inside its jail. Both end where
// a VMM would start building its VM, so the difference is the jail's cost per create. The jailed
// VMM's own phases come from its log, and the time to its first step (CLOCK_MONOTONIC, which it
// logs) splits the start from the jail's entry. The bench also times the seccomp programs as
// compile() makes them against the built-in ones. The launcher runs /proc/self/exe, this program,
// which hands such a command line to the space program's own entry (cli::main_entry). Usage:
// jail-bench [--dir SCRATCH] [--rounds N] (default: a directory of its own under /tmp, removed at
// the end; 50 rounds). Prints a table; exits 1 if any round failed, 77 when not root. ctest runs it
// for three rounds (test jail.entry): a jailed start that fails fails the test.
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
#include "jail/cgroup.h"
#include "jail/seccomp_prebuilt.h"
#include "launch/vmm_probe.h"
#include "store/config.h"
#include "store/context.h"
#include "util/error.h"
#include "util/fs.h"

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

// Adds each "NAME X ms" of a PhaseLog summary to `into`.
void add_phases(const std::string& summary, std::map<std::string, std::vector<double>>& into) {
  size_t pos = 0;
  while (pos < summary.size()) {
    size_t comma = summary.find(", ", pos);
    std::string item =
        summary.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? summary.size() : comma + 2;
    size_t ms = item.rfind(" ms");
    size_t space = item.rfind(' ', ms == std::string::npos ? 0 : ms - 1);
    if (ms == std::string::npos || space == std::string::npos) continue;
    into[item.substr(0, space)].push_back(std::atof(item.c_str() + space + 1));
  }
}

void show(const std::string& what, const std::vector<double>& v) {
  std::printf("  %-52s median %7.3f ms   p90 %7.3f ms\n", what.c_str(), pct(v, 50), pct(v, 90));
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
    store::HostConfig jailed_hc;
    jailed_hc.jail_cgroup_parent = "space-bench";  // never a real sandbox's group
    jail::CgroupLayout layout = jail::detect_layout();
    if (layout.version == jail::CgroupVersion::None) jailed_hc.jail_cgroups = false;
    store::HostConfig bare_hc = jailed_hc;
    bare_hc.jail_enable = false;
    store::Context ctx{dir + "/root", "info", "text"};  // info: the probe logs its phases

    std::vector<double> bare, jailed, compiled, built_in;
    std::vector<double> bare_start, jailed_start, jailed_rest;  // see ProbeResult::start_ms
    std::map<std::string, std::vector<double>> phases;
    for (int n = 0; n < rounds; n++) {
      launch::ProbeResult b = launch::probe_vmm_start(ctx, bare_hc);
      launch::ProbeResult r = launch::probe_vmm_start(ctx, jailed_hc);
      if (b.start_ms < 0 || r.start_ms < 0)
        throw Error("a probe VMM did not log when it started (\"probe: started at monotonic\")");
      bare.push_back(b.ms);
      bare_start.push_back(b.start_ms);
      jailed.push_back(r.ms);
      jailed_start.push_back(r.start_ms);
      jailed_rest.push_back(r.ms - r.start_ms);
      add_phases(r.phases, phases);
      auto t0 = Clock::now();
      for (jail::Role role : {jail::Role::Vmm, jail::Role::Init, jail::Role::Vcpu})
        (void)jail::compile(role);
      compiled.push_back(ms_since(t0));
      t0 = Clock::now();
      for (jail::Role role : {jail::Role::Vmm, jail::Role::Init, jail::Role::Vcpu})
        (void)jail::program(role);
      built_in.push_back(ms_since(t0));
    }
    if (jailed_hc.jail_cgroups) {
      jail::remove_group(layout, jailed_hc.jail_cgroup_parent + "/init");
      jail::remove_group(layout, jailed_hc.jail_cgroup_parent);
    }
    std::printf(
        "a VMM's start as create makes it (launcher, exec, `__vmm --probe`), no VM;\n"
        "%d rounds interleaved (cgroups %s)\n",
        rounds, jailed_hc.jail_cgroups ? jail::version_name(layout.version) : "off");
    show("unjailed: launch to the VMM's ready line", bare);
    show("jailed: the same, the line written inside the jail", jailed);
    std::printf("  jail's cost per VMM start: median %+.3f ms, p90 %+.3f ms\n",
                pct(jailed, 50) - pct(bare, 50), pct(jailed, 90) - pct(bare, 90));
    std::printf("  where it goes:\n");
    show("  unjailed: launch to the VMM's first step", bare_start);
    show("  jailed: the same, through the jail's PID 1", jailed_start);
    std::printf(
        "    the jail's PID 1 (cloned from the launcher, then its spawn): median %+.3f ms\n",
        pct(jailed_start, 50) - pct(bare_start, 50));
    show("  jailed: the VMM's first step to its ready line", jailed_rest);
    std::printf("  inside the jailed VMM (its phases):\n");
    for (auto& [name, v] : phases) show("  " + name, v);
    std::printf("  seccomp programs for the three roles:\n");
    show("  compiled by libseccomp at run time (compile)", compiled);
    show("  built in at build time (program)", built_in);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jail-bench: %s\n", e.what());
    return 1;
  }
}

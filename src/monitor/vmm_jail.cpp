// The jail's entry sequence; see vmm_jail.h.
#include "monitor/vmm_jail.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "jail/cgroup.h"
#include "jail/init.h"
#include "jail/root.h"
#include "jail/seccomp_prebuilt.h"
#include "util/error.h"
#include "util/log.h"

namespace space::monitor {
namespace {

// The cgroup.procs files of `rel`, opened now (no cgroup file system in the jail).
std::vector<Fd> open_procs(const jail::CgroupLayout& layout, const std::string& rel) {
  std::vector<Fd> out;
  if (rel.empty()) return out;
  for (const auto& f : jail::procs_files(layout, rel)) {
    Fd fd(::open(f.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw_errno("open cgroup " + f);
    out.push_back(std::move(fd));
  }
  return out;
}

// Moves process `pid` (0: ourselves), a pid in our PID namespace, into the cgroup whose
// cgroup.procs files are `procs`; a failure is logged (the VMM then runs without its limits, and
// `space stats` shows it outside its group).
void place(std::vector<Fd>& procs, pid_t pid) {
  std::string v = std::to_string(pid);
  for (auto& fd : procs)
    if (::write(fd.get(), v.data(), v.size()) != static_cast<ssize_t>(v.size()))
      log::error("jail init: cannot move process " + v +
                 " into its cgroup: " + std::strerror(errno));
  procs.clear();
}

// The parent after the fork: the jail's PID 1 from now on. It keeps stdio (the log) and the
// uid's claim, drops to the sandbox's uid and waits for the jail to empty.
[[noreturn]] void become_init(pid_t vmm, int uid_lock_fd, const jail::Identity& who,
                              const jail::Program& filter) {
  int keep = uid_lock_fd >= 0 ? ::dup2(uid_lock_fd, 3) : -1;
  ::close_range(keep == 3 ? 4 : 3, ~0U, 0);
  try {
    jail::drop(who, 16);
    if (int err = jail::load(filter)) throw_errno("install the init role's seccomp filter", err);
  } catch (const std::exception& e) {
    log::error(std::string("jail init: ") + e.what());
    ::kill(vmm, SIGKILL);
  }
  jail::serve_as_init(vmm);
}

}  // namespace

jail::Program enter_vmm_jail(const JailPlan& plan, Fd& ready, PhaseLog& phases) {
  jail::Program vmm_filter = jail::program(jail::Role::Vmm, plan.unlisted);
  jail::Program init_filter = jail::program(jail::Role::Init, plan.unlisted);
  jail::Program vcpu_filter = jail::program(jail::Role::Vcpu, plan.unlisted);
  phases.mark("seccomp programs");
  std::vector<Fd> init_procs, own_procs;
  if (!plan.cgroup.empty() || !plan.init_cgroup.empty()) {
    jail::CgroupLayout layout = jail::detect_layout();
    init_procs = open_procs(layout, plan.init_cgroup);
    own_procs = open_procs(layout, plan.cgroup);
  }
  phases.mark("cgroup open");
  // Our own code formats times without libc's time zone code (util/utc.h); this loads the zone
  // now, while files can still be opened, for any library call that wants it later.
  ::tzset();
  jail::enter(plan.mount_point, plan.hostname);
  phases.mark("jail enter");
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork the jailed VMM");
  if (pid > 0) {
    ready.reset();  // the VMM reports; its exit closes the pipe
    place(own_procs, pid);
    place(init_procs, 0);
    become_init(pid, plan.uid_lock_fd, plan.who, init_filter);
  }
  own_procs.clear();
  init_procs.clear();
  phases.mark("fork");
  if (plan.uid_lock_fd >= 0) ::close(plan.uid_lock_fd);  // the jail's PID 1 holds the claim
  jail::drop(plan.who);
  if (int err = jail::load(vmm_filter)) throw_errno("install the VMM's seccomp filter", err);
  phases.mark("jail");
  return vcpu_filter;
}

}  // namespace space::monitor

// The jail's init loop; see init.h. It makes only the calls its seccomp role allows.
#include "jail/init.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>

#include "jail/root.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/process.h"
#include "util/reap.h"

namespace space::jail {
namespace {

// Writes `pid` (0: the caller) into each cgroup.procs file of `procs`, then closes them. Returns
// "" or why a move failed (logged).
std::string place(const std::vector<int>& procs, pid_t pid) {
  std::string v = std::to_string(pid);
  std::string failed;
  for (int fd : procs) {
    Fd file(fd);  // ours: closed here
    if (::write(file.get(), v.data(), v.size()) != static_cast<ssize_t>(v.size())) {
      std::string why = "cannot move process " + v + " into its cgroup: " + std::strerror(errno);
      log::error("jail init: " + why);
      if (failed.empty()) failed = why;
    }
  }
  return failed;
}

// Tells the VMM, through the placed pipe (if any), "p" or kPlacementFailed and `why`; closes it.
void tell(int placed_fd, const std::string& why) {
  if (placed_fd < 0) return;
  Fd pipe(placed_fd);
  std::string msg = why.empty() ? std::string("p") : kPlacementFailed + why;
  if (::write(pipe.get(), msg.data(), msg.size()) != static_cast<ssize_t>(msg.size()))
    log::error(std::string("jail init: cannot tell the VMM: ") + std::strerror(errno));
}

}  // namespace

void refuse_placement(pid_t program, const InitPlan& plan, const std::string& why) {
  log::error("jail init: " + why);
  tell(plan.placed_fd, why);
  serve_as_init(program);
}

void run_init(pid_t program, const InitPlan& plan) {
  // The first move into a group after a while waits for an RCU grace period (jail/cgroup.h,
  // CgroupMoves): the VMM starts meanwhile, and waits for the byte only before it maps guest
  // memory.
  tell(plan.placed_fd, place(plan.program_procs, program));
  place(plan.own_procs, 0);
  try {
    // Its filter has no socket(): it keeps the network namespace it has.
    enter(plan.root_dir, plan.hostname, kKeepNetwork, nullptr, plan.mount_base_fd);
    int keep = plan.uid_lock_fd >= 0 ? ::dup2(plan.uid_lock_fd, 3) : -1;
    ::close_range(keep == 3 ? 4 : 3, ~0U, 0);
    drop(plan.who, 16);
    if (!plan.filter) fail("no seccomp program for the init role");
    if (int err = load(*plan.filter)) throw_errno("install the init role's seccomp filter", err);
  } catch (const std::exception& e) {
    log::error(std::string("jail init: ") + e.what());
    ::kill(program, SIGKILL);
  }
  serve_as_init(program);
}

void serve_as_init(pid_t vmm) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  int code = 1;
  bool vmm_alive = true;
  for (;;) {
    // Reap whatever has ended; stop once nothing is left.
    proc::Reaped got = proc::reap_ended([&](pid_t pid, int status) {
      if (pid != vmm) return;
      code = proc::exit_code_of(status);
      vmm_alive = false;
    });
    if (got.no_children) ::_exit(code);  // the jail is empty
    timespec tick{1, 0};  // and look again now and then, in case a SIGCHLD was merged
    siginfo_t si;
    int sig = ::sigtimedwait(&set, &si, &tick);
    if (sig > 0 && sig != SIGCHLD && vmm_alive) ::kill(vmm, sig);
  }
}

}  // namespace space::jail

// The jail's entry sequence; see vmm_jail.h.
#include "monitor/vmm_jail.h"

#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "jail/init.h"
#include "jail/ns_file.h"
#include "jail/root.h"
#include "jail/seccomp_prebuilt.h"
#include "util/error.h"

namespace space::monitor {

Fd passed_fd(int fd, const std::string& flag) {
  if (fd < 0) return Fd();
  if (::fcntl(fd, F_GETFD) < 0) fail(flag + " " + std::to_string(fd) + " is not open");
  return Fd(fd);
}

namespace {

// A namespace passed as `flag` `fd`, checked to be of `type` (named `what`).
Fd namespace_from_fd(int fd, const std::string& flag, int type, const char* what) {
  Fd ns = passed_fd(fd, flag);
  if (ns && !jail::is_namespace(ns.get(), type))
    fail(flag + " " + std::to_string(fd) + " is not a " + what + " namespace");
  return ns;
}

}  // namespace

Fd network_from_fd(int fd) {
  return namespace_from_fd(fd, "--jail-netns-fd", CLONE_NEWNET, "network");
}

Fd mount_base_from_fd(int fd) {
  return namespace_from_fd(fd, "--jail-mntns-fd", CLONE_NEWNS, "mount");
}

void wait_placed(Fd placed) {
  if (!placed) return;
  char buf[1024];
  std::string got;
  for (;;) {  // "p", or kPlacementFailed and why, then EOF
    ssize_t n = ::read(placed.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("wait for the jail's PID 1 to move the VMM into its cgroups");
    if (n == 0) break;
    got.append(buf, static_cast<size_t>(n));
    if (got[0] == 'p' || got.size() > 4096) break;
  }
  if (!got.empty() && got[0] == 'p') return;
  if (got.size() > 1 && got[0] == jail::kPlacementFailed)
    fail("the VMM was not put in its cgroups, so it would run outside its limits: " +
         got.substr(1));
  fail(
      "the jail's PID 1 could not move the VMM into its cgroups, so it would run outside its "
      "limits (the line before says why)");
}

jail::Program enter_vmm_jail(JailPlan& plan, PhaseLog& phases) {
  jail::Program vmm_filter = jail::program(jail::Role::Vmm, plan.unlisted);
  jail::Program vcpu_filter = jail::program(jail::Role::Vcpu, plan.unlisted);
  phases.mark("seccomp programs");
  // Our own code formats times without libc's time zone code (util/utc.h); this loads the zone
  // now, while files can still be opened, for any library call that wants it later (the
  // launcher sets TZ=UTC0: glibc looks for a zone file of that name, finds none and parses the
  // string; a VMM started otherwise reads /etc/localtime here). Done later, on a vCPU thread,
  // that look-up would meet the thread's filter.
  ::tzset();
  jail::enter(plan.root_dir, plan.hostname, plan.network ? plan.network.get() : jail::kNewNetwork,
              &phases, plan.mount_base ? plan.mount_base.get() : -1);
  plan.network.reset();
  plan.mount_base.reset();
  phases.mark("jail enter");
  jail::drop(plan.who, jail::kVmmMaxFiles, plan.max_file_bytes);
  phases.mark("drop");
  if (int err = jail::load(vmm_filter)) throw_errno("install the VMM's seccomp filter", err);
  phases.mark("jail");
  return vcpu_filter;
}

}  // namespace space::monitor

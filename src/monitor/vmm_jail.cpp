// The jail's entry sequence; see vmm_jail.h.
#include "monitor/vmm_jail.h"

#include <fcntl.h>
#include <time.h>

#include <string>

#include "jail/network.h"
#include "jail/root.h"
#include "jail/seccomp_prebuilt.h"
#include "util/error.h"

namespace space::monitor {

Fd network_from_fd(int fd) {
  if (fd < 0) return Fd();
  if (::fcntl(fd, F_GETFD) < 0) fail("--jail-netns-fd " + std::to_string(fd) + " is not open");
  Fd network(fd);
  if (!jail::is_network_namespace(network.get()))
    fail("--jail-netns-fd " + std::to_string(fd) + " is not a network namespace");
  return network;
}

jail::Program enter_vmm_jail(JailPlan& plan, PhaseLog& phases) {
  jail::Program vmm_filter = jail::program(jail::Role::Vmm, plan.unlisted);
  jail::Program vcpu_filter = jail::program(jail::Role::Vcpu, plan.unlisted);
  phases.mark("seccomp programs");
  // Our own code formats times without libc's time zone code (util/utc.h); this loads the zone
  // now, while files can still be opened, for any library call that wants it later.
  ::tzset();
  jail::enter(plan.mount_point, plan.hostname,
              plan.network ? plan.network.get() : jail::kNewNetwork);
  plan.network.reset();
  phases.mark("jail enter");
  jail::drop(plan.who);
  if (int err = jail::load(vmm_filter)) throw_errno("install the VMM's seccomp filter", err);
  phases.mark("jail");
  return vcpu_filter;
}

}  // namespace space::monitor

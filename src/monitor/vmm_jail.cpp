// The jail's entry sequence; see vmm_jail.h.
#include "monitor/vmm_jail.h"

#include <time.h>

#include "jail/root.h"
#include "jail/seccomp_prebuilt.h"
#include "util/error.h"

namespace space::monitor {

jail::Program enter_vmm_jail(const JailPlan& plan, PhaseLog& phases) {
  jail::Program vmm_filter = jail::program(jail::Role::Vmm, plan.unlisted);
  jail::Program vcpu_filter = jail::program(jail::Role::Vcpu, plan.unlisted);
  phases.mark("seccomp programs");
  // Our own code formats times without libc's time zone code (util/utc.h); this loads the zone
  // now, while files can still be opened, for any library call that wants it later.
  ::tzset();
  jail::enter(plan.mount_point, plan.hostname);
  phases.mark("jail enter");
  jail::drop(plan.who);
  if (int err = jail::load(vmm_filter)) throw_errno("install the VMM's seccomp filter", err);
  phases.mark("jail");
  return vcpu_filter;
}

}  // namespace space::monitor

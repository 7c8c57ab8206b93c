// The VMM's control operations (proto/control.h): one handler per request type, run on the event
// loop thread. handle_control_line() decodes a request line, runs its handler and encodes the
// reply, turning any failure (a malformed line included) into an {"ok": false} reply. The
// descriptors a request brought (proto/control.h says which) are the handler's to use.
#pragma once
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "monitor/guest_sync.h"
#include "monitor/vmm_main.h"
#include "util/event_loop.h"
#include "util/fd.h"
#include "vmm/machine.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {

struct ControlContext {
  vmm::Machine& machine;
  EventLoop& loop;
  bool& stop_requested;          // set by "stop"
  const VmRun& run;              // this VMM's run: root, memory base, files, filters
  std::vector<pid_t>& branches;  // branch VMMs forked from this one, reaped on SIGCHLD
  GuestSync& sync;               // kicked after a resume: the guest's clock and entropy
  int64_t running_since_ms = 0;  // Unix ms when this VMM started the guest
};

// Answers one request line, which came with `fds`, with a reply line; never throws.
std::string handle_control_line(ControlContext& ctx, std::string_view line, std::vector<Fd>& fds);

}  // namespace space::monitor

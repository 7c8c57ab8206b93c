// The VMM's control operations (proto/control.h): one handler per request type, run on the event
// loop thread. handle_control_line() decodes a request line, runs its handler and encodes the
// reply, turning any failure (a malformed line included) into an {"ok": false} reply.
#pragma once
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "monitor/guest_sync.h"
#include "util/event_loop.h"
#include "vmm/machine.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {

struct ControlContext {
  vmm::Machine& machine;
  EventLoop& loop;
  bool& stop_requested;                          // set by "stop"
  const std::string& root;                       // the run directory (--root)
  const vmm::snapshot::MemoryBase& memory_base;  // the file guest RAM privately maps, if any
  std::vector<pid_t>& branches;  // branch VMMs forked from this one, reaped on SIGCHLD
  GuestSync& sync;               // kicked after a resume: the guest's clock and entropy
};

// Answers one request line with a reply line; never throws.
std::string handle_control_line(ControlContext& ctx, std::string_view line);

}  // namespace space::monitor

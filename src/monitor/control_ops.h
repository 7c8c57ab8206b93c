// The VMM's control operations, one JSON request per call (see control_server.h for framing):
//   {"op":"ping"}                     -> {"ok":true,"status":"running"|"paused","pid":N}
//   {"op":"pause"[,"sync":true]}      -> {"ok":true,"status":"paused","pause_us":N}
//      with "sync", also fdatasyncs the disk images once parked (a branch then copies them)
//   {"op":"resume"}                   -> {"ok":true,"status":"running","resume_us":N}
//      then says Hello to guest-init (guest_sync.h), without waiting for it
//   {"op":"snapshot","dir":"/abs"}    -> {"ok":true,"status":"paused","vmstate_bytes":N,
//        "memory_bytes":N,"memory_data_bytes":N,"pause_us":N,"ms":{"capture":..,"vmstate":..,
//        "memory":..,"disk_sync":..,"total":..}}
//      pauses, writes dir/vmstate and dir/memory (a diff against the mapped memory file, when
//      there is one: snapshot_memory.h), fdatasyncs the disk image and stays paused
//      (also on failure): the caller then sends resume or stop.
//   {"op":"branch","targets":[{"id":..,"dir":..,"run_dir":..},..]}
//                                     -> {"ok":true,"branches":[{"id":..,"pid":N},..],
//        "ms":{"capture":..,"fork":..,"ready":..}}; requires paused: forks one branch VMM per
//        target (branch_fork.h) and stays paused.
//   {"op":"stop"}                     -> {"ok":true}; the VMM exits.
// Failures are thrown as space::Error; the server turns them into {"ok":false,"error":...}.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "util/json.h"
#include "util/event_loop.h"
#include "monitor/guest_sync.h"
#include "vmm/machine.h"
#include "vmm/snapshot_memory.h"

namespace space::monitor {

struct ControlContext {
  vmm::Machine& machine;
  EventLoop& loop;
  bool& stop_requested;  // set by "stop"
  const std::string& root;  // the run directory (--root)
  const vmm::snapshot::MemoryBase& memory_base;  // the file guest RAM privately maps, if any
  std::vector<pid_t>& branches;    // branch VMMs forked from this one, reaped on SIGCHLD
  GuestSync& sync;                 // kicked after a resume: the guest's clock and entropy
};

// Serves one request; runs on the event loop thread.
json::Value handle_control(ControlContext& ctx, const json::Value& req);

}  // namespace space::monitor

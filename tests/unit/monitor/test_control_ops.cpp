// Unit tests for monitor/control_ops, the VMM's control handlers, on a real VM (each case needs
// /dev/kvm) running support/tiny_guest.h's counting guest: request lines as the CLI sends them,
// answered by handle_control_line() with what the machine then does (pause parks it, resume
// lets it count again, stats reads its clock and vCPUs, stop ends the event loop), and any bad
// line answered {"ok": false} with the reason instead of a throw.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "monitor/control_ops.h"
#include "proto/control.h"
#include "support/tiny_guest.h"

using namespace space;
using namespace space::testing;
namespace control = space::proto::control;

namespace {

struct Vmm : CountingMachine {
  bool stop_requested = false;
  monitor::VmRun run;
  std::vector<pid_t> branches;
  monitor::GuestSync sync{rig.loop, rig.spec.vsock_uds, "t", 0};
  monitor::ControlContext ctx{machine, rig.loop, stop_requested, run, branches, sync, 1234};

  template <class Req>
  control::ReplyOf<Req> call(const Req& req) {
    std::vector<Fd> fds;
    return control::decode_reply<control::ReplyOf<Req>>(
        monitor::handle_control_line(ctx, control::encode_request(req), fds));
  }
};

}  // namespace

TEST_CASE("control ops: ping, pause, stats, resume and stop drive the machine (needs /dev/kvm)" *
          test::needs_kvm()) {
  Vmm v;
  REQUIRE(eventually([&] { return counter(v.machine) > 1000; }));
  auto ping = v.call(control::PingRequest{});
  CHECK(ping.status == control::RunState::Running);
  CHECK(ping.pid == ::getpid());

  auto paused = v.call(control::PauseRequest{});
  CHECK(paused.status == control::RunState::Paused);
  CHECK(v.machine.paused());
  uint64_t at_pause = counter(v.machine);
  std::this_thread::sleep_for(20ms);
  CHECK(counter(v.machine) == at_pause);
  CHECK(v.call(control::PingRequest{}).status == control::RunState::Paused);

  auto stats = v.call(control::StatsRequest{});
  CHECK(stats.status == control::RunState::Paused);
  CHECK(stats.vcpus == 1);
  CHECK(stats.guest_clock_ns > 0);
  CHECK(stats.running_since_ms == 1234);

  auto resumed = v.call(control::ResumeRequest{});
  CHECK(resumed.status == control::RunState::Running);
  CHECK_FALSE(v.machine.paused());
  CHECK(eventually([&] { return counter(v.machine) > at_pause + 1000; }));

  CHECK_FALSE(v.stop_requested);
  v.call(control::StopRequest{});
  CHECK(v.stop_requested);
  CHECK(v.rig.loop.stopping());
}

TEST_CASE(
    "control ops: a malformed or refused request is an error reply, never a throw (needs "
    "/dev/kvm)" *
    test::needs_kvm()) {
  Vmm v;
  std::vector<Fd> fds;
  std::string reply = monitor::handle_control_line(v.ctx, "{\"op\": \"nope\"}\n", fds);
  CHECK(reply.find("false") != std::string::npos);
  CHECK_THROWS_AS(control::decode_reply<control::PingReply>(reply), Error);
  reply = monitor::handle_control_line(v.ctx, "not json\n", fds);
  CHECK(reply.find("false") != std::string::npos);
  // Only a gvisor pool member adopts a sandbox.
  CHECK_THROWS_WITH_AS(v.call(control::AdoptRequest{"s1", 0, ""}),
                       doctest::Contains("only a gvisor pool member"), Error);
  // A snapshot needs the descriptor of its directory.
  CHECK_THROWS_AS(v.call(control::SnapshotRequest{"/tmp/x", false}), Error);
  CHECK_FALSE(v.machine.paused());  // none of that stopped the guest
}

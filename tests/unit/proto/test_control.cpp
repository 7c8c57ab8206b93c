// Unit tests for proto/control: every request and reply round-trips through its encoder and
// decoder, the wire spelling stays what older VMMs and CLIs speak, and every malformed request
// (unknown op, unknown field, wrong kinds, relative paths, not JSON, not an object) is an Error
// that names the problem.
#include <doctest/doctest.h>

#include <string>

#include "proto/control.h"
#include "util/error.h"

using namespace space;
namespace control = space::proto::control;

namespace {
template <class T>
T round_trip_request(const T& req) {
  control::Request back = control::decode_request(control::encode_request(req));
  REQUIRE(std::holds_alternative<T>(back));
  return std::get<T>(back);
}
}  // namespace

TEST_CASE("control requests round-trip and keep their wire names") {
  CHECK(control::encode_request(control::PingRequest{}) == "{\"op\":\"ping\"}\n");
  CHECK(control::encode_request(control::PauseRequest{}) == "{\"op\":\"pause\"}\n");
  CHECK(control::encode_request(control::PauseRequest{.sync = true}) ==
        "{\"op\":\"pause\",\"sync\":true}\n");
  CHECK(control::encode_request(control::StopRequest{}) == "{\"op\":\"stop\"}\n");
  CHECK(round_trip_request(control::PauseRequest{.sync = true}).sync);
  CHECK_FALSE(round_trip_request(control::PauseRequest{}).sync);
  CHECK(round_trip_request(control::SnapshotRequest{"/a/b"}).dir == "/a/b");
  CHECK_FALSE(round_trip_request(control::SnapshotRequest{"/a/b"}).pagemap);
  CHECK(round_trip_request(control::SnapshotRequest{"/a/b", true}).pagemap);
  CHECK(control::fd_count(control::SnapshotRequest{"/a", false}) == 1);
  CHECK(control::fd_count(control::SnapshotRequest{"/a", true}) == 2);
  json::Value cfg = json::Value::object();
  cfg.set("id", "x-1");
  control::BranchRequest b;
  b.targets = {{"x-1", "/s/x-1", "/run/x-1", cfg},
               {"x-2", "/s/x-2", "/run/x-2", cfg, true, true, 5}};
  b.resume = true;
  auto b2 = round_trip_request(b);
  REQUIRE(b2.targets.size() == 2);
  CHECK(b2.targets[1].id == "x-2");
  CHECK(b2.targets[1].dir == "/s/x-2");
  CHECK(b2.targets[1].run_dir == "/run/x-2");
  CHECK(b2.targets[1].config == cfg);
  CHECK_FALSE(b2.targets[0].image);
  CHECK_FALSE(b2.targets[0].network);
  CHECK(b2.targets[0].cgroup_fds == 0);
  CHECK(b2.targets[1].image);
  CHECK(b2.targets[1].network);
  CHECK(b2.targets[1].cgroup_fds == 5);
  // Descriptors per target: logs, disk, sockets and run directory, the image disk, cgroups.
  CHECK(control::fd_count(b2.targets[0]) == 6);
  CHECK(control::fd_count(b2.targets[1]) == 12);
  CHECK(b2.resume);
  for (const control::Request& r :
       {control::Request(control::PingRequest{}), control::Request(control::ResumeRequest{}),
        control::Request(control::StopRequest{})})
    CHECK(control::decode_request(control::encode_request(r)).index() == r.index());
  CHECK(control::op_name(control::BranchRequest{}) == "branch");
  CHECK(control::op_name(control::SnapshotRequest{}) == "snapshot");
}

TEST_CASE("control replies round-trip") {
  auto ping = control::decode_reply<control::PingReply>(
      control::encode_reply(control::PingReply{control::RunState::Paused, 77}));
  CHECK(ping.status == control::RunState::Paused);
  CHECK(ping.pid == 77);
  auto pause = control::decode_reply<control::PauseReply>(
      control::encode_reply(control::PauseReply{control::RunState::Paused, 120}));
  CHECK(pause.pause_us == 120);
  auto resume = control::decode_reply<control::ResumeReply>(
      control::encode_reply(control::ResumeReply{control::RunState::Running, 9}));
  CHECK(resume.status == control::RunState::Running);
  CHECK(resume.resume_us == 9);
  control::SnapshotReply s;
  s.vmstate_bytes = 9000;
  s.memory_bytes = 256u << 20;
  s.memory_data_bytes = 4096;
  s.memory_diff = true;
  s.pause_us = 100;
  s.ms = {{"pause", 0.1}, {"memory", 2.5}, {"total", 3.0}};
  auto s2 = control::decode_reply<control::SnapshotReply>(control::encode_reply(s));
  CHECK(s2.vmstate_bytes == 9000);
  CHECK(s2.memory_bytes == 256u << 20);
  CHECK(s2.memory_data_bytes == 4096);
  CHECK(s2.memory_diff);
  CHECK(s2.ms == s.ms);
  control::BranchReply b;
  b.branches = {{"a", 10}, {"b", 11}};
  b.resumed = true;
  b.capture_ms = 1.5;
  b.fork_ms = 2.0;
  b.ready_ms = 3.25;
  auto b2 = control::decode_reply<control::BranchReply>(control::encode_reply(b));
  REQUIRE(b2.branches.size() == 2);
  CHECK(b2.branches[1].id == "b");
  CHECK(b2.branches[1].pid == 11);
  CHECK(b2.resumed);
  CHECK(b2.ready_ms == 3.25);
  CHECK_NOTHROW(
      control::decode_reply<control::StopReply>(control::encode_reply(control::StopReply{})));
}

TEST_CASE("malformed control requests are refused, naming the problem") {
  auto refused = [](const std::string& line, const std::string& why) {
    CAPTURE(line);
    CHECK_THROWS_WITH_AS(control::decode_request(line), doctest::Contains(why.c_str()), Error);
  };
  refused("", "invalid JSON");
  refused("{\"op\":", "invalid JSON");
  refused("[1]", "must be a JSON object");
  refused("{}", "needs \"op\"");
  refused("{\"op\":7}", "needs \"op\"");
  refused("{\"op\":\"reboot\"}", "unknown control operation \"reboot\"");
  refused("{\"op\":\"ping\",\"x\":1}", "unknown field \"x\"");
  refused("{\"op\":\"pause\",\"sync\":\"yes\"}", "\"sync\" must be true or false");
  refused("{\"op\":\"snapshot\"}", "\"dir\" is missing");
  refused("{\"op\":\"snapshot\",\"dir\":\"rel/dir\"}", "\"dir\" must be an absolute path");
  refused("{\"op\":\"snapshot\",\"dir\":5}", "expected a string");
  refused("{\"op\":\"branch\"}", "no member \"targets\"");
  refused("{\"op\":\"branch\",\"targets\":{}}", "\"targets\" must be an array");
  refused("{\"op\":\"branch\",\"targets\":[1]}", "each target must be an object");
  refused("{\"op\":\"branch\",\"targets\":[{\"id\":\"a\",\"dir\":\"/d\",\"run_dir\":\"r\"}]}",
          "\"run_dir\" must be an absolute path");
  refused("{\"op\":\"branch\",\"targets\":[{\"id\":\"a\",\"dir\":\"/d\",\"run_dir\":\"/r\"}]}",
          "no member \"config\"");
  refused(
      "{\"op\":\"branch\",\"targets\":[{\"id\":\"a\",\"dir\":\"/d\",\"run_dir\":\"/r\","
      "\"config\":[]}]}",
      "\"config\" must be an object");
  refused(
      "{\"op\":\"branch\",\"targets\":[{\"id\":\"a\",\"dir\":\"/d\",\"run_dir\":\"/r\","
      "\"config\":{},\"cgroup_fds\":9}]}",
      "cgroup_fds");
  refused("{\"op\":\"snapshot\",\"dir\":\"/d\",\"pagemap\":1}", "pagemap");
  refused("{\"op\":\"branch\",\"targets\":[],\"resume\":1}", "\"resume\" must be true or false");
  // Errors say which request they are about.
  refused("{\"op\":\"snapshot\",\"dir\":\"x\"}", "control request \"snapshot\"");
}

TEST_CASE("malformed control replies are refused; error replies carry message and hint") {
  CHECK_THROWS_WITH_AS(control::decode_reply<control::PingReply>("{\"status\":\"running\"}"),
                       doctest::Contains("no \"ok\""), Error);
  CHECK_THROWS_WITH_AS(
      control::decode_reply<control::PingReply>("{\"ok\":true,\"status\":\"gone\",\"pid\":1}"),
      doctest::Contains("neither running nor paused"), Error);
  CHECK_THROWS_WITH_AS(control::decode_reply<control::PingReply>(
                           "{\"ok\":true,\"status\":\"running\",\"pid\":\"1\"}"),
                       doctest::Contains("\"pid\" must be an integer"), Error);
  try {
    control::decode_reply<control::StopReply>(
        "{\"ok\":false,\"error\":\"busy\",\"hint\":\"wait\"}");
    FAIL("an error reply must throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "busy");
    CHECK(e.hint() == "wait");
  }
}

TEST_CASE("adopt: a pool member's new sandbox, and its expiry, round-trip; bad ones refused") {
  CHECK(control::encode_request(control::AdoptRequest{"p1"}) ==
        "{\"op\":\"adopt\",\"id\":\"p1\"}\n");
  auto a = round_trip_request(control::AdoptRequest{"p1", 1700000000, "checkpoint"});
  CHECK(a.id == "p1");
  CHECK(a.expires_at == 1700000000);
  CHECK(a.on_expiry == "checkpoint");
  auto b = round_trip_request(control::AdoptRequest{"p2"});
  CHECK(b.expires_at == 0);
  CHECK(b.on_expiry.empty());
  CHECK(control::op_name(control::AdoptRequest{}) == "adopt");
  CHECK(control::decode_reply<control::AdoptReply>(control::encode_reply(control::AdoptReply{4242}))
            .pid == 4242);
  auto refused = [](const std::string& line, const std::string& why) {
    CAPTURE(line);
    CHECK_THROWS_WITH_AS(control::decode_request(line), doctest::Contains(why.c_str()), Error);
  };
  refused("{\"op\":\"adopt\"}", "\"id\"");
  refused("{\"op\":\"adopt\",\"id\":\"\"}", "\"id\" must not be empty");
  refused("{\"op\":\"adopt\",\"id\":\"p\",\"expires_at\":5}", "on_expiry");
  refused("{\"op\":\"adopt\",\"id\":\"p\",\"expires_at\":5,\"on_expiry\":\"keep\"}", "on_expiry");
  refused("{\"op\":\"adopt\",\"id\":\"p\",\"dir\":\"/x\"}", "unknown field \"dir\"");
}

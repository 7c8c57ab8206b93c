// Unit tests for core/control_client against a fake control.sock: the request line each typed
// request sends, a typed reply's fields, an error reply (message and hint), a reply that is not
// JSON, a reply without a required field, and a server that closes without replying.
#include <doctest/doctest.h>

#include <string>

#include "core/control_client.h"
#include "support/fake_server.h"
#include "util/error.h"

using namespace space;
using space::test::FakeServer;
using space::test::read_line_blocking;
using space::test::write_str;
namespace control = space::proto::control;

TEST_CASE("control_call sends typed requests and decodes typed replies") {
  FakeServer srv([](int fd, int) {
    std::string req = read_line_blocking(fd);
    if (req == R"({"op":"ping"})")
      write_str(fd, "{\"ok\":true,\"status\":\"running\",\"pid\":42}\n");
    else if (req == R"({"op":"pause","sync":true})")
      write_str(fd, "{\"ok\":false,\"error\":\"no guest\",\"hint\":\"resume it\"}\n");
    else if (req == R"({"op":"resume"})")
      write_str(fd, "not json\n");
    else if (req == R"({"op":"snapshot","dir":"/s"})")
      write_str(fd, "{\"ok\":true,\"status\":\"paused\"}\n");  // lacks its byte counts
    // stop: reply nothing, close
  });
  auto r = core::control_call(srv.path, control::PingRequest{}, 2000);
  CHECK(r.status == control::RunState::Running);
  CHECK(r.pid == 42);
  try {
    core::control_call(srv.path, control::PauseRequest{.sync = true}, 2000);
    FAIL("an error reply must throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "control request pause: no guest");
    CHECK(e.hint() == "resume it");
  }
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, control::ResumeRequest{}, 2000),
                       doctest::Contains("invalid JSON"), Error);
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, control::SnapshotRequest{"/s"}, 2000),
                       doctest::Contains("\"vmstate_bytes\" is missing"), Error);
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, control::StopRequest{}, 2000),
                       doctest::Contains("without replying"), Error);
}

// Unit tests for core/control_client against a fake control.sock: the request line each typed
// request sends, a typed reply's fields, an error reply (message and hint), a reply that is not
// JSON, a reply without a required field, and a server that closes without replying; a VMM that
// is stopped (SIGSTOP) makes the call fail at once with an error naming the stop.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "launch/control_client.h"
#include "support/fake_server.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/socket.h"

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
  auto r = launch::control_call(srv.path, control::PingRequest{}, 2000);
  CHECK(r.status == control::RunState::Running);
  CHECK(r.pid == 42);
  try {
    launch::control_call(srv.path, control::PauseRequest{.sync = true}, 2000);
    FAIL("an error reply must throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "control request pause: no guest");
    CHECK(e.hint() == "resume it");
  }
  CHECK_THROWS_WITH_AS(launch::control_call(srv.path, control::ResumeRequest{}, 2000),
                       doctest::Contains("invalid JSON"), Error);
  CHECK_THROWS_WITH_AS(launch::control_call(srv.path, control::SnapshotRequest{"/s"}, 2000),
                       doctest::Contains("\"vmstate_bytes\" is missing"), Error);
  CHECK_THROWS_WITH_AS(launch::control_call(srv.path, control::StopRequest{}, 2000),
                       doctest::Contains("without replying"), Error);
}

TEST_CASE("control_call to a stopped VMM fails at once, saying so") {
  // A child listens on the socket and never answers; stopped, it cannot. The call's own timeout
  // is a minute; the error names the stop (it comes after the first half-second check).
  test::TempDir dir("stopped");
  const std::string path = dir.path + "/control.sock";
  Pipe ready = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ready.read.reset();
    Fd l = net::unix_listen(path);
    char c = 'r';
    if (::write(ready.write.get(), &c, 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ready.write.reset();
  char c = 0;
  REQUIRE(read_full(ready.read.get(), &c, 1) == 1);
  REQUIRE(::kill(pid, SIGSTOP) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, WUNTRACED) == pid);
  REQUIRE(WIFSTOPPED(status));
  try {
    launch::control_call(path, control::PauseRequest{}, 60000);
    FAIL("a stopped VMM cannot answer");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("(pid " + std::to_string(pid) + ") is stopped") !=
          std::string::npos);
    CHECK(e.hint().find("kill -CONT " + std::to_string(pid)) != std::string::npos);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
}

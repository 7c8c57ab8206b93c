// Unit tests for core/control_client against a fake control.sock: a reply's fields, an error
// reply, a reply that is not JSON, and a server that closes without replying.
#include <doctest/doctest.h>

#include <string>

#include "core/control_client.h"
#include "support/fake_server.h"
#include "util/error.h"
#include "util/json.h"

using namespace space;
using space::test::FakeServer;
using space::test::read_line_blocking;
using space::test::write_str;

TEST_CASE("control_call") {
  FakeServer srv([](int fd, int) {
    std::string req = read_line_blocking(fd);
    if (req == R"({"op":"ping"})") write_str(fd, "{\"ok\":true,\"status\":\"running\"}\n");
    else if (req == R"({"op":"bad"})") write_str(fd, "{\"ok\":false,\"error\":\"unknown op\"}\n");
    else if (req == R"({"op":"garbage"})") write_str(fd, "not json\n");
    // "silent": reply nothing, close
  });
  json::Value ping = json::Value::object();
  ping.set("op", "ping");
  auto r = core::control_call(srv.path, ping, 2000);
  CHECK(r.at("status").as_string() == "running");
  json::Value bad = json::Value::object();
  bad.set("op", "bad");
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, bad, 2000), "control request bad: unknown op",
                       Error);
  bad.set("op", "garbage");
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, bad, 2000),
                       doctest::Contains("invalid JSON"), Error);
  bad.set("op", "silent");
  CHECK_THROWS_WITH_AS(core::control_call(srv.path, bad, 2000),
                       doctest::Contains("without replying"), Error);
}

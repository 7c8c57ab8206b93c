// Unit tests for core/stats: a sandbox whose VMM is a stand-in process (no control socket) gets
// the figures /proc and the store give, and nulls for what only its VMM could say; a stopped one
// only its disk; an unknown id is an error.
#include <doctest/doctest.h>

#include <string>

#include "report/stats.h"
#include "support/fake_sandbox.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

TEST_CASE("stats of a sandbox whose VMM is alive but does not answer, and of a stopped one") {
  test::FakeSandbox sb("st1");
  fs::write_file_atomic(sb.p.dir + "/rootfs.ext4", std::string(64 * 1024, 'x'));
  auto all = report::sandbox_stats(sb.ctx, {"st1"});
  REQUIRE(all.size() == 1);
  const auto& s = all[0];
  CHECK(s.id == "st1");
  CHECK(s.status == store::Status::Running);
  CHECK(s.pid == sb.vmm.pid());
  CHECK(s.disk_bytes >= 64 * 1024);
  CHECK(s.rss_bytes.has_value());  // the stand-in's memory, from /proc
  CHECK(*s.rss_bytes > 0);
  CHECK(s.pss_bytes.has_value());
  CHECK(s.cpu_ns.has_value());
  CHECK_FALSE(s.guest_uptime_ns.has_value());  // no control socket to ask
  CHECK_FALSE(s.memory_bytes.has_value());     // no cgroup
  auto v = report::stats_json(s);
  CHECK(v.at("id").as_string() == "st1");
  CHECK(v.at("guest_uptime_ns").is_null());
  CHECK(v.at("rss_bytes").as_int() > 0);

  sb.vmm = proc::Child();  // the VMM is gone: stopped
  auto stopped = report::sandbox_stats(sb.ctx, {})[0];
  CHECK(stopped.status == store::Status::Stopped);
  CHECK(stopped.pid == 0);
  CHECK_FALSE(stopped.rss_bytes.has_value());
  CHECK(stopped.disk_bytes >= 64 * 1024);
  CHECK(report::stats_json(stopped).at("pid").is_null());

  CHECK_THROWS_WITH_AS(report::sandbox_stats(sb.ctx, {"nope"}), doctest::Contains("does not exist"),
                       Error);
}

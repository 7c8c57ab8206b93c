// Unit tests for store/state: state.json round trip, strict reading, observed liveness, the lock,
// the creation timestamp, and the jail, expiry and disk-limit fields.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <string>

#include "store/state.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"

using namespace space;

namespace {
store::SandboxState sample() {
  store::SandboxState s;
  s.id = "sb-1";
  s.status = store::Status::Running;
  s.pid = 1234;
  s.pid_start_time = 987654321;
  s.created = "2025-01-31T12:00:00Z";
  s.template_name = "python";
  s.image = "py";
  s.vcpus = 2;
  s.memory_mib = 512;
  s.uid = 1000000042;
  s.cgroup = "space/sb-1";
  s.expires = "2025-01-31T14:00:00Z";
  s.on_expiry = "checkpoint";
  s.disk_limit = 5ull << 30;
  s.annotations = {{"owner", "ci"}, {"note", "a \"quoted\" value"}};
  return s;
}

void check_same(const store::SandboxState& a, const store::SandboxState& b) {
  CHECK(a.id == b.id);
  CHECK(a.status == b.status);
  CHECK(a.pid == b.pid);
  CHECK(a.pid_start_time == b.pid_start_time);
  CHECK(a.created == b.created);
  CHECK(a.template_name == b.template_name);
  CHECK(a.parent == b.parent);
  CHECK(a.image == b.image);
  CHECK(a.vcpus == b.vcpus);
  CHECK(a.memory_mib == b.memory_mib);
  CHECK(a.uid == b.uid);
  CHECK(a.cgroup == b.cgroup);
  CHECK(a.expires == b.expires);
  CHECK(a.on_expiry == b.on_expiry);
  CHECK(a.disk_limit == b.disk_limit);
  CHECK(a.annotations == b.annotations);
}
}  // namespace

TEST_CASE("state.json round trip") {
  test::TempDir d("state");
  std::string path = d.path + "/state.json";
  store::write_state(path, sample());
  check_same(store::read_state(path), sample());
  // Fixed key order; empty parent is null.
  auto v = json::parse(fs::read_file(path));
  CHECK(v.as_object()[0].first == "id");
  CHECK(v.at("parent").is_null());
  CHECK(v.at("template").as_string() == "python");
  CHECK(v.at("image").as_string() == "py");
  auto no_image = sample();
  no_image.image.clear();
  CHECK(store::state_to_json(no_image).at("image").is_null());
  // Jail, expiry and disk limit: null when there is none.
  store::SandboxState plain;
  plain.id = "p";
  auto pj = store::state_to_json(plain);
  CHECK(pj.at("uid").as_int() == 0);
  CHECK(pj.at("cgroup").is_null());
  CHECK(pj.at("expires").is_null());
  CHECK(pj.at("on_expiry").is_null());
  CHECK(pj.at("disk_limit_bytes").is_null());
  auto back = store::state_from_json(pj);
  CHECK(back.expires.empty());
  CHECK(back.disk_limit == 0);
  // Overwrite keeps it whole.
  auto s2 = sample();
  s2.status = store::Status::Paused;
  store::write_state(path, s2);
  CHECK(store::read_state(path).status == store::Status::Paused);
}

TEST_CASE("state.json: idle settings round trip, null when none, absent in older records") {
  store::SandboxState s;
  s.id = "idle1";
  s.status = store::Status::Paused;
  CHECK(store::state_to_json(s).find("idle")->is_null());
  s.idle_pause_ms = 30'000;
  s.idle_checkpoint_ms = 0;
  s.idle_asleep = true;
  json::Value v = store::state_to_json(s);
  const json::Value* idle = v.find("idle");
  REQUIRE(idle != nullptr);
  CHECK(json::uint_field(*idle, "pause_after_ms") == 30'000);
  CHECK(idle->find("checkpoint_after_ms")->is_null());
  CHECK(idle->find("asleep")->as_bool());
  store::SandboxState back = store::state_from_json(v);
  CHECK(back.idle_pause_ms == 30'000);
  CHECK(back.idle_checkpoint_ms == 0);
  CHECK(back.idle_asleep);
  store::SandboxState old = store::state_from_json(json::parse(R"({"id":"o","status":"running"})"));
  CHECK(old.idle_pause_ms == 0);
  CHECK_FALSE(old.idle_asleep);
  CHECK_THROWS_WITH_AS(
      store::state_from_json(json::parse(R"({"id":"o","status":"running","idle":5})")),
      doctest::Contains("idle"), Error);
  CHECK_THROWS_WITH_AS(store::state_from_json(
                           json::parse(R"({"id":"o","status":"running","idle":{"asleep":"yes"}})")),
                       doctest::Contains("idle.asleep"), Error);
}

TEST_CASE("state.json reading is checked") {
  auto v = store::state_to_json(sample());
  v.set("status", "exploded");
  CHECK_THROWS_WITH_AS(store::state_from_json(v), "field \"status\": unknown status \"exploded\"",
                       Error);
  v = store::state_to_json(sample());
  v.set("pid", "12");
  CHECK_THROWS_AS(store::state_from_json(v), Error);
  v = store::state_to_json(sample());
  v.set("id", "../etc");
  CHECK_THROWS_AS(store::state_from_json(v), Error);
  v = store::state_to_json(sample());
  v.set("expires", "tomorrow");
  CHECK_THROWS_WITH_AS(store::state_from_json(v), doctest::Contains("RFC 3339"), Error);
  v = store::state_to_json(sample());
  v.set("on_expiry", "explode");
  CHECK_THROWS_WITH_AS(store::state_from_json(v), doctest::Contains("on_expiry"), Error);
  // Unknown keys are tolerated (newer writers may add fields); optional ones default.
  auto minimal = json::parse(R"({"id":"x","status":"stopped","future":1})");
  auto s = store::state_from_json(minimal);
  CHECK(s.pid == 0);
  CHECK(s.vcpus == 1);
  CHECK(s.memory_mib == 256);
  test::TempDir d("state");
  fs::write_file_atomic(d.path + "/bad.json", "{\"id\":");
  try {
    store::read_state(d.path + "/bad.json");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("bad.json: invalid JSON at line 1, column 7") !=
          std::string::npos);
  }
}

TEST_CASE("observed status derives liveness from pid and start time") {
  auto s = sample();
  s.pid = ::getpid();
  s.pid_start_time = proc::start_time(::getpid()).value();
  CHECK(store::observed_status(s) == store::Status::Running);
  s.status = store::Status::Paused;
  CHECK(store::observed_status(s) == store::Status::Paused);
  s.pid_start_time += 1;  // same pid, another process (pid reuse)
  CHECK(store::observed_status(s) == store::Status::Stopped);
  s.pid_start_time -= 1;
  s.pid = 0x7ffffff0;  // no such process
  s.status = store::Status::Running;
  CHECK(store::observed_status(s) == store::Status::Stopped);
  s.status = store::Status::Creating;
  s.pid = 0;  // not started yet
  CHECK(store::observed_status(s) == store::Status::Creating);
  s.status = store::Status::Checkpointed;
  CHECK(store::observed_status(s) == store::Status::Checkpointed);
}

TEST_CASE("SandboxLock is exclusive") {
  test::TempDir d("state");
  std::string lock = d.path + "/lock";
  {
    store::SandboxLock a(lock);
    CHECK(a.held());
    store::SandboxLock b(lock, true);
    CHECK_FALSE(b.held());
  }
  store::SandboxLock c(lock, true);
  CHECK(c.held());
  // A vanished sandbox directory: nonblocking says "not held", blocking throws.
  store::SandboxLock gone(d.path + "/nope/lock", true);
  CHECK_FALSE(gone.held());
  CHECK_THROWS_AS(store::SandboxLock(d.path + "/nope/lock"), Error);
  CHECK(gone.missing());
  // Existing: a missing file is not made, blocking or not.
  store::SandboxLock absent(d.path + "/other", false, store::LockFile::Existing);
  CHECK_FALSE(absent.held());
  CHECK(absent.missing());
  CHECK_FALSE(fs::exists(d.path + "/other"));
  store::SandboxLock busy(lock, true, store::LockFile::Existing);
  CHECK_FALSE(busy.held());  // c has it
  CHECK_FALSE(busy.missing());
}

TEST_CASE("rfc3339_now looks right") {
  std::string t = store::rfc3339_now();
  REQUIRE(t.size() == 20);
  CHECK(t[4] == '-');
  CHECK(t[10] == 'T');
  CHECK(t[19] == 'Z');
}

TEST_CASE("RFC 3339 times: written and parsed back") {
  CHECK(store::rfc3339(0) == "1970-01-01T00:00:00Z");
  CHECK(store::rfc3339(1738324800) == "2025-01-31T12:00:00Z");
  CHECK(store::parse_rfc3339("2025-01-31T12:00:00Z").value() == 1738324800);
  int64_t now = ::time(nullptr);
  CHECK(store::parse_rfc3339(store::rfc3339(now)).value() == now);
  for (const char* bad : {"", "2025-01-31", "2025-01-31T12:00:00", "2025-01-31T12:00:00+01:00",
                          "2025-01-31 12:00:00Z", "2025-13-31T12:00:00Z x"})
    CHECK_FALSE(store::parse_rfc3339(bad).has_value());
}

TEST_CASE("status rules: names round-trip, and which statuses claim a VMM") {
  using store::Status;
  for (Status s :
       {Status::Creating, Status::Running, Status::Paused, Status::Checkpointed, Status::Stopped})
    CHECK(store::parse_status(store::status_name(s)) == s);
  CHECK(std::string(store::status_name(Status::Checkpointed)) == "checkpointed");
  CHECK_FALSE(store::parse_status("Running"));
  CHECK_FALSE(store::parse_status(""));
  CHECK(store::claims_vmm(Status::Running, 0));
  CHECK(store::claims_vmm(Status::Paused, 5));
  CHECK(store::claims_vmm(Status::Creating, 5));
  CHECK_FALSE(store::claims_vmm(Status::Creating, 0));  // not yet forked
  CHECK_FALSE(store::claims_vmm(Status::Checkpointed, 5));
  CHECK_FALSE(store::claims_vmm(Status::Stopped, 5));
}

// Unit tests for core/idle: the durations and settings (flags over config.toml, the order of
// pause and checkpoint), the step due in each status, what list shows, and the reaper's visit
// and a command's wake against a fake control.sock: an unused sandbox is paused as asleep, one in
// use is left alone, the next use resumes it, an explicit pause is never woken and makes an
// idle one explicit, and an idle step cut short is resumed by the next use.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "core/expiry.h"
#include "core/idle.h"
#include "core/session.h"
#include "store/activity.h"
#include "support/fake_sandbox.h"
#include "support/fake_server.h"
#include "util/daemon.h"
#include "util/error.h"

using namespace space;

namespace {

store::SandboxState with(store::Status status, uint64_t pause, uint64_t checkpoint, bool asleep) {
  store::SandboxState st;
  st.id = "i";
  st.status = status;
  st.idle_pause_ms = pause;
  st.idle_checkpoint_ms = checkpoint;
  st.idle_asleep = asleep;
  return st;
}

// A fake VMM for sandbox `sb`: control.sock answers pause and resume, and records the requests.
struct FakeVmm {
  std::mutex mu;
  std::vector<std::string> requests;
  test::FakeServer srv;
  explicit FakeVmm(const test::FakeSandbox& sb)
      : srv([this](int fd, int) {
          std::string req = test::read_line_blocking(fd);
          {
            std::lock_guard<std::mutex> g(mu);
            requests.push_back(req);
          }
          if (req == R"({"op":"pause"})")
            test::write_str(fd, "{\"ok\":true,\"status\":\"paused\",\"pause_us\":5}\n");
          else if (req == R"({"op":"resume"})")
            test::write_str(fd, "{\"ok\":true,\"status\":\"running\",\"resume_us\":7}\n");
        }) {
    REQUIRE(::symlink(srv.path.c_str(), sb.p.control_sock.c_str()) == 0);
  }
  std::vector<std::string> taken() {
    std::lock_guard<std::mutex> g(mu);
    return std::exchange(requests, {});
  }
};

// The sandbox's record with idle settings, made `age_s` seconds ago and unused since.
void set_unused(const test::FakeSandbox& sb, uint64_t pause, uint64_t checkpoint, int age_s) {
  store::SandboxState st = store::read_state(sb.p.state);
  st.idle_pause_ms = pause;
  st.idle_checkpoint_ms = checkpoint;
  st.created = store::rfc3339(::time(nullptr) - age_s);
  store::write_state(sb.p.state, st);
}

}  // namespace

TEST_CASE("idle durations: off, a duration, or an error naming the flag") {
  CHECK(core::parse_idle_duration("off", "--idle-pause") == 0);
  CHECK(core::parse_idle_duration("0", "--idle-pause") == 0);
  CHECK(core::parse_idle_duration("90s", "--idle-pause") == 90'000);
  CHECK(core::parse_idle_duration("2h", "--idle-checkpoint") == 7'200'000);
  CHECK_THROWS_WITH_AS(core::parse_idle_duration("5x", "--idle-pause"),
                       doctest::Contains("invalid duration"), Error);
}

TEST_CASE("idle settings: flags over config.toml, and a checkpoint after the pause") {
  store::HostConfig hc;
  hc.idle_pause_ms = 60'000;
  hc.idle_checkpoint_ms = 600'000;
  store::SandboxState st;
  st.idle_asleep = true;
  core::set_idle(st, {}, hc);
  CHECK(st.idle_pause_ms == 60'000);
  CHECK(st.idle_checkpoint_ms == 600'000);
  CHECK_FALSE(st.idle_asleep);
  core::set_idle(st, {.pause_ms = 0, .checkpoint_ms = std::nullopt}, hc);  // --idle-pause off
  CHECK(st.idle_pause_ms == 0);
  CHECK(st.idle_checkpoint_ms == 600'000);
  core::set_idle(st, {.pause_ms = 5'000, .checkpoint_ms = 0}, hc);
  CHECK(st.idle_pause_ms == 5'000);
  CHECK(st.idle_checkpoint_ms == 0);
  try {
    core::set_idle(st, {.pause_ms = 700'000, .checkpoint_ms = std::nullopt}, hc);
    FAIL("a checkpoint before the pause must be refused");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("comes before the idle pause") != std::string::npos);
    CHECK(e.hint().find("--idle-checkpoint") != std::string::npos);
  }
  CHECK(st.idle_pause_ms == 5'000);  // unchanged by the refusal
  CHECK_FALSE(core::needs_reaper(with(store::Status::Running, 0, 0, false)));
  CHECK(core::needs_reaper(with(store::Status::Running, 0, 1000, false)));
}

TEST_CASE("the idle step due: pause, then checkpoint; never for an explicit pause") {
  using core::IdleStep;
  using store::Status;
  auto step = [](const store::SandboxState& st, int64_t ms) { return core::idle_step(st, ms); };
  CHECK(step(with(Status::Running, 0, 0, false), 1'000'000) == IdleStep::None);
  CHECK(step(with(Status::Running, 1000, 5000, false), 999) == IdleStep::None);
  CHECK(step(with(Status::Running, 1000, 5000, false), 1000) == IdleStep::Pause);
  CHECK(step(with(Status::Running, 1000, 5000, false), 5000) == IdleStep::Checkpoint);
  CHECK(step(with(Status::Running, 0, 5000, false), 4000) == IdleStep::None);
  CHECK(step(with(Status::Running, 0, 5000, false), 5000) == IdleStep::Checkpoint);
  CHECK(step(with(Status::Paused, 1000, 5000, true), 4000) == IdleStep::None);
  CHECK(step(with(Status::Paused, 1000, 5000, true), 5000) == IdleStep::Checkpoint);
  CHECK(step(with(Status::Paused, 1000, 0, true), 1'000'000) == IdleStep::None);
  CHECK(step(with(Status::Paused, 1000, 5000, false), 1'000'000) == IdleStep::None);  // explicit
  CHECK(step(with(Status::Checkpointed, 1000, 5000, true), 1'000'000) == IdleStep::None);
  CHECK(step(with(Status::Stopped, 1000, 5000, false), 1'000'000) == IdleStep::None);
}

TEST_CASE("what list shows: the status with (idle), how long unused, and the next step") {
  CHECK(core::status_text(with(store::Status::Paused, 1000, 0, true)) == "paused (idle)");
  CHECK(core::status_text(with(store::Status::Checkpointed, 1000, 0, true)) ==
        "checkpointed (idle)");
  CHECK(core::status_text(with(store::Status::Paused, 1000, 0, false)) == "paused");
  CHECK(core::status_text(with(store::Status::Running, 1000, 0, true)) == "running");
  test::FakeSandbox sb("v1");
  store::SandboxState st = store::read_state(sb.p.state);
  CHECK(core::idle_text(core::idle_view(sb.p, st, 0)) == "-");
  st.idle_pause_ms = 60'000;
  st.idle_checkpoint_ms = 600'000;
  const int64_t made = store::parse_rfc3339(st.created).value() * 1000;
  core::IdleView v = core::idle_view(sb.p, st, made + 42'000);
  CHECK(v.configured);
  CHECK(v.unused_ms == 42'000);
  CHECK(v.next == core::IdleStep::Pause);
  CHECK(v.next_at_ms == made + 60'000);
  CHECK(core::idle_text(v) == "42s (pause at " + store::rfc3339(made / 1000 + 60) + ")");
  st.status = store::Status::Paused;
  st.idle_asleep = true;
  v = core::idle_view(sb.p, st, made + 100'000);
  CHECK(v.asleep);
  CHECK(v.next == core::IdleStep::Checkpoint);
  CHECK(v.next_at_ms == made + 600'000);
  json::Value j = core::state_json(sb.ctx, st);
  const json::Value* idle = j.find("idle");
  REQUIRE(idle != nullptr);
  CHECK(json::uint_field(*idle, "pause_after_ms") == 60'000);
  CHECK(idle->find("asleep")->as_bool());
  CHECK(json::string_field(*idle, "next") == "checkpoint");
}

TEST_CASE("the reaper pauses an unused sandbox as asleep; the next use wakes it") {
  test::FakeSandbox sb("w1");
  FakeVmm vmm(sb);
  Fd reaper = daemon::take_lock(core::reaper_lock_path(sb.ctx), 0);  // no reaper started here
  REQUIRE(reaper.valid());
  set_unused(sb, 2'000, 0, 10);
  {
    store::ActivityHold use(sb.p.activity);  // in use: left alone, however old
    CHECK(core::idle_tick(sb.ctx, store::read_state(sb.p.state)) == "");
  }
  CHECK(vmm.taken().empty());
  // That use just ended: two seconds to go.
  CHECK(core::idle_tick(sb.ctx, store::read_state(sb.p.state)) == "");
  set_unused(sb, 2'000, 0, 10);
  struct timespec old[2] = {{::time(nullptr) - 5, 0}, {::time(nullptr) - 5, 0}};
  REQUIRE(::utimensat(AT_FDCWD, sb.p.activity.c_str(), old, 0) == 0);
  CHECK(core::idle_tick(sb.ctx, store::read_state(sb.p.state)) == "paused");
  CHECK(vmm.taken() == std::vector<std::string>{R"({"op":"pause"})"});
  store::SandboxState st = store::read_state(sb.p.state);
  CHECK(st.status == store::Status::Paused);
  CHECK(st.idle_asleep);
  CHECK(core::idle_tick(sb.ctx, st) == "");  // no checkpoint set: nothing more
  {
    store::ActivityHold use = core::use_sandbox(sb.ctx, "w1");
    CHECK(use.held());
  }
  CHECK(vmm.taken() == std::vector<std::string>{R"({"op":"resume"})"});
  st = store::read_state(sb.p.state);
  CHECK(st.status == store::Status::Running);
  CHECK_FALSE(st.idle_asleep);
}

TEST_CASE("an explicit pause is never woken, and makes an idle one explicit") {
  test::FakeSandbox sb("w2");
  FakeVmm vmm(sb);
  Fd reaper = daemon::take_lock(core::reaper_lock_path(sb.ctx), 0);
  REQUIRE(reaper.valid());
  set_unused(sb, 2'000, 0, 10);
  core::pause_sandbox(sb.ctx, "w2");
  CHECK(vmm.taken() == std::vector<std::string>{R"({"op":"pause"})"});
  { store::ActivityHold use = core::use_sandbox(sb.ctx, "w2"); }
  CHECK(vmm.taken().empty());  // not woken
  CHECK(store::read_state(sb.p.state).status == store::Status::Paused);
  CHECK_FALSE(core::wake_sandbox(sb.ctx, "w2"));
  // Asleep from idleness, then paused explicitly: it stays paused, and no longer wakes.
  store::SandboxState st = store::read_state(sb.p.state);
  st.idle_asleep = true;
  store::write_state(sb.p.state, st);
  st = core::pause_sandbox(sb.ctx, "w2");
  CHECK(st.status == store::Status::Paused);
  CHECK_FALSE(st.idle_asleep);
  CHECK_FALSE(store::read_state(sb.p.state).idle_asleep);
  { store::ActivityHold use = core::use_sandbox(sb.ctx, "w2"); }
  CHECK(vmm.taken().empty());
}

TEST_CASE("an idle step cut short (the reaper killed) is resumed by the next use") {
  test::FakeSandbox sb("w3");
  FakeVmm vmm(sb);
  Fd reaper = daemon::take_lock(core::reaper_lock_path(sb.ctx), 0);
  REQUIRE(reaper.valid());
  store::SandboxState st = store::read_state(sb.p.state);
  st.idle_checkpoint_ms = 5'000;
  st.idle_asleep = true;  // the intent, written before the VMM was told: still "running"
  store::write_state(sb.p.state, st);
  { store::ActivityHold use = core::use_sandbox(sb.ctx, "w3"); }
  CHECK(vmm.taken() == std::vector<std::string>{R"({"op":"resume"})"});
  st = store::read_state(sb.p.state);
  CHECK(st.status == store::Status::Running);
  CHECK_FALSE(st.idle_asleep);
}

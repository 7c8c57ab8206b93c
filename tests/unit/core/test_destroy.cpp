// Unit tests for core/destroy (destroy, core/sandbox.h) against a stand-in VMM process: the
// recorded VMM is killed and both directories removed, a recycled pid is never signalled, and an
// unreadable state.json needs --force, and a record naming another sandbox (the source's, copied
// into an interrupted branch) never gets that sandbox's VMM signalled; the cgroup a sandbox's id
// names goes with it even when no record names it (as root, on a host with cgroups).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/sandbox.h"
#include "jail/cgroup.h"
#include "launch/jail_setup.h"
#include "store/config.h"
#include "store/state.h"
#include "support/fake_sandbox.h"
#include "support/skip.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;
using space::test::FakeSandbox;

TEST_CASE("destroy kills the recorded VMM and removes both directories") {
  FakeSandbox f("victim");
  core::destroy_sandbox(f.ctx, "victim", /*force=*/false);  // no control.sock: straight to SIGKILL
  CHECK(f.vmm.exited());
  CHECK(WIFSIGNALED(f.vmm.status()));
  CHECK_FALSE(fs::exists(f.p.dir));
  CHECK_FALSE(fs::exists(f.p.run_dir));
  CHECK_THROWS_WITH_AS(core::destroy_sandbox(f.ctx, "victim", false),
                       "sandbox victim does not exist", Error);
}

TEST_CASE("destroy never signals a recycled pid") {
  FakeSandbox f("recycled");
  auto st = store::read_state(f.p.state);
  st.pid_start_time += 1;  // the recorded process is gone; this pid now names another one
  store::write_state(f.p.state, st);
  core::destroy_sandbox(f.ctx, "recycled", /*force=*/true);
  CHECK_FALSE(f.vmm.exited());
  CHECK_FALSE(fs::exists(f.p.dir));
}

TEST_CASE("destroy with an unreadable state needs --force") {
  FakeSandbox f("broken");
  fs::write_file_atomic(f.p.state, "{oops");
  CHECK_THROWS_WITH_AS(core::destroy_sandbox(f.ctx, "broken", false),
                       doctest::Contains("invalid JSON"), Error);
  CHECK(fs::exists(f.p.dir));
  core::destroy_sandbox(f.ctx, "broken", true);
  CHECK_FALSE(fs::exists(f.p.dir));
}

TEST_CASE("destroy of a directory whose record names another sandbox leaves that VMM alone") {
  FakeSandbox f("source");
  std::string copy = store::sandbox_paths(f.ctx.root, "source-b1").dir;
  fs::mkdir_p(copy);
  fs::write_file_atomic(copy + "/state.json", fs::read_file(f.p.state));  // the source's record
  core::destroy_sandbox(f.ctx, "source-b1", /*force=*/true);
  CHECK_FALSE(f.vmm.exited());
  CHECK_FALSE(fs::exists(copy));
  CHECK(fs::exists(f.p.dir));
}

// Needs root and a usable cgroup hierarchy.
TEST_CASE("destroy removes the cgroup its id names when no record does, and what is in it" *
          doctest::skip(::geteuid() != 0 ||
                        jail::detect_layout().version == jail::CgroupVersion::None)) {
  FakeSandbox f("unrecorded");
  const std::string parent = "space-unit-destroy-" + std::to_string(::getpid());
  fs::write_file_atomic(f.ctx.root + "/config.toml",
                        "[jail]\ncgroup_parent = \"" + parent + "\"\n");
  store::HostConfig hc = store::load_host_config(f.ctx.root);
  std::string rel;
  try {
    rel = launch::make_sandbox_cgroup(hc, "unrecorded", 1, 64);
  } catch (const Error& e) {
    FAIL("cannot make a cgroup as root on a host with a cgroup hierarchy: " << e.what());
  }
  CHECK(rel == launch::sandbox_cgroup_name(hc, "unrecorded"));
  jail::CgroupLayout l = jail::detect_layout();
  pid_t member = ::fork();  // a VMM started by a resume that was killed before recording it
  REQUIRE(member >= 0);
  if (member == 0) {
    jail::join_group(l, rel);
    for (;;) ::pause();
  }
  for (int i = 0; i < 200 && jail::group_pids(l, rel).empty(); i++) ::usleep(5000);
  REQUIRE(jail::group_pids(l, rel) == std::vector<int>{member});
  auto st = store::read_state(f.p.state);
  st.cgroup.clear();  // the record does not name the group
  store::write_state(f.p.state, st);
  core::destroy_sandbox(f.ctx, "unrecorded", /*force=*/true);
  for (auto& d : jail::group_dirs(l, rel)) CHECK_FALSE(fs::exists(d));
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 200 && got == 0; i++, ::usleep(5000))
    got = ::waitpid(member, &status, WNOHANG);
  CHECK(got == member);  // destroy killed it
  if (got == 0) {        // (it did not: end it here, not hang)
    ::kill(member, SIGKILL);
    ::waitpid(member, &status, 0);
  }
  jail::remove_group(l, rel);
  jail::remove_group(l, parent);
  CHECK_FALSE(fs::exists(f.p.dir));
}

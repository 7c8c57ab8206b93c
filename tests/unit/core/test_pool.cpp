// Unit tests for core/pool.h and core/pool_members.h without runsc: which creates a pool may
// serve; a pool's members read from their records (ready, starting, dead; oldest first), with
// stand-in monitors (sleep children); removing one (its monitor killed, its directories gone,
// also the run directory a claim that died midway moved, but only when its marker names the
// member); and draining a pool. Claims and refills with real sandboxes are in
// tests/integration/47_pool.sh.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/pool.h"
#include "core/pool_members.h"
#include "store/config.h"
#include "store/state.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"

using namespace space;

namespace {

struct FakePool {
  test::TempDir root{"pool"};
  store::Context ctx;
  std::vector<proc::Child> monitors;
  FakePool() {
    ::setenv("SPACE_RUN_DIR", (root.path + "/run").c_str(), 1);
    ctx.root = root.path;
    fs::mkdir_p(root.path + "/run");
  }
  ~FakePool() { ::unsetenv("SPACE_RUN_DIR"); }

  // A stand-in monitor: a sleep child of the test.
  proc::Child& monitor() {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::execl("/bin/sleep", "sleep", "60", nullptr);
      ::_exit(127);
    }
    monitors.emplace_back(pid);
    return monitors.back();
  }

  // Member `name` of template "base": its subvolume (a plain directory here) and run directory,
  // and, unless `record` is false, a record naming `id` (its own name by default) with a live
  // monitor, or one whose start time no longer matches (`live` false).
  store::SandboxPaths member(const std::string& name, store::Status status, bool live = true,
                             const std::string& created = "2026-01-01T00:00:00Z",
                             bool record = true, const std::string& id = "") {
    auto p = store::pool_member_paths(ctx.root, "base", name);
    fs::mkdir_p(p.dir);
    fs::mkdir_p(p.run_dir);
    if (!record) return p;
    proc::Child& m = monitor();
    store::SandboxState st;
    st.id = id.empty() ? name : id;
    st.engine = "gvisor";
    st.status = status;
    st.pid = m.pid();
    st.pid_start_time = proc::start_time(m.pid()).value() + (live ? 0 : 1);
    st.created = created;
    store::write_state(p.state, st);
    return p;
  }
};

std::vector<std::string> names(const std::vector<core::PoolMember>& ms) {
  std::vector<std::string> out;
  for (const auto& m : ms) out.push_back(m.name);
  return out;
}

}  // namespace

TEST_CASE("pool: a create it can serve takes only what a template fixes") {
  core::CreateOptions o;
  o.template_name = "base";
  o.net = "allow=127.0.0.2:80";
  o.ttl_ms = 60'000;
  CHECK(core::pool_can_serve(o));  // the network, the expiry, grants and files come after
  auto with = [&](auto change) {
    core::CreateOptions x = o;
    change(x);
    return core::pool_can_serve(x);
  };
  CHECK_FALSE(with([](auto& x) { x.image = "deb"; }));
  CHECK_FALSE(with([](auto& x) { x.disk_bytes = 1 << 30; }));
  CHECK_FALSE(with([](auto& x) { x.cold = true; }));
  CHECK_FALSE(with([](auto& x) { x.vcpus = 2; }));
  CHECK_FALSE(with([](auto& x) { x.memory_mib = 512; }));
  CHECK_FALSE(with([](auto& x) { x.rootfs = "/r.ext4"; }));
  CHECK_FALSE(with([](auto& x) { x.kernel = "/k"; }));
}

TEST_CASE("pool: members, oldest first; ready, starting or dead") {
  FakePool f;
  f.member("bbb", store::Status::Running, true, "2026-01-02T00:00:00Z");
  f.member("aaa", store::Status::Running, true, "2026-01-03T00:00:00Z");
  f.member("ccc", store::Status::Running, false, "2026-01-01T00:00:00Z");  // its monitor died
  f.member("ddd", store::Status::Creating, true, "2026-01-04T00:00:00Z");
  f.member("eee", store::Status::Running, true, "", /*record=*/false);  // just made
  auto gone = f.member("fff", store::Status::Running, true, "2026-01-05T00:00:00Z");
  fs::remove_tree(gone.run_dir);  // its run directory is not there
  fs::mkdir_p(core::pool_dir(f.ctx, "base").dir + "/.fill-stuff");  // dot names are not members
  auto ms = core::pool_members(f.ctx, "base");
  CHECK(names(ms) == std::vector<std::string>{"eee", "ccc", "bbb", "aaa", "ddd", "fff"});
  std::vector<std::string> ready, starting;
  for (const auto& m : ms) {
    if (core::member_ready(m)) ready.push_back(m.name);
    if (core::member_starting(m)) starting.push_back(m.name);
  }
  CHECK(ready == std::vector<std::string>{"bbb", "aaa"});
  CHECK(starting == std::vector<std::string>{"eee", "ddd"});
  CHECK(core::pool_members(f.ctx, "other").empty());
}

TEST_CASE("pool: a member removed, with the run directory a dead claim moved") {
  FakePool f;
  const std::string run = f.root.path + "/run";
  auto a = f.member("aaa", store::Status::Running);
  // Claims that died between their two renames: the record names the new sandbox, whose run
  // directory holds the member's marker (then it is the member's) or not (then it is not).
  auto b = f.member("bbb", store::Status::Creating, true, "2026-01-01T00:00:00Z", true, "x9");
  fs::remove_tree(b.run_dir);
  fs::mkdir_p(run + "/x9");
  fs::write_file_atomic(run + "/x9/" + core::kPoolMarker, "bbb", 0600);
  auto c = f.member("ccc", store::Status::Creating, true, "2026-01-01T00:00:00Z", true, "x8");
  fs::mkdir_p(run + "/x8");
  fs::write_file_atomic(run + "/x8/" + core::kPoolMarker, "someone-else", 0600);
  store::HostConfig hc;
  auto ms = core::pool_members(f.ctx, "base");
  REQUIRE(ms.size() == 3);
  for (const auto& m : ms) core::discard_member(hc, m);
  for (auto& m : f.monitors) CHECK(m.exited());  // every stand-in monitor killed
  for (const auto& p : {a, b, c}) {
    CHECK_FALSE(fs::exists(p.dir));
    CHECK_FALSE(fs::exists(p.run_dir));
  }
  CHECK_FALSE(fs::exists(run + "/x9"));
  CHECK(fs::exists(run + "/x8"));
  CHECK(core::pool_members(f.ctx, "base").empty());
}

TEST_CASE("pool: drained, members and all") {
  FakePool f;
  f.member("aaa", store::Status::Running);
  f.member("bbb", store::Status::Running, false);
  f.member("ccc", store::Status::Running, true, "", /*record=*/false);
  CHECK(core::drain_pool(f.ctx, "base") == 3);
  CHECK(f.monitors[0].exited());
  CHECK_FALSE(f.monitors[1].exited());  // its record names another process: never signalled
  CHECK_FALSE(fs::exists(core::pool_dir(f.ctx, "base").dir));
  CHECK_THROWS_WITH_AS(core::drain_pool(f.ctx, "base"), "template base does not exist", Error);
  fs::mkdir_p(f.root.path + "/store/templates/base");
  CHECK(core::drain_pool(f.ctx, "base") == 0);  // a template without a pool: nothing to do
  CHECK_THROWS(core::drain_pool(f.ctx, "../x"));
}

// Unit tests for oci/runtime.h without a VM: signal names, the container record's round trip,
// the status a record shows (a live shim before and after `start`, a dead one), the refusals of
// start, kill, delete and exec by status, a malformed bundle leaving nothing behind, and the
// features document. The transitions with a real VM are tests/integration/86_oci_runtime.sh.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "oci/runtime.h"
#include "oci/spec.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"

using namespace space;

namespace {

// A record of container `id` under `rt` whose shim is process `pid`.
void write_record(const oci::Runtime& rt, const std::string& id, pid_t pid) {
  oci::ContainerRecord r;
  r.id = id;
  r.sandbox = oci::sandbox_id_for(id);
  r.bundle = "/b";
  r.rootfs = "/b/rootfs";
  r.created = "2026-12-03T00:00:00Z";
  r.pid = pid;
  r.pid_start_time = proc::start_time(pid).value_or(0);
  r.annotations["k"] = "v";
  fs::mkdir_p(rt.state_root + "/" + id);
  json::save_file(rt.state_root + "/" + id + "/state.json", oci::record_json(r), 0644);
}

struct Sleeper {  // a stand-in shim
  pid_t pid;
  Sleeper() {
    pid = ::fork();
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~Sleeper() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

}  // namespace

TEST_CASE("oci runtime: signals by name and number") {
  CHECK(oci::parse_signal("9") == SIGKILL);
  CHECK(oci::parse_signal("KILL") == SIGKILL);
  CHECK(oci::parse_signal("SIGTERM") == SIGTERM);
  CHECK(oci::parse_signal("sigusr1") == SIGUSR1);
  CHECK(oci::parse_signal("15") == SIGTERM);
  CHECK_THROWS_AS(oci::parse_signal("0"), Error);
  CHECK_THROWS_AS(oci::parse_signal("65"), Error);
  CHECK_THROWS_AS(oci::parse_signal("99999999999"), Error);
  CHECK_THROWS_WITH_AS(oci::parse_signal("NOPE"), "unknown signal \"NOPE\"", Error);
  CHECK_THROWS_AS(oci::parse_signal(""), Error);
}

TEST_CASE("oci runtime: status follows the shim, and commands are refused by status") {
  test::TempDir t("oci-rt");
  oci::Runtime rt;
  rt.state_root = t.path + "/state";
  rt.ctx.root = t.path + "/root";
  {
    Sleeper shim;
    write_record(rt, "c1", shim.pid);
    json::Value st = oci::container_state(rt, "c1");
    CHECK(st.at("status").as_string() == "created");
    CHECK(st.at("pid").as_int() == shim.pid);
    CHECK(st.at("ociVersion").as_string() == oci::kSpecVersion);
    CHECK(st.at("bundle").as_string() == "/b");
    CHECK(st.at("annotations").at("k").as_string() == "v");
    // A live container is not deleted without --force.
    CHECK_THROWS_WITH_AS(oci::delete_container(rt, "c1", false),
                         "cannot delete container c1 that is not stopped: created", Error);
    CHECK(fs::is_dir(rt.state_root + "/c1"));
    fs::write_file_atomic(rt.state_root + "/c1/started", "");
    CHECK(oci::container_state(rt, "c1").at("status").as_string() == "running");
    CHECK_THROWS_WITH_AS(oci::start_container(rt, "c1"), "cannot start a container that is running",
                         Error);
    // kill delivers to the shim.
    oci::kill_container(rt, "c1", SIGUSR1, false);
    int status = 0;
    REQUIRE(::waitpid(shim.pid, &status, 0) == shim.pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGUSR1);
    shim.pid = ::getpid() + 1000000;  // reaped: nothing left to kill
  }
  // The shim is gone: stopped, pid 0; kill, start and exec are refused; delete works.
  json::Value st = oci::container_state(rt, "c1");
  CHECK(st.at("status").as_string() == "stopped");
  CHECK(st.at("pid").as_int() == 0);
  CHECK_THROWS_WITH_AS(oci::kill_container(rt, "c1", SIGTERM, false), "container not running: c1",
                       Error);
  CHECK_THROWS_WITH_AS(oci::start_container(rt, "c1"), "cannot start a container that is stopped",
                       Error);
  oci::ExecRequest er;
  er.id = "c1";
  er.process_file = t.path + "/p.json";
  CHECK_THROWS_WITH_AS(oci::exec_container(rt, er), "cannot exec in a stopped container", Error);
  CHECK(oci::list_containers(rt).size() == 1);
  oci::delete_container(rt, "c1", false);
  CHECK_FALSE(fs::exists(rt.state_root + "/c1"));
  CHECK(oci::list_containers(rt).empty());
  CHECK_THROWS_WITH_AS(oci::container_state(rt, "c1"), doctest::Contains("does not exist"), Error);
  CHECK_THROWS_WITH_AS(oci::delete_container(rt, "c1", true), "container c1 does not exist", Error);
}

TEST_CASE("oci runtime: stop signals are refused, not sent to the shim") {
  test::TempDir t("oci-rt-stop");
  oci::Runtime rt;
  rt.state_root = t.path;
  rt.ctx.root = t.path + "/root";
  Sleeper shim;
  write_record(rt, "c2", shim.pid);
  CHECK_THROWS_WITH_AS(oci::kill_container(rt, "c2", SIGSTOP, false),
                       doctest::Contains("would stop the container's shim"), Error);
  CHECK_THROWS_AS(oci::kill_container(rt, "c2", SIGCHLD, false), Error);
  CHECK(proc::is_alive(shim.pid, proc::start_time(shim.pid).value_or(0)));
  CHECK_FALSE(proc::is_stopped(shim.pid));
}

TEST_CASE("oci runtime: a bad bundle or id leaves nothing behind") {
  test::TempDir t("oci-rt-create");
  oci::Runtime rt;
  rt.state_root = t.path + "/state";
  rt.ctx.root = t.path + "/root";
  fs::mkdir_p(t.path + "/bundle/rootfs");
  fs::write_file_atomic(t.path + "/bundle/config.json",
                        R"({"ociVersion": "1.0.2", "process": {}})");
  oci::CreateRequest req{"c3", t.path + "/bundle", t.path + "/pid", ""};
  CHECK_THROWS_WITH_AS(oci::create_container(rt, req), "config.json: process.args: missing", Error);
  CHECK_FALSE(fs::exists(rt.state_root + "/c3"));
  CHECK_FALSE(fs::exists(t.path + "/pid"));
  fs::write_file_atomic(t.path + "/bundle/config.json",
                        R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
                            "process": {"terminal": true, "args": ["sh"]}})");
  CHECK_THROWS_WITH_AS(oci::create_container(rt, req), doctest::Contains("--console-socket"),
                       Error);
  CHECK_FALSE(fs::exists(rt.state_root + "/c3"));
  // A mount destination climbing out (a pod's mountPath): refused before anything is made.
  fs::write_file_atomic(t.path + "/bundle/config.json",
                        R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
                            "process": {"args": ["sh"]},
                            "mounts": [{"destination": "/../../etc/cron.d", "type": "bind",
                                        "source": "/tmp"}]})");
  CHECK_THROWS_WITH_AS(oci::create_container(rt, req), doctest::Contains("has a '..' component"),
                       Error);
  CHECK_FALSE(fs::exists(rt.state_root + "/c3"));
  CHECK_FALSE(fs::exists(t.path + "/pid"));
  oci::CreateRequest bad{"Bad/Id", t.path + "/bundle", "", ""};
  CHECK_THROWS_WITH_AS(oci::create_container(rt, bad), doctest::Contains("invalid container id"),
                       Error);
  // An id already in use by a container.
  fs::mkdir_p(rt.state_root + "/c4");
  fs::write_file_atomic(t.path + "/bundle/config.json",
                        R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
                            "process": {"args": ["sh"]}})");
  oci::CreateRequest dup{"c4", t.path + "/bundle", "", ""};
  CHECK_THROWS_WITH_AS(oci::create_container(rt, dup), "container with id c4 already exists",
                       Error);
  CHECK(fs::is_dir(rt.state_root + "/c4"));  // the other container's directory stays
}

TEST_CASE("oci runtime: features") {
  json::Value f = oci::features();
  CHECK(f.at("ociVersionMax").as_string() == oci::kSpecVersion);
  CHECK(f.at("linux").at("cgroup").at("v1").as_bool());
  CHECK(f.at("annotations").find("space.template") != nullptr);
  CHECK(f.at("annotations").find("space.net") != nullptr);
}

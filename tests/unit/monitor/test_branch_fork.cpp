// Unit tests for monitor/branch_fork, on a real VM (each case needs /dev/kvm): a paused counting
// guest (support/tiny_guest.h) forks into branch VMMs, each given the descriptors a branch request
// brings (vmm.log, console, root disk, control and vsock sockets, run directory). A branch runs
// on from the captured state in a VM of its own over a copy-on-write copy of the memory, serves
// its own control socket, and exits 0 when told to stop; the source stays as it was. A branch
// that fails before it is ready makes fork_branches throw with its reason and leaves no process.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "launch/control_client.h"
#include "monitor/branch_fork.h"
#include "monitor/routes.h"
#include "monitor/vmm_main.h"
#include "proto/control.h"
#include "store/vm_config.h"
#include "support/tiny_guest.h"
#include "util/socket.h"

using namespace space;
using namespace space::testing;
namespace control = space::proto::control;

namespace {

// A source VMM's side: the counting guest, running, then paused, and the VmRun a VMM has.
struct Source : CountingMachine {
  monitor::VmRun run;
  std::vector<pid_t> children;

  Source() {
    run.files.null = Fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
    REQUIRE(run.files.null);
    REQUIRE(eventually([&] { return counter(machine) > 1000; }));
    machine.pause();
  }
};

// One branch's directory and the descriptors its request brings, in proto/control.h's order.
struct Branch {
  std::string dir;
  control::BranchTarget target;

  Branch(const Source& s, const std::string& id, const std::string& config_id) {
    dir = s.rig.tmp.path + "/" + id;
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    target.id = id;
    target.dir = target.run_dir = dir;
    store::VmConfig cfg;
    cfg.id = config_id;
    cfg.memory_mib = static_cast<uint32_t>(kMemory >> 20);
    cfg.kernel = s.rig.spec.kernel;
    cfg.rootfs = s.rig.spec.rootfs;
    target.config = store::vm_config_to_json(cfg);
  }
  void add_fds(const Source& s, std::vector<Fd>& fds) const {
    auto open_log = [&](const char* name) {
      Fd fd(::open((dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
      REQUIRE(fd);
      return fd;
    };
    fds.push_back(open_log("vmm.log"));
    fds.push_back(open_log("console.log"));
    fds.push_back(Fd(::open(s.rig.spec.rootfs.c_str(), O_RDWR | O_CLOEXEC)));
    fds.push_back(net::unix_bind(dir + "/control.sock"));
    fds.push_back(net::unix_bind(dir + "/" + monitor::kVsockSocket));
    fds.push_back(Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
    for (const auto& fd : fds) REQUIRE(fd);
  }
  std::string control_sock() const { return dir + "/control.sock"; }
  std::string vmm_log() const { return fs::read_file(dir + "/vmm.log"); }
};

constexpr uint64_t kMarkerAddr = 0x3000000;  // 48 MiB: a word the test writes, the guest never
constexpr uint64_t kMarker = 0x5ace0000b1;

// The word at guest address `gpa` in a memory file a snapshot wrote (RAM from address 0).
uint64_t read_u64(const std::string& memory_file, uint64_t gpa) {
  Fd fd(::open(memory_file.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  uint64_t v = 0;
  REQUIRE(::pread(fd.get(), &v, sizeof v, static_cast<off_t>(gpa)) ==
          static_cast<ssize_t>(sizeof v));
  return v;
}

// This thread's children (fork_branches forks from it), from /proc.
std::string my_children() {
  std::string p = "/proc/self/task/" + std::to_string(::gettid()) + "/children";
  return fs::read_file(p);
}

}  // namespace

TEST_CASE(
    "branch fork: a paused VM forks a branch that runs on from its state in a VM of its own "
    "(needs /dev/kvm)" *
    test::needs_kvm()) {
  Source s;
  const uint64_t at_pause = counter(s.machine);
  REQUIRE(s.machine.memory().write_obj(kMarkerAddr, kMarker));
  Branch b(s, "b1", "b1");
  std::vector<Fd> fds;
  b.add_fds(s, fds);

  auto made = monitor::fork_branches(s.machine, s.run, {b.target}, fds, s.children,
                                     std::chrono::seconds(60));
  REQUIRE(made.size() == 1);
  CHECK(made[0].id == "b1");
  const pid_t pid = made[0].pid;
  CHECK(pid > 0);
  CHECK(s.children == std::vector<pid_t>{pid});
  CHECK(s.machine.paused());  // the source stays paused; the caller resumes it
  REQUIRE(s.machine.memory().write_obj(kMarkerAddr, kMarker + 1));

  // The branch serves its own control socket, from its own process, with its guest running.
  auto ping = launch::control_call(b.control_sock(), control::PingRequest{}, 10000);
  CHECK(ping.pid == pid);
  CHECK(ping.status == control::RunState::Running);
  CHECK(launch::control_call(b.control_sock(), control::StatsRequest{}, 10000).vcpus == 1);

  // Its guest runs on in memory of its own, copy-on-write from the source's at the fork: a
  // snapshot of the branch has what the source's memory held then (the marker, a count past the
  // source's), not what the source wrote later.
  std::this_thread::sleep_for(100ms);
  std::string snap_dir = s.rig.tmp.path + "/snap";
  REQUIRE(::mkdir(snap_dir.c_str(), 0700) == 0);
  Fd dir_fd(::open(snap_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir_fd);
  const int snap_fds[] = {dir_fd.get()};
  auto snap = launch::control_call(b.control_sock(), control::SnapshotRequest{snap_dir, false},
                                   30000, snap_fds);
  CHECK(snap.status == control::RunState::Paused);
  CHECK(snap.memory_bytes == kMemory);
  const std::string mem = snap_dir + "/" + vmm::snapshot::kMemoryFile;
  CHECK(read_u64(mem, kMarkerAddr) == kMarker);
  CHECK(read_u64(mem, kCounterAddr) > at_pause);
  uint64_t now = 0;
  REQUIRE(s.machine.memory().read_obj(kMarkerAddr, now));
  CHECK(now == kMarker + 1);
  CHECK(counter(s.machine) == at_pause);
  CHECK(launch::control_call(b.control_sock(), control::ResumeRequest{}, 10000).status ==
        control::RunState::Running);

  // Stopped, it exits 0.
  launch::control_call(b.control_sock(), control::StopRequest{}, 10000);
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(b.vmm_log().find("error") == std::string::npos);
}

TEST_CASE(
    "branch fork: a branch that fails before it is ready fails the fork and leaves no "
    "process (needs /dev/kvm)" *
    test::needs_kvm()) {
  Source s;
  const std::string before = my_children();
  // The second target's configuration names another sandbox: its VMM refuses it.
  Branch good(s, "b1", "b1"), bad(s, "b2", "other");
  std::vector<Fd> fds;
  good.add_fds(s, fds);
  bad.add_fds(s, fds);
  CHECK_THROWS_WITH_AS(monitor::fork_branches(s.machine, s.run, {good.target, bad.target}, fds,
                                              s.children, std::chrono::seconds(60)),
                       doctest::Contains("the configuration sent is for sandbox other, not b2"),
                       Error);
  CHECK(s.children.empty());
  CHECK(my_children() == before);  // both children were killed and reaped
  CHECK(bad.vmm_log().find("the configuration sent is for sandbox other") != std::string::npos);
  CHECK(s.machine.paused());

  // Nor does it fork from a running machine.
  s.machine.resume();
  std::vector<Fd> none;
  CHECK_THROWS_WITH_AS(monitor::fork_branches(s.machine, s.run, {good.target}, none, s.children,
                                              std::chrono::seconds(5)),
                       doctest::Contains("must be paused"), Error);
}

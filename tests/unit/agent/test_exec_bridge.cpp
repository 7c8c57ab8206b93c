// Exec end to end without a VM: the host side (agent::exec_on_connection, the bridge) against the
// real guest-init binary in its --serve-unix mode, which spawns on this machine. Covers exit
// codes, stdout/stderr separation, stdin (whole, closed early, never read), bulk output with a
// checksum, timeouts, signals, env/cwd, and several execs at once. Skipped (doctest's skip) when
// the guest-init binary is not found (support/guest_init_binary.h).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/exec_bridge.h"
#include "support/guest_init_binary.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/fd.h"

using namespace space;

namespace {

// A guest-init --serve-unix child, with a temp dir for outputs.
struct Agent {
  test::TempDir tmp{"exec"};  // removed after the destructor has stopped the agent
  std::string dir = tmp.path, sock;
  pid_t pid = -1;
  Agent() {
    ::signal(SIGPIPE, SIG_IGN);  // the feeder threads below write into pipes we close
    std::string bin = test::guest_init_binary();
    if (bin.empty()) return;
    sock = dir + "/agent.sock";
    pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // gone with us, even if this test crashes
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 2);
      ::execl(bin.c_str(), bin.c_str(), "--serve-unix", sock.c_str(), "--id", "exec-test", nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 500 && !std::filesystem::exists(sock); i++) ::usleep(10000);
  }
  ~Agent() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  }
  bool ok() const { return pid > 0 && std::filesystem::exists(sock); }
  Fd connect() const {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
    REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    return fd;
  }
};

// The agent of the running test case. Each case starts its own (NEED_AGENT) and stops it when
// it ends, so no child of this process outlives the exec tests: other tests in the same binary
// (guest-init's Reaper) wait for this process to have no children at all.
Agent* current_agent = nullptr;
Agent& shared_agent() {
  return *current_agent;
}
struct AgentScope {
  Agent a;
  AgentScope() { current_agent = &a; }
  ~AgentScope() { current_agent = nullptr; }
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Run {
  agent::ExecResult r;
  std::string out, err;
};

// Runs `argv` with stdout/stderr in files; stdin from `in_fd` (-1: /dev/null).
Run run(std::vector<std::string> argv, agent::ExecOptions o = {}, int in_fd = -1) {
  static std::atomic<int> n{0};
  Agent& a = shared_agent();
  std::string base = a.dir + "/run" + std::to_string(n++);
  Fd out(::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  Fd err(::open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  o.argv = std::move(argv);
  agent::StdioFds io{in_fd >= 0 ? in_fd : null.get(), out.get(), err.get()};
  Fd sock = a.connect();
  proc::SignalGuard sig({SIGWINCH});
  Run r;
  r.r = agent::exec_on_connection(sock.get(), o, io, sig);
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  return r;
}

}  // namespace

// Each case runs its own agent; the cases are skipped (needs_guest_init) without the binary, and
// an agent that does not start is a failure.
#define NEED_AGENT()      \
  AgentScope agent_scope; \
  REQUIRE(shared_agent().ok())

TEST_CASE("exec: exit codes, signals, and stdout kept apart from stderr" *
          test::needs_guest_init()) {
  NEED_AGENT();
  auto r = run({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.r.exit_code == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK(run({"true"}).r.exit_code == 0);
  CHECK(run({"sh", "-c", "exit 255"}).r.exit_code == 255);
  auto k = run({"sh", "-c", "kill -9 $$"});
  CHECK(k.r.exit_code == 137);
  CHECK(k.r.status.kind == proto::ExitKind::Signaled);
}

TEST_CASE("exec: missing and non-executable commands give 127 and 126" *
          test::needs_guest_init(/*as_root=*/true)) {
  NEED_AGENT();
  auto nf = run({"no-such-command-xyz"});
  CHECK(nf.r.exit_code == 127);
  CHECK(nf.r.status.message.find("No such file") != std::string::npos);
  CHECK(run({"/no/such/path"}).r.exit_code == 127);
  CHECK(run({"/etc/hostname"}).r.exit_code == 126);
  agent::ExecOptions o;
  o.cwd = "/no/such/dir";
  auto cd = run({"true"}, o);
  CHECK(cd.r.exit_code == 126);
  CHECK(cd.r.status.message.find("chdir /no/such/dir") != std::string::npos);
}

TEST_CASE("exec: env, cwd and guest-measured time" * test::needs_guest_init()) {
  NEED_AGENT();
  agent::ExecOptions o;
  o.env = {"SPACE_TEST_VAR=hello world", "PATH=/usr/bin:/bin"};
  o.cwd = "/tmp";
  auto r = run({"sh", "-c", "echo \"$SPACE_TEST_VAR\"; pwd"}, o);
  CHECK(r.out == "hello world\n/tmp\n");
  CHECK(r.r.stats.guest_us > 0);
  CHECK(r.r.stats.guest_us <= static_cast<uint64_t>(r.r.stats.total_us));
}

// Setting another uid's groups needs root.
TEST_CASE("exec: an OCI process's groups, umask and resource limits" *
          test::needs_guest_init(/*as_root=*/true)) {
  NEED_AGENT();
  agent::ExecOptions o;
  o.uid = 1000;
  o.gid = 1000;
  o.groups = {10, 20};
  o.umask = 027;
  o.rlimits = {{RLIMIT_NOFILE, 123, 456}, {RLIMIT_CORE, 0, 0}};
  auto r = run({"sh", "-c", "id -G; umask; ulimit -Sn; ulimit -Hn; ulimit -c"}, o);
  CHECK(r.r.exit_code == 0);
  CHECK(r.out == "1000 10 20\n0027\n123\n456\n0\n");
  // A limit the process may not have is a clear failure to start, naming the step.
  agent::ExecOptions bad;
  bad.rlimits = {{RLIMIT_NOFILE, 1u << 30, 1u << 30}};
  auto b = run({"true"}, bad);
  CHECK(b.r.exit_code == 126);
  CHECK(b.r.status.message.find("setrlimit") != std::string::npos);
}

TEST_CASE("exec: --timeout kills the process group and gives 124" * test::needs_guest_init()) {
  NEED_AGENT();
  agent::ExecOptions o;
  o.timeout_ms = 300;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run({"sh", "-c", "sleep 30 & sleep 30"}, o);
  CHECK(r.r.exit_code == 124);
  CHECK(r.r.status.kind == proto::ExitKind::TimedOut);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
}

TEST_CASE("exec: stdin is streamed, ends with EOF, and is at EOF without -i" *
          test::needs_guest_init()) {
  NEED_AGENT();
  std::string data;
  for (int i = 0; i < 200000; i++) data += std::to_string(i) + "\n";
  auto path = shared_agent().dir + "/stdin.txt";
  std::ofstream(path) << data;
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  agent::ExecOptions o;
  o.interactive = true;
  auto r = run({"cat"}, o, in.get());
  CHECK(r.r.exit_code == 0);
  CHECK(r.out == data);
  CHECK(run({"cat"}).out.empty());  // no -i: EOF at once, cat ends
}

TEST_CASE("exec: a process that never reads stdin, or closes it early, does not block us" *
          test::needs_guest_init()) {
  NEED_AGENT();
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  Fd rd(p[0]), wr(p[1]);
  std::thread feeder([&wr] {  // 8 MiB, far beyond every buffer and window
    std::string chunk(64 * 1024, 'x');
    for (int i = 0; i < 128; i++)
      if (::write(wr.get(), chunk.data(), chunk.size()) < 0) break;
    wr.reset();
  });
  agent::ExecOptions o;
  o.interactive = true;
  Run r, s;
  try {
    r = run({"sh", "-c", "head -c 10 >/dev/null; echo done"}, o, rd.get());
    s = run({"sleep", "0.2"}, o, rd.get());  // never reads; the feeder may still be writing
  } catch (const std::exception& e) {
    FAIL_CHECK(std::string(e.what()));
  }
  rd.reset();  // unblocks the feeder if it still writes
  feeder.join();
  CHECK(r.r.exit_code == 0);
  CHECK(r.out == "done\n");
  CHECK(s.r.exit_code == 0);
}

TEST_CASE("exec: bulk output arrives complete while stdin is fed at the same time" *
          test::needs_guest_init()) {
  NEED_AGENT();
  std::string expect;
  for (int i = 1; i <= 300000; i++) expect += std::to_string(i) + "\n";
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  Fd rd(p[0]), wr(p[1]);
  std::thread feeder([&wr] {
    std::string chunk(64 * 1024, 'y');
    for (int i = 0; i < 64; i++)
      if (::write(wr.get(), chunk.data(), chunk.size()) < 0) break;
    wr.reset();
  });
  agent::ExecOptions o;
  o.interactive = true;
  // Output first (while nobody reads stdin), then consume the 4 MiB of stdin.
  Run r;
  try {
    r = run({"sh", "-c", "seq 1 300000; wc -c >&2"}, o, rd.get());
  } catch (const std::exception& e) {
    FAIL_CHECK(std::string(e.what()));
  }
  rd.reset();
  feeder.join();
  CHECK(r.r.exit_code == 0);
  CHECK(r.out.size() == expect.size());
  CHECK(r.out == expect);
  CHECK(r.err.find("4194304") != std::string::npos);
}

TEST_CASE("exec: several execs run at once on one agent" * test::needs_guest_init()) {
  NEED_AGENT();
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; i++)
    ts.emplace_back([&ok, i] {
      auto r = run({"sh", "-c", "sleep 1; echo " + std::to_string(i)});
      if (r.r.exit_code == 0 && r.out == std::to_string(i) + "\n") ok++;
    });
  for (auto& t : ts) t.join();
  CHECK(ok == 4);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(3500));  // not 4 s
}

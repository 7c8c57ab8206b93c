// Unit tests for util/process: start times, liveness, pidfd handles, Child, detached spawning
// (with one fd, and with SpawnOptions: several fds in order, a replaced environment, PID 1 of a
// new PID namespace), run() and find_program(), the signal guard, and a process's CPU time and
// waiting for it to go quiet (a child spinning for a while, or forever), and set_process_strings
// (a process's cmdline and environment rewritten as an exec would leave them).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "support/scoped_env.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"

using namespace space;

namespace {
proc::Child spawn_sleep() {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::execl("/bin/sleep", "sleep", "30", nullptr);
    ::_exit(127);
  }
  return proc::Child(pid);
}
}  // namespace

TEST_CASE("start time and liveness of this process") {
  auto st = proc::start_time(::getpid());
  REQUIRE(st.has_value());
  CHECK(proc::is_alive(::getpid(), *st));
  CHECK_FALSE(proc::is_alive(::getpid(), *st + 1));
  CHECK_FALSE(proc::start_time(0).has_value());
  CHECK_FALSE(proc::start_time(0x7ffffff0).has_value());
}

TEST_CASE("ProcessRef signals only the process it verified") {
  proc::Child c = spawn_sleep();
  auto st = proc::start_time(c.pid()).value();
  CHECK_FALSE(proc::ProcessRef::open(c.pid(), st + 1).has_value());  // a "recycled" pid
  auto ref = proc::ProcessRef::open(c.pid(), st);
  REQUIRE(ref.has_value());
  CHECK_FALSE(ref->wait_exit(50));
  CHECK(ref->signal(SIGKILL));
  CHECK(ref->wait_exit(5000));
  CHECK(c.exited());
  CHECK(WIFSIGNALED(c.status()));
  CHECK(proc::describe_status(c.status()) == "killed by signal 9 (SIGKILL)");
  CHECK_FALSE(proc::is_alive(c.pid(), st));  // reaped
}

TEST_CASE("a zombie is not alive") {
  proc::Child c = spawn_sleep();
  auto st = proc::start_time(c.pid()).value();
  ::kill(c.pid(), SIGKILL);
  auto ref = proc::ProcessRef::open(c.pid(), st);
  if (ref) ref->wait_exit(5000);
  CHECK_FALSE(proc::is_alive(c.pid(), st));  // exited but not reaped yet
}

TEST_CASE("Child kills its process unless released") {
  pid_t pid;
  uint64_t st;
  {
    proc::Child c = spawn_sleep();
    pid = c.pid();
    st = proc::start_time(pid).value();
    CHECK_FALSE(c.exited());
  }
  CHECK_FALSE(proc::is_alive(pid, st));
  proc::Child c = spawn_sleep();
  pid = c.pid();
  CHECK(c.release() == pid);
  CHECK(proc::start_time(pid).has_value());
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

TEST_CASE("spawn_detached: new session, stdio to the log, the passed fd as fd 3") {
  test::TempDir d("proc");
  std::string dir = d.path, log = dir + "/out.log";
  Pipe p = Pipe::make();
  proc::Child c =
      proc::spawn_detached({"/bin/sh", "-c",
                            "echo sid=$(($(cut -d' ' -f6 /proc/self/stat) == $$)); echo err >&2; "
                            "ls /proc/self/fd | wc -l; read x || echo stdin-eof; echo ok >&3"},
                           log, p.write.get());
  p.write.reset();
  char buf[16] = {};
  CHECK(read_full(p.read.get(), buf, sizeof buf) == 3);
  CHECK(std::string(buf) == "ok\n");
  while (!c.exited()) ::usleep(1000);
  CHECK(WEXITSTATUS(c.status()) == 0);
  std::string out = fs::read_file(log);
  CHECK(out.find("err\n") != std::string::npos);
  CHECK(out.find("stdin-eof") != std::string::npos);
  // fds of `ls`: 0, 1, 2, 3 and the one it opened for /proc/self/fd.
  CHECK(out.find("\n5\n") != std::string::npos);
  // A failed exec, or a log that cannot be opened, is an error of the spawn itself.
  CHECK_THROWS_WITH_AS(proc::spawn_detached({"/nonexistent"}, log, -1),
                       ("start /nonexistent (log " + log + "): No such file or directory").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(
      proc::spawn_detached({"/bin/true"}, dir + "/no/such/dir/log", -1),
      ("start /bin/true (log " + dir + "/no/such/dir/log): No such file or directory").c_str(),
      Error);
}

TEST_CASE("spawn_detached with SpawnOptions: fds in order, only the given environment") {
  test::TempDir d("proc");
  std::string log = d.path + "/out.log", out = d.path + "/env";
  test::ScopedEnv leak("SPACE_TEST_LEAK", "leaked");
  Pipe a = Pipe::make(), b = Pipe::make();
  proc::SpawnOptions o;
  o.fds = {b.write.get(), a.write.get()};  // b becomes fd 3, a fd 4
  o.env = std::vector<std::string>{"ONLY=yes", "SECOND=2"};
  proc::Child c = proc::spawn_detached({"/bin/sh", "-c",
                                        "/usr/bin/env > " + out +
                                            "; echo three >&3; echo four >&4; "
                                            "/bin/ls /proc/self/fd | /usr/bin/wc -l"},
                                       log, o);
  b.write.reset();
  a.write.reset();
  char buf[16] = {};
  CHECK(read_full(b.read.get(), buf, sizeof buf) == 6);
  CHECK(std::string(buf) == "three\n");
  char buf2[16] = {};
  CHECK(read_full(a.read.get(), buf2, sizeof buf2) == 5);
  CHECK(std::string(buf2) == "four\n");
  CHECK(WEXITSTATUS(c.wait()) == 0);
  std::string env = fs::read_file(out);
  CHECK(env.find("ONLY=yes\n") != std::string::npos);
  CHECK(env.find("SECOND=2\n") != std::string::npos);
  CHECK(env.find("SPACE_TEST_LEAK") == std::string::npos);
  // Nothing else of ours: every line is one we gave, or the PWD the shell exports itself.
  size_t start = 0;
  while (start < env.size()) {
    size_t nl = env.find('\n', start);
    std::string line = env.substr(start, nl - start);
    CHECK_MESSAGE((line == "ONLY=yes" || line == "SECOND=2" || line.rfind("PWD=", 0) == 0), line);
    start = nl == std::string::npos ? env.size() : nl + 1;
  }
  // fds of `ls`: 0, 1, 2, 3, 4 and the one it opened for /proc/self/fd.
  CHECK(fs::read_file(log) == "6\n");
}

TEST_CASE("spawn_detached with new_pid_namespace runs the child as PID 1" * test::needs_root()) {
  test::TempDir d("proc");
  std::string log = d.path + "/out.log", out = d.path + "/pid";
  test::ScopedEnv leak("SPACE_TEST_LEAK", "leaked");
  Pipe a = Pipe::make(), b = Pipe::make();
  proc::SpawnOptions o;
  o.fds = {a.write.get(), b.write.get()};
  o.new_pid_namespace = true;
  o.env = std::vector<std::string>{"ONLY=yes"};
  proc::Child c = proc::spawn_detached(
      {"/bin/sh", "-c",
       "echo $$ ${ONLY-} ${SPACE_TEST_LEAK-none} > " + out + "; echo 3 >&3; echo 4 >&4"},
      log, o);
  a.write.reset();
  b.write.reset();
  char buf[8] = {};
  CHECK(read_full(a.read.get(), buf, sizeof buf) == 2);
  CHECK(std::string(buf) == "3\n");
  char buf2[8] = {};
  CHECK(read_full(b.read.get(), buf2, sizeof buf2) == 2);
  CHECK(std::string(buf2) == "4\n");
  CHECK(c.pid() > 1);  // its pid out here
  int status = c.wait();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fs::read_file(out) == "1 yes none\n");
  CHECK(fs::read_file(log).empty());
}

TEST_CASE(
    "spawn_detached with an init: the program is PID 2 with its fds only; the init keeps its" *
    test::needs_root()) {
  test::TempDir d("proc");
  std::string log = d.path + "/out.log", out = d.path + "/program";
  Pipe ready = Pipe::make(), init_pipe = Pipe::make();
  proc::SpawnOptions o;
  o.fds = {ready.write.get(), init_pipe.write.get()};  // fd 3 the program's, fd 4 the init's
  o.init_fds = 1;
  o.new_pid_namespace = true;
  o.env = std::vector<std::string>{"ONLY=yes"};
  o.init = [](pid_t program, int first_fd) {
    // The init: say who it is and what it got on its own fd, then wait for the program.
    std::string line = std::to_string(::getpid()) + " " + std::to_string(program) + " " +
                       std::to_string(first_fd) + " " +
                       (::fcntl(3, F_GETFD) < 0 ? "no-fd-3" : "fd-3") + "\n";
    write_all(first_fd, line.data(), line.size());
    int status = 0;
    ::waitpid(program, &status, 0);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) + 10 : 99);
  };
  // The program: its pid, its environment, its fds; it writes on fd 3 and fd 4 must be closed.
  proc::Child c =
      proc::spawn_detached({"/bin/sh", "-c",
                            "echo $$ ${ONLY-} > " + out +
                                "; echo ok >&3; if { true >&4; } 2>/dev/null; then exit 7; fi"},
                           log, o);
  ready.write.reset();
  init_pipe.write.reset();
  char buf[8] = {};
  CHECK(read_full(ready.read.get(), buf, sizeof buf) == 3);
  CHECK(std::string(buf) == "ok\n");
  std::string init_line(64, '\0');
  init_line.resize(read_full(init_pipe.read.get(), init_line.data(), init_line.size()));
  CHECK(init_line == "1 2 4 no-fd-3\n");  // PID 1; the program PID 2; its own fd 4; not fd 3
  int status = c.wait();                  // the init's: the program's exit code + 10
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 10);
  CHECK(fs::read_file(out) == "2 yes\n");
  CHECK(fs::read_file(log).empty());
  // An init needs a new PID namespace and may not claim more fds than are passed.
  proc::SpawnOptions bad = o;
  bad.new_pid_namespace = false;
  CHECK_THROWS_AS(proc::spawn_detached({"/bin/true"}, log, bad), Error);
  bad = o;
  bad.init_fds = 3;
  CHECK_THROWS_AS(proc::spawn_detached({"/bin/true"}, log, bad), Error);
}

namespace {
// A forked child that calls set_process_strings(args, env) and reports its result and what
// getenv() then reads of A, SPACE_TEST_B and SPACE_TEST_LEAK; it stays until `hold` is closed, so
// that its /proc files can be read.
struct StringsChild {
  pid_t pid = -1;
  std::string report;
  Fd hold;
  ~StringsChild() {
    hold.reset();
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
};
void start_strings_child(StringsChild& c, const std::vector<std::string>& args,
                         const std::vector<std::string>& env) {
  Pipe done = Pipe::make(), hold = Pipe::make();
  c.pid = ::fork();
  REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    hold.write.reset();  // so that the read below ends when the parent closes its end
    int err = proc::set_process_strings(args, env);
    std::string r = std::to_string(err);
    for (const char* name : {"A", "SPACE_TEST_B", "SPACE_TEST_LEAK"}) {
      const char* v = std::getenv(name);
      r += std::string(" ") + (v ? v : "-");
    }
    (void)write_all(done.write.get(), r.data(), r.size());
    done.write.reset();
    char x;
    (void)::read(hold.read.get(), &x, 1);
    ::_exit(0);
  }
  done.write.reset();
  c.hold = std::move(hold.write);
  c.report.resize(256);
  c.report.resize(read_full(done.read.get(), c.report.data(), c.report.size()));
}
std::string proc_file(pid_t pid, const char* name) {
  return fs::read_file("/proc/" + std::to_string(pid) + "/" + name);
}
}  // namespace

TEST_CASE("set_process_strings: cmdline, environ and getenv as an exec would leave them") {
  test::ScopedEnv leak("SPACE_TEST_LEAK", "leaked");
  using namespace std::string_literals;
  SUBCASE("arguments and environment that fit: exactly these, nothing of the old ones") {
    StringsChild c;
    start_strings_child(c, {"space", "--root", "/a root", "__jail-init", "s1"},
                        {"A=1", "SPACE_TEST_B=b c", "EMPTY="});
    CHECK(c.report == "0 1 b c -");
    CHECK(proc_file(c.pid, "cmdline") == "space\0--root\0/a root\0__jail-init\0s1\0"s);
    CHECK(proc_file(c.pid, "environ") == "A=1\0SPACE_TEST_B=b c\0EMPTY=\0"s);
    CHECK(proc::command_line(c.pid) == "space --root /a root __jail-init s1");
  }
  SUBCASE("no environment") {
    StringsChild c;
    start_strings_child(c, {"init"}, {});
    CHECK(c.report == "0 - - -");
    CHECK(proc_file(c.pid, "cmdline") == "init\0"s);
    CHECK(proc_file(c.pid, "environ").empty());
  }
  SUBCASE("arguments past the room: truncated, still NUL-ended, and an empty environ") {
    // The test runner's arguments and environment are far shorter than 1 MiB.
    std::string big(1 << 20, 'x');
    StringsChild c;
    start_strings_child(c, {"init", big}, {"A=2"});
    CHECK(c.report == "0 2 - -");
    std::string cmdline = proc_file(c.pid, "cmdline");
    REQUIRE(cmdline.size() > 6);
    CHECK(cmdline.size() < big.size());
    CHECK(cmdline.compare(0, 5, "init\0"s) == 0);
    CHECK(cmdline.find_first_not_of('x', 5) == cmdline.size() - 1);
    CHECK(cmdline.back() == '\0');
    CHECK(proc_file(c.pid, "environ").empty());
  }
  SUBCASE("refused before anything changes: no arguments, a string without a name or '='") {
    for (auto env : {std::vector<std::string>{"=x"}, std::vector<std::string>{"NOEQ"}}) {
      StringsChild c;
      start_strings_child(c, {"init"}, env);
      CHECK(c.report == std::to_string(EINVAL) + " - - leaked");
    }
    StringsChild c;
    start_strings_child(c, {}, {"A=1"});
    CHECK(c.report == std::to_string(EINVAL) + " - - leaked");
  }
}

TEST_CASE("SignalGuard turns SIGINT into a readable fd") {
  {
    proc::SignalGuard g;
    CHECK_NOTHROW(g.check());
    ::kill(::getpid(), SIGINT);
    CHECK_THROWS_WITH_AS(g.check(), "interrupted by SIGINT", Error);
    CHECK(g.take() == 0);  // consumed
  }
  CHECK(proc::signal_name(SIGTERM) == "SIGTERM");
}

TEST_CASE("run captures output and status; find_program searches PATH and sbin") {
  std::string sh = proc::find_program("sh");
  REQUIRE_FALSE(sh.empty());
  CHECK(sh[0] == '/');
  CHECK(proc::find_program("no-such-program-here").empty());
  auto r = proc::run({sh, "-c", "echo out; echo err >&2; exit 3"});
  CHECK_FALSE(r.ok());
  CHECK(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 3);
  CHECK(r.output.find("out\n") != std::string::npos);
  CHECK(r.output.find("err\n") != std::string::npos);
  CHECK(proc::run({sh, "-c", "exit 0"}).ok());
  auto missing = proc::run({"/nonexistent/program"});
  CHECK(WEXITSTATUS(missing.status) == 127);
}

namespace {
// Forks a caller that runs `sh -c 'echo $$ >PIDFILE; exec sleep 30'` through proc::run, then
// kills that caller with SIGKILL once the sleep runs; the sleep's pid.
pid_t orphan_sleep(const std::string& pidfile, bool dies_with_caller) {
  std::string sh = proc::find_program("sh");
  pid_t caller = ::fork();
  REQUIRE(caller >= 0);
  if (caller == 0) {
    proc::run(
        {sh, "-c",
         "echo $$ >" + pidfile + ".tmp && mv " + pidfile + ".tmp " + pidfile + " && exec sleep 30"},
        -1, dies_with_caller);
    ::_exit(0);
  }
  proc::Child c(caller);
  pid_t sleeper = -1;
  for (int i = 0; i < 500 && sleeper < 0; i++) {
    if (fs::exists(pidfile))
      sleeper = std::stoi(fs::read_file(pidfile, 64));
    else
      ::usleep(10'000);
  }
  REQUIRE(sleeper > 0);
  ::usleep(50'000);  // the exec of sleep is done
  ::kill(caller, SIGKILL);
  c.wait();
  return sleeper;
}

// True once `pid` is gone (reaped by init, or a zombie) within `ms`.
bool gone_within(pid_t pid, int ms) {
  std::optional<uint64_t> start = proc::start_time(pid);
  for (int i = 0; i < ms / 10; i++) {
    if (!start || !proc::is_alive(pid, *start)) return true;
    ::usleep(10'000);
  }
  return false;
}
}  // namespace

TEST_CASE("run with dies_with_caller: the program is killed when its caller dies, not without") {
  test::TempDir dir;
  pid_t bound = orphan_sleep(dir.path + "/bound", true);
  CHECK(gone_within(bound, 2000));
  pid_t free_one = orphan_sleep(dir.path + "/free", false);
  CHECK_FALSE(gone_within(free_one, 300));  // orphaned, and still running
  ::kill(free_one, SIGKILL);
}

namespace {
// A child that spins on the CPU for `busy_ms` (forever when negative), then sleeps.
proc::Child spawn_spinner(int busy_ms) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    timespec t0{}, now{};
    ::clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1'000'000;
      if (busy_ms >= 0 && ms >= busy_ms) break;
    }
    ::pause();
    ::_exit(0);
  }
  return proc::Child(pid);
}
}  // namespace

TEST_CASE("threads_cpu_time_ns counts a spinning process's time, to well under a tick") {
  // The child spins until it has used 150 ms of CPU by its own clock, however busy the host is,
  // then says so and sleeps.
  Pipe done = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    timespec t{};
    do ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    while (t.tv_sec == 0 && t.tv_nsec < 150'000'000);
    (void)!::write(done.write.get(), "s", 1);
    ::pause();
    ::_exit(0);
  }
  proc::Child c(pid);
  done.write.reset();
  char b = 0;
  REQUIRE(::read(done.read.get(), &b, 1) == 1);
  auto ns = proc::threads_cpu_time_ns(c.pid());
  REQUIRE(ns.has_value());
  CHECK(*ns >= 150'000'000ull);  // it spun 150 ms of CPU
  CHECK(*ns < 290'000'000ull);   // and then slept
  CHECK_FALSE(proc::threads_cpu_time_ns(999'999'999).has_value());
}

TEST_CASE("wait_quiet: settles once a busy process stops, not before; gives up at the limit") {
  SUBCASE("busy for 400 ms, then idle: settled after it stopped") {
    proc::Child c = spawn_spinner(400);
    proc::Quiet q = proc::wait_quiet(c.pid(), 100, 2, 0.05, 10'000);
    CHECK(q.settled);
    CHECK(q.waited_ms >= 400);  // not while it still spun
    CHECK(q.last_window_ns <= 5'000'000ull);
  }
  SUBCASE("busy all along: not settled, returned at the limit") {
    proc::Child c = spawn_spinner(-1);
    proc::Quiet q = proc::wait_quiet(c.pid(), 100, 2, 0.05, 500);
    CHECK_FALSE(q.settled);
    CHECK(q.waited_ms >= 500);
    CHECK(q.last_window_ns > 5'000'000ull);
  }
  SUBCASE("a cancel fd that becomes readable ends the wait with an error") {
    proc::Child c = spawn_spinner(-1);
    int p[2];
    REQUIRE(::pipe(p) == 0);
    Fd rd(p[0]), wr(p[1]);
    REQUIRE(::write(wr.get(), "x", 1) == 1);
    CHECK_THROWS_WITH_AS(proc::wait_quiet(c.pid(), 100, 2, 0.05, 10'000, rd.get()),
                         doctest::Contains("interrupted"), Error);
  }
  SUBCASE("a process that is gone is an error") {
    proc::Child c = spawn_spinner(0);
    pid_t pid = c.pid();
    c = proc::Child();  // killed and reaped
    CHECK_THROWS_AS(proc::wait_quiet(pid, 100, 2, 0.05, 1000), Error);
  }
}

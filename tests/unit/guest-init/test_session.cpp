// guest-init's host-testable parts: the cmdline/id helpers, the Reaper registry, and a whole
// connection served over a socketpair (the unit tests link guest-init's modules, the
// guest_init_modules object library). The last case runs the real binary in its
// --serve-unix mode when it sits next to this test binary (it does after a plain `ninja`).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "guest-init/cmdline.h"
#include "guest-init/context.h"
#include "guest-init/passwd.h"
#include "guest-init/reaper.h"
#include "guest-init/session.h"
#include "proto/agent.h"
#include "proto/cred.h"
#include "proto/exec.h"

using namespace space;
using namespace space::guest;
using namespace space::proto;

TEST_CASE("valid_sandbox_id follows [a-z0-9][a-z0-9_.-]{0,63}") {
  CHECK(valid_sandbox_id("a"));
  CHECK(valid_sandbox_id("0"));
  CHECK(valid_sandbox_id("sbx-1.test_2"));
  CHECK(valid_sandbox_id(std::string(64, 'a')));
  CHECK_FALSE(valid_sandbox_id(""));
  CHECK_FALSE(valid_sandbox_id(std::string(65, 'a')));
  CHECK_FALSE(valid_sandbox_id("-a"));
  CHECK_FALSE(valid_sandbox_id(".a"));
  CHECK_FALSE(valid_sandbox_id("_a"));
  CHECK_FALSE(valid_sandbox_id("Abc"));
  CHECK_FALSE(valid_sandbox_id("a b"));
  CHECK_FALSE(valid_sandbox_id("a/b"));
  CHECK_FALSE(valid_sandbox_id(std::string("a\0b", 3)));
  CHECK_FALSE(valid_sandbox_id("é"));
}

TEST_CASE("cmdline_param finds the last occurrence, handles quotes and bare keys") {
  std::string c = "console=ttyS0 root=/dev/vda rw space.id=one quiet space.id=two\n";
  CHECK(cmdline_param(c, "space.id") == "two");
  CHECK(cmdline_param(c, "root") == "/dev/vda");
  CHECK(cmdline_param(c, "rw") == "");
  CHECK_FALSE(cmdline_param(c, "space"));      // a prefix of a key is not the key
  CHECK_FALSE(cmdline_param(c, "space.i"));
  CHECK_FALSE(cmdline_param(c, "missing"));
  CHECK(cmdline_param("a=\"x y\" b=2", "a") == "x y");
  CHECK(cmdline_param("a=\"x y\" b=2", "b") == "2");
  CHECK(cmdline_param("\"space.id=q\"", "space.id") == "q");
  CHECK(cmdline_param("", "a") == std::nullopt);
  CHECK(cmdline_param("   \t ", "a") == std::nullopt);
  CHECK(cmdline_param("a=\"unterminated", "a") == "unterminated");
  CHECK(cmdline_param("x=1=2", "x") == "1=2");
}

TEST_CASE("hostname_from_cmdline validates space.id and defaults to 'space'") {
  std::string warn;
  CHECK(hostname_from_cmdline("console=ttyS0 space.id=test1", &warn) == "test1");
  CHECK(warn.empty());
  CHECK(hostname_from_cmdline("console=ttyS0", &warn) == "space");
  CHECK(warn.empty());
  CHECK(hostname_from_cmdline("space.id=Bad!", &warn) == "space");
  CHECK(warn.find("invalid space.id") != std::string::npos);
  CHECK(hostname_from_cmdline("space.id=", nullptr) == "space");
  CHECK(hostname_from_cmdline("space.id=" + std::string(65, 'a')) == "space");
}

TEST_CASE("Reaper dispatches a registered child's status, even for an instant exit") {
  Reaper r;
  std::atomic<int> got{-1};
  pid_t pid = r.spawn([] {
    pid_t p = ::fork();
    if (p == 0) ::_exit(7);
    return p;
  }, [&](pid_t, int status) { got = WIFEXITED(status) ? WEXITSTATUS(status) : -2; });
  REQUIRE(pid > 0);
  CHECK(r.pending() == 1);
  for (int i = 0; i < 500 && got < 0; i++) {
    r.reap();
    ::usleep(2000);
  }
  CHECK(got == 7);
  CHECK(r.pending() == 0);
  CHECK(r.reap().no_children);
}

TEST_CASE("find_passwd_uid reads name, gid and home, and skips malformed lines") {
  std::string f =
      "root:x:0:0:root:/root:/bin/sh\n"
      "broken line\n"
      "short:x:7:7\n"
      "bad:x:12a:5:b:/b:/bin/sh\n"
      "huge:x:99999999999:1:h:/h:/bin/sh\n"
      "user:x:1000:100:A User:/home/user:/bin/sh\n"
      "dup:x:1000:1:d:/d:/bin/sh";
  auto u = find_passwd_uid(f, 1000);
  REQUIRE(u);
  CHECK(u->name == "user");
  CHECK(u->gid == 100);
  CHECK(u->home == "/home/user");
  CHECK(find_passwd_uid(f, 0)->home == "/root");
  CHECK_FALSE(find_passwd_uid(f, 7));
  CHECK_FALSE(find_passwd_uid(f, 12));
  CHECK_FALSE(find_passwd_uid(f, 5));
  CHECK_FALSE(find_passwd_uid("", 0));
  CHECK(find_passwd_uid("n:x:5:6:g:/h:", 5)->gid == 6);  // empty shell, no newline
  CHECK(parse_id("4294967295") == 4294967295u);
  CHECK_FALSE(parse_id("4294967296"));
  CHECK_FALSE(parse_id(""));
  CHECK_FALSE(parse_id("-1"));
}

TEST_CASE("Reaper drops the statuses of unregistered and forgotten children") {
  Reaper r;
  bool called = false;
  pid_t a = ::fork();
  if (a == 0) ::_exit(0);
  pid_t b = r.spawn([] {
    pid_t p = ::fork();
    if (p == 0) ::_exit(1);
    return p;
  }, [&](pid_t, int) { called = true; });
  r.forget(b);
  int reaped = 0;
  for (int i = 0; i < 500 && reaped < 2; i++) {
    reaped += r.reap().reaped;
    ::usleep(2000);
  }
  CHECK(reaped == 2);
  CHECK_FALSE(called);
  CHECK(r.spawn([] { return pid_t(-1); }, [](pid_t, int) {}) == -1);
  CHECK(r.pending() == 0);
}

namespace {

// The host side of one connection to a session running on a thread of this process.
struct Harness {
  Context ctx;
  Fd host;
  std::thread server;
  std::atomic<int> poweroffs{0};

  explicit Harness(std::string cred_unix = "") {
    ctx.cred_unix = std::move(cred_unix);
    ctx.console = Console(devnull());
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    host.reset(sv[0]);
    ctx.hostname = "hx";
    ctx.request_poweroff = [this] { poweroffs++; };
    server = std::thread(
        [this, fd = Fd(sv[1])]() mutable { serve_connection(std::move(fd), ctx); });
  }
  ~Harness() {
    host.reset();
    server.join();
  }
  static int devnull() {
    static Fd fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    return fd.get();
  }
  void send_raw(const std::vector<uint8_t>& b) { write_all(host.get(), b.data(), b.size()); }
  void send(Type t, const std::vector<uint8_t>& payload = {}) {
    send_raw(encode_frame(t, payload));
  }
  void hello(uint32_t version = kVersion) {
    Hello h;
    h.version = version;
    h.client = "test";
    send(Type::Hello, h.encode());
  }
  // Reads frames until `n` have arrived or the peer closes (or 5 s pass). Sets `closed`.
  std::vector<Frame> recv(size_t n) {
    std::vector<Frame> out;
    FrameDecoder d;
    uint8_t buf[4096];
    while (out.size() < n) {
      pollfd p{host.get(), POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      ssize_t k = ::read(host.get(), buf, sizeof buf);
      if (k <= 0) {
        closed = true;
        break;
      }
      d.feed({buf, static_cast<size_t>(k)});
      while (auto f = d.next()) out.push_back(std::move(*f));
    }
    return out;
  }
  // True if the server closed its end (EOF within 5 s).
  bool sees_eof() {
    if (closed) return true;
    uint8_t b[64];
    pollfd p{host.get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    return ::read(host.get(), b, sizeof b) == 0;
  }
  bool closed = false;
};

std::string error_text(const Frame& f) {
  REQUIRE(f.type == Type::Error);
  return ErrorMsg::decode(f.payload).message;
}

}  // namespace

TEST_CASE("session: Hello gets HelloReply with agent, hostname and uptime") {
  Harness h;
  h.hello();
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  REQUIRE(fs[0].type == Type::HelloReply);
  auto r = HelloReply::decode(fs[0].payload);
  CHECK(r.version == kVersion);
  CHECK(r.agent == std::string("guest-init ") + kAgentVersion);
  CHECK(r.hostname == "hx");
  CHECK(r.uptime_ms > 0);
}

TEST_CASE("session: Hello fed one byte at a time") {
  Harness h;
  Hello hello;
  hello.client = "slow";
  auto bytes = encode_frame(Type::Hello, hello.encode());
  for (uint8_t b : bytes) {
    h.send_raw({b});
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].type == Type::HelloReply);
}

TEST_CASE("session: another protocol version is refused with Error and closed") {
  Harness h;
  h.hello(kVersion + 1);
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  CHECK(error_text(fs[0]).find("protocol version") != std::string::npos);
  CHECK(h.sees_eof());
}

TEST_CASE("session: a request before Hello is refused") {
  Harness h;
  h.send(Type::Poweroff);
  auto fs = h.recv(1);
  REQUIRE(fs.size() == 1);
  CHECK(error_text(fs[0]).find("expected Hello") != std::string::npos);
  CHECK(h.sees_eof());
  CHECK(h.poweroffs == 0);
}

TEST_CASE("session: malformed frames get Error and close the connection") {
  SUBCASE("nonzero reserved field") {
    Harness h;
    h.send_raw({0, 0, 0, 0, 1, 0, 1, 0});
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("malformed frame") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("oversized length") {
    Harness h;
    h.send_raw({0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0});
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("too large") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("Hello with a truncated payload") {
    Harness h;
    h.send(Type::Hello, {1, 0, 0, 0, 9, 0, 0, 0, 'x'});
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("truncated") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("Hello with trailing bytes") {
    Harness h;
    auto p = Hello{}.encode();
    p.push_back(0);
    h.send(Type::Hello, p);
    auto fs = h.recv(1);
    REQUIRE(fs.size() == 1);
    CHECK(error_text(fs[0]).find("trailing") != std::string::npos);
  }
  SUBCASE("unknown type after Hello") {
    Harness h;
    h.hello();
    h.send_raw({0, 0, 0, 0, 0x99, 0, 0, 0});
    auto fs = h.recv(2);
    REQUIRE(fs.size() == 2);
    CHECK(fs[0].type == Type::HelloReply);
    CHECK(error_text(fs[1]).find("unsupported frame type 153") != std::string::npos);
    CHECK(h.sees_eof());
  }
  SUBCASE("duplicate Hello") {
    Harness h;
    h.hello();
    h.hello();
    auto fs = h.recv(2);
    REQUIRE(fs.size() == 2);
    CHECK(error_text(fs[1]) == "duplicate Hello");
  }
  SUBCASE("Poweroff with a payload") {
    Harness h;
    h.hello();
    h.send(Type::Poweroff, {1});
    auto fs = h.recv(2);
    REQUIRE(fs.size() == 2);
    CHECK(fs[1].type == Type::Error);
    CHECK(h.poweroffs == 0);
  }
}

TEST_CASE("session: Hello and Poweroff in one write get HelloReply, Ack and one poweroff request") {
  Harness h;
  auto a = encode_frame(Type::Hello, Hello{}.encode());
  auto b = encode_frame(Type::Poweroff, {});
  a.insert(a.end(), b.begin(), b.end());
  h.send_raw(a);
  auto fs = h.recv(2);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].type == Type::HelloReply);
  CHECK(fs[1].type == Type::Ack);
  CHECK(fs[1].payload.empty());
  // The Ack is sent before the request is made: give the session a moment.
  for (int i = 0; i < 500 && h.poweroffs == 0; i++) ::usleep(2000);
  CHECK(h.poweroffs == 1);
}

TEST_CASE("session: the host closing mid-frame ends the session quietly") {
  Harness h;
  h.send_raw({5, 0, 0, 0, 1, 0});
  // ~Harness closes the host end; the server thread must return so join() completes.
}

namespace {
std::string sibling_binary(const char* name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  auto p = self.parent_path() / name;
  return std::filesystem::exists(p) ? p.string() : std::string();
}
}  // namespace

TEST_CASE("guest-init --serve-unix serves the protocol and exits 0 on Poweroff") {
  std::string bin = sibling_binary("guest-init");
  if (bin.empty()) {
    MESSAGE("skipped: no guest-init binary next to this test (build the guest-init target)");
    return;
  }
  std::string path = "/tmp/space-gi-test-" + std::to_string(::getpid()) + ".sock";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 2);
    ::execl(bin.c_str(), bin.c_str(), "--serve-unix", path.c_str(), "--id", "unix-1", nullptr);
    ::_exit(127);
  }
  auto connect_once = [&]() -> Fd {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    for (int i = 0; i < 500; i++) {
      if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
      ::usleep(10000);
    }
    return Fd();
  };
  auto read_frames = [](int fd, size_t n) {
    std::vector<Frame> out;
    FrameDecoder d;
    uint8_t buf[4096];
    while (out.size() < n) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      ssize_t k = ::read(fd, buf, sizeof buf);
      if (k <= 0) break;
      d.feed({buf, static_cast<size_t>(k)});
      while (auto f = d.next()) out.push_back(std::move(*f));
    }
    return out;
  };

  // Two connections at once: the second is answered while the first is open and silent.
  Fd idle = connect_once();
  REQUIRE(idle);
  Fd c = connect_once();
  REQUIRE(c);
  auto hello = encode_frame(Type::Hello, Hello{}.encode());
  write_all(c.get(), hello.data(), hello.size());
  auto fs = read_frames(c.get(), 1);
  REQUIRE(fs.size() == 1);
  REQUIRE(fs[0].type == Type::HelloReply);
  CHECK(HelloReply::decode(fs[0].payload).hostname == "unix-1");

  Fd bad = connect_once();
  REQUIRE(bad);
  std::vector<uint8_t> junk = {1, 2, 3, 4, 5, 6, 7, 8};
  write_all(bad.get(), junk.data(), junk.size());
  auto err = read_frames(bad.get(), 1);
  REQUIRE(err.size() == 1);
  CHECK(err[0].type == Type::Error);

  auto off = encode_frame(Type::Poweroff, {});
  write_all(c.get(), off.data(), off.size());
  auto ack = read_frames(c.get(), 1);
  REQUIRE(ack.size() == 1);
  CHECK(ack[0].type == Type::Ack);

  int status = 0;
  for (int i = 0; i < 500; i++) {
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    ::usleep(10000);
    if (i == 499) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("guest-init did not exit after Poweroff");
    }
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(std::filesystem::exists(path));
}

namespace {

// A stand-in for the credential helper on a Unix socket: CredGet "K" gets the value "v-123",
// anything else a CredDenied "denied by test". Serves connections until destroyed.
struct FakeHelper {
  std::string path;
  Fd listener;
  std::thread t;
  std::atomic<bool> stop{false};
  std::atomic<int> requests{0};
  FakeHelper() {
    path = "/tmp/space-test-credhelper-" + std::to_string(::getpid()) + ".sock";
    ::unlink(path.c_str());
    listener.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener.get(), 8) == 0);
    t = std::thread([this] {
      for (;;) {
        pollfd p{listener.get(), POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
          if (stop) return;
          continue;
        }
        Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        FrameDecoder d;
        uint8_t buf[1024];
        ssize_t n;
        while ((n = ::read(c.get(), buf, sizeof buf)) > 0) {
          d.feed({buf, size_t(n)});
          while (auto f = d.next()) {
            requests++;
            auto g = CredGet::decode(f->payload);
            std::vector<uint8_t> out;
            if (g.name == "K") {
              std::string v = "v-123";
              out = encode_frame(Type::CredValue, CredValue{{v.begin(), v.end()}}.encode());
            } else {
              out = encode_frame(Type::CredDenied, CredDenied{DenyCode::NotGranted, "denied by test"}.encode());
            }
            write_all(c.get(), out.data(), out.size());
          }
        }
      }
    });
  }
  ~FakeHelper() {
    stop = true;
    t.join();
    ::unlink(path.c_str());
  }
};

ExecRequest shell(const std::string& script, std::vector<std::string> secret_env) {
  ExecRequest q;
  q.argv = {"/bin/sh", "-c", script};
  q.secret_env = std::move(secret_env);
  return q;
}

}  // namespace

TEST_CASE("session: --secret-env values reach the process's environment, fetched from the helper") {
  FakeHelper helper;
  Harness h(helper.path);
  std::atomic<bool> done{false};
  std::thread reaper([&] {  // guest-init's main thread reaps; here this one does
    while (!done) {
      h.ctx.reaper.reap();
      ::usleep(5000);
    }
  });
  h.hello();
  h.send(Type::Exec, shell("printf '%s|%s' \"$A\" \"$B\"", {"A=K", "B=K"}).encode());
  auto fs = h.recv(100);  // until the exec ends its connection
  done = true;
  reaper.join();
  std::string out;
  bool exited = false;
  for (auto& f : fs) {
    if (f.type == Type::Stdout) out.append(f.payload.begin(), f.payload.end());
    if (f.type == Type::Exit) {
      exited = true;
      CHECK(ExitStatus::decode(f.payload).value == 0);
    }
  }
  CHECK(exited);
  CHECK(out == "v-123|v-123");
  CHECK(helper.requests == 2);
}

TEST_CASE("session: a denied --secret-env refuses the exec with the helper's reason") {
  FakeHelper helper;
  Harness h(helper.path);
  h.hello();
  h.send(Type::Exec, shell("echo ran", {"A=K", "B=OTHER"}).encode());
  auto fs = h.recv(2);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].type == Type::HelloReply);
  CHECK(error_text(fs[1]) == "--secret-env OTHER: denied by test");
  CHECK(h.sees_eof());
}

TEST_CASE("session: an unreachable helper refuses the exec, naming the credential helper") {
  Harness h("/tmp/space-test-no-such-helper.sock");
  h.hello();
  h.send(Type::Exec, shell("echo ran", {"A=K"}).encode());
  auto fs = h.recv(2);
  REQUIRE(fs.size() == 2);
  CHECK(error_text(fs[1]).find("credential helper") != std::string::npos);
}

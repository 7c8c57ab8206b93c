// The guest-init binary itself (main.cpp) in its --serve-unix test mode: it serves the agent
// protocol on a Unix socket, answers one connection while another is open, refuses a malformed
// frame, and exits 0 (removing its socket) on Poweroff. Skipped when the binary is not found
// (support/guest_init_binary.h).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "proto/agent.h"
#include "support/guest_init_binary.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/fd.h"

using namespace space;
using namespace space::proto;

// Skipped without a guest-init binary next to this test (build the guest-init target).
TEST_CASE("guest-init --serve-unix serves the protocol and exits 0 on Poweroff" *
          doctest::skip(test::guest_init_binary().empty())) {
  std::string bin = test::guest_init_binary();
  test::TempDir d("gi");
  std::string path = d.path + "/agent.sock";
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

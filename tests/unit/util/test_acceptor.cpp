// Unit tests for util/acceptor: with the descriptor table full, a waiting client is turned away
// (it sees EOF) and the listener is no longer readable, instead of staying readable for ever
// and spinning the loop that serves it. Runs in a forked child, whose table it may fill.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "support/temp_dir.h"
#include "util/acceptor.h"
#include "util/socket.h"

using namespace space;

TEST_CASE("Acceptor: an accepted client, then out of descriptors a client turned away") {
  test::TempDir dir("acceptor");
  std::string path = dir.path + "/l.sock";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int step = 10;
    try {
      Fd listener = net::unix_listen(path);
      Acceptor acc;
      Fd a = net::unix_connect(path, net::Deadline::after_ms(1000));
      step = 11;
      Fd served = acc.accept(listener.get(), SOCK_CLOEXEC);
      if (!served) _exit(step);
      step = 12;
      if (acc.accept(listener.get(), SOCK_CLOEXEC) || errno != EAGAIN) _exit(step);
      step = 13;
      Fd b = net::unix_connect(path, net::Deadline::after_ms(1000));
      rlimit lim{64, 64};
      if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(step);
      while (::dup(0) >= 0) {
      }
      if (errno != EMFILE) _exit(step);
      step = 14;
      if (acc.accept(listener.get(), SOCK_CLOEXEC) || errno != EMFILE) _exit(step);
      if (acc.turned_away() != 1) _exit(step);
      step = 15;
      pollfd p{listener.get(), POLLIN, 0};
      if (::poll(&p, 1, 0) != 0) _exit(step);  // not readable: nothing left to spin on
      step = 16;
      char c;
      if (::recv(b.get(), &c, 1, 0) != 0) _exit(step);  // the client saw EOF
      _exit(0);
    } catch (...) {
      _exit(step + 50);
    }
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

// Unit tests for guest-init/listener's Unix side (the --serve-unix test mode; vsock needs a
// guest): a listening socket that replaces a stale socket file but never another kind of file,
// path limits, and accept_connection.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "guest-init/listener.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

using namespace space;

namespace {

Fd connect_to(const std::string& path) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

}  // namespace

TEST_CASE(
    "listen_unix listens (close-on-exec), replaces a stale socket, accept_connection accepts") {
  test::TempDir d("listener");
  std::string path = d.path + "/agent.sock";
  Fd l = guest::listen_unix(path);
  REQUIRE(l.valid());
  CHECK((::fcntl(l.get(), F_GETFD) & FD_CLOEXEC) != 0);
  Fd c = connect_to(path);
  Fd s = guest::accept_connection(l.get());
  REQUIRE(s.valid());
  CHECK((::fcntl(s.get(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(::write(c.get(), "hi", 2) == 2);
  char buf[2];
  CHECK(::read(s.get(), buf, 2) == 2);

  l.reset();  // the socket file stays behind, as after a crash
  Fd again = guest::listen_unix(path);
  REQUIRE(again.valid());
  Fd c2 = connect_to(path);
  CHECK(guest::accept_connection(again.get()).valid());

  Fd not_listening(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  CHECK_FALSE(guest::accept_connection(not_listening.get()).valid());
}

TEST_CASE("listen_unix never removes a file that is not a socket, and checks the path length") {
  test::TempDir d("listener");
  std::string file = d.path + "/data";
  fs::write_file_atomic(file, "keep me");
  std::string bind_error = "bind " + file;
  CHECK_THROWS_WITH_AS(guest::listen_unix(file), doctest::Contains(bind_error.c_str()), Error);
  CHECK(fs::read_file(file) == "keep me");
  CHECK_THROWS_WITH_AS(guest::listen_unix(""),
                       doctest::Contains("is empty or longer than 107 bytes"), Error);
  CHECK_THROWS_WITH_AS(guest::listen_unix("/" + std::string(107, 'x')),
                       doctest::Contains("is empty or longer than 107 bytes"), Error);
}

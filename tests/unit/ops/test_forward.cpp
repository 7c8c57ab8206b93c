// core/forward: the [ADDR:]HOST_PORT:GUEST_PORT and --unix PATH:GUEST_PORT forms, every malformed
// spec refused with the forms in the hint, and a --unix listener closed to other uids. (Carrying
// connections needs a VM: tests/integration/90_net.sh.)
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "ops/forward.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/socket.h"

using namespace space;
using ops::ForwardSpec;
using ops::parse_forward_spec;

TEST_CASE("forward specs parse in every form") {
  CHECK(parse_forward_spec("8080:80") == ForwardSpec{"127.0.0.1", 8080, 80});
  CHECK(parse_forward_spec("0:80") == ForwardSpec{"127.0.0.1", 0, 80});
  CHECK(parse_forward_spec("127.0.0.2:9000:8000") == ForwardSpec{"127.0.0.2", 9000, 8000});
  CHECK(parse_forward_spec("0.0.0.0:1:65535") == ForwardSpec{"0.0.0.0", 1, 65535});
  CHECK(parse_forward_spec("localhost:5000:5000") == ForwardSpec{"127.0.0.1", 5000, 5000});
  CHECK(parse_forward_spec("[::1]:8080:80") == ForwardSpec{"::1", 8080, 80});
}

TEST_CASE("malformed forward specs are refused with the forms") {
  for (const char* bad :
       {"", "80", "a:80", "80:", ":80", "80:0", "80:65536", "65536:80", "1:2:3:4",
        "host.example:1:2", "[::1]80:1", "[nope]:1:2", "[::1]:1", "-1:80", "80:+1", "1.2.3:1:2"}) {
    CAPTURE(bad);
    try {
      parse_forward_spec(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).rfind(std::string("forward \"") + bad + "\"", 0) == 0);
      CHECK(e.hint().find("HOST_PORT:GUEST_PORT") != std::string::npos);
    }
  }
}

TEST_CASE("--unix forward specs: PATH:GUEST_PORT, the path made absolute") {
  ForwardSpec s = ops::parse_unix_forward_spec("/run/user/fwd.sock:8000");
  CHECK(s.unix_path == "/run/user/fwd.sock");
  CHECK(s.guest_port == 8000);
  CHECK(ops::parse_unix_forward_spec("/tmp/a:b.sock:1").unix_path == "/tmp/a:b.sock");
  CHECK(ops::parse_unix_forward_spec("rel.sock:1").unix_path == fs::absolute("rel.sock"));
  for (const char* bad : {"", "/x", ":80", "/x:0", "/x:65536", "/x:port"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(ops::parse_unix_forward_spec(bad),
                         doctest::Contains((std::string("forward --unix \"") + bad + "\"").c_str()),
                         Error);
  }
}

TEST_CASE("a --unix forward listens on a socket of mode 0600") {
  test::TempDir t("fwd-unix");
  ForwardSpec s = ops::parse_unix_forward_spec(t.path + "/f.sock:80");
  net::Listener l = ops::listen_forward(s);
  struct stat st {};
  REQUIRE(::stat((t.path + "/f.sock").c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
}

// A forward's TCP port on 127.0.0.1 takes any local user's connection; the --unix one does not:
// its socket is mode 0600, so another uid's connect() is refused by the file's permission.
TEST_CASE("a --unix forward listens on a socket only its owner can connect to" *
          test::needs_root()) {
  test::TempDir t("fwd-unix");
  ForwardSpec s = ops::parse_unix_forward_spec(t.path + "/f.sock:80");
  net::Listener l = ops::listen_forward(s);
  ::chmod(t.path.c_str(), 0755);  // the directory is not what keeps the other uid out
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
    try {
      net::unix_connect(t.path + "/f.sock", net::Deadline::after_ms(2000));
      ::_exit(0);  // connected: the socket is open to others
    } catch (const Error& e) {
      ::_exit(e.err() == EACCES ? 1 : 2);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);  // refused with EACCES
  // And a TCP forward's listener, for contrast, is a plain socket anyone on the host can reach.
  ForwardSpec tcp = ops::parse_forward_spec("127.0.0.1:0:80");
  net::Listener tl = ops::listen_forward(tcp);
  CHECK(tcp.host_port != 0);
}

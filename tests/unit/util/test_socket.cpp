// Unit tests for util/socket: deadlines and cancellation fds, line reads on pipes and sockets
// (one line at a time, nothing past the newline consumed), unix_connect's errors, who a
// listener serves (mode 0600, and peer_trusted: root or our uid only), descriptors passed in
// pieces (600 at once) and received, unix_bind's mode and owner without listening, peer_pid
// naming whoever called listen(), and unlink_if_ours leaving a later server's file alone.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/socket.h"

using namespace space;

namespace {
void write_str(int fd, const std::string& s) {
  write_all(fd, s.data(), s.size());
}
}  // namespace

TEST_CASE("deadlines time out and cancel fds cancel") {
  Pipe p = Pipe::make();
  set_nonblocking(p.read.get());
  try {
    net::read_line(p.read.get(), net::Deadline::after_ms(30));
    FAIL("no timeout");
  } catch (const Error& e) {
    CHECK(e.err() == ETIMEDOUT);
  }
  Pipe cancel = Pipe::make();
  write_str(cancel.write.get(), "x");
  auto dl = net::Deadline::never();
  dl.cancel_on(cancel.read.get());
  CHECK_THROWS_AS(net::read_line(p.read.get(), dl), net::Cancelled);
  CHECK_THROWS_AS(net::sleep_ms(5000, dl), net::Cancelled);
  write_str(p.write.get(), "line one\npartial");
  p.write.reset();
  CHECK(net::read_line(p.read.get(), net::Deadline::after_ms(1000)) == "line one");
  CHECK_THROWS_WITH_AS(net::read_line(p.read.get(), net::Deadline::after_ms(1000)),
                       doctest::Contains("middle of a line"), Error);
}

TEST_CASE("read_line on a socket takes one line and leaves what follows") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  auto dl = [] { return net::Deadline::after_ms(1000); };
  write_str(a.get(), "OK 1024\nfirst\nsec");
  CHECK(net::read_line(b.get(), dl(), 64) == "OK 1024");
  CHECK(net::read_line(b.get(), dl(), 64) == "first");
  std::thread later([&] {
    ::usleep(20000);
    write_str(a.get(), "ond\nrest");
  });
  CHECK(net::read_line(b.get(), dl(), 64) == "second");  // a line split across two writes
  later.join();
  char rest[8] = {};
  CHECK(::read(b.get(), rest, sizeof rest) == 4);  // nothing after the newline was consumed
  CHECK(std::string(rest) == "rest");
  write_str(a.get(), std::string(100, 'x') + "\n");
  CHECK_THROWS_WITH_AS(net::read_line(b.get(), dl(), 64), doctest::Contains("longer than 64"),
                       Error);
  a.reset();
  CHECK_FALSE(net::read_line(b.get(), dl(), 1000).has_value());  // EOF at a line boundary
}

TEST_CASE("unix_connect errors carry errno") {
  try {
    net::unix_connect("/tmp/space-test-definitely-missing.sock", net::Deadline::after_ms(100));
    FAIL("connected");
  } catch (const Error& e) {
    CHECK(e.err() == ENOENT);
  }
  CHECK_THROWS_WITH_AS(net::unix_connect(std::string(200, 'x'), net::Deadline::after_ms(100)),
                       doctest::Contains("longer than"), Error);
}

TEST_CASE("unix_listen makes the socket 0600; peer_trusted accepts root and us, not others") {
  test::TempDir dir("peer");
  std::string path = dir.path + "/s.sock";
  ::chmod(dir.path.c_str(), 0755);  // let another uid reach the socket file
  Fd l = net::unix_listen(path);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  Fd mine = net::unix_connect(path, net::Deadline::after_ms(1000));
  net::wait_ready(l.get(), POLLIN, net::Deadline::after_ms(1000), "accept");
  Fd a(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
  REQUIRE(a);
  CHECK(net::peer_uid(a.get()) == static_cast<long>(::geteuid()));
  CHECK(net::peer_trusted(a.get()));
  if (::geteuid() != 0) return;  // the other-uid half needs root to become someone else
  ::chmod(path.c_str(), 0666);   // so that uid 65534 can connect at all
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(2);
    try {
      Fd c = net::unix_connect(path, net::Deadline::after_ms(2000));
      char b;
      ::recv(c.get(), &b, 1, 0);  // until the parent has looked
    } catch (...) {
      _exit(3);
    }
    _exit(0);
  }
  net::wait_ready(l.get(), POLLIN, net::Deadline::after_ms(2000), "accept");
  Fd other(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
  REQUIRE(other);
  CHECK(net::peer_uid(other.get()) == 65534);
  CHECK_FALSE(net::peer_trusted(other.get()));
  other.reset();
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("send_with_fds carries 600 descriptors in pieces; recv_with_fds gets them all") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  timeval two_s{2, 0};
  REQUIRE(::setsockopt(b.get(), SOL_SOCKET, SO_RCVTIMEO, &two_s, sizeof two_s) == 0);
  Pipe p = Pipe::make();
  struct stat pipe_st {};
  REQUIRE(::fstat(p.write.get(), &pipe_st) == 0);
  std::vector<int> fds;
  {
    std::vector<Fd> dups;
    for (int i = 0; i < 600; i++) {
      dups.emplace_back(::fcntl(p.write.get(), F_DUPFD_CLOEXEC, 0));
      REQUIRE(dups.back());
      fds.push_back(dups.back().get());
    }
    const std::string line = "branch 600\n";
    net::send_with_fds(a.get(), line, fds, net::Deadline::after_ms(2000));
  }  // the sender's copies are closed: those in flight live on
  std::string got;
  std::vector<Fd> received;
  char buf[64];
  while (got.find('\n') == std::string::npos) {
    ssize_t n = net::recv_with_fds(b.get(), buf, received);
    REQUIRE(n > 0);
    got.append(buf, static_cast<size_t>(n));
  }
  CHECK(got == "branch 600\n");
  REQUIRE(received.size() == 600);
  for (auto& fd : received) {
    struct stat st {};
    REQUIRE(::fstat(fd.get(), &st) == 0);
    CHECK(st.st_ino == pipe_st.st_ino);
    CHECK((::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
  }
  write_str(received.back().get(), "z");
  char c = 0;
  CHECK(::read(p.read.get(), &c, 1) == 1);
  CHECK(c == 'z');
  // Without descriptors it is an ordinary send.
  net::send_with_fds(a.get(), "plain\n", {}, net::Deadline::after_ms(1000));
  std::vector<Fd> none;
  CHECK(net::recv_with_fds(b.get(), buf, none) == 6);
  CHECK(none.empty());
}

TEST_CASE("send_with_fds refuses more pieces of descriptors than bytes") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  std::vector<int> many(251, sv[1]), one(1, sv[1]);
  auto dl = net::Deadline::after_ms(1000);
  CHECK_THROWS_WITH_AS(net::send_with_fds(a.get(), "x", many, dl),
                       doctest::Contains("more descriptors than bytes"), Error);
  CHECK_THROWS_WITH_AS(net::send_with_fds(a.get(), "", one, dl),
                       doctest::Contains("more descriptors than bytes"), Error);
  CHECK_NOTHROW(net::send_with_fds(a.get(), "xy", many, dl));  // two pieces, two bytes
  std::vector<Fd> got;
  char buf[8];
  size_t bytes = 0;
  while (bytes < 2) {
    ssize_t n = net::recv_with_fds(b.get(), buf, got);
    REQUIRE(n > 0);
    bytes += static_cast<size_t>(n);
  }
  CHECK(got.size() == 251);
}

TEST_CASE("unix_bind sets mode and owner and does not listen") {
  test::TempDir dir("bind");
  std::string path = dir.path + "/s.sock";
  gid_t gid = ::geteuid() == 0 ? 4321 : ::getegid();
  Fd s = net::unix_bind(path, net::SocketAccess{0660, static_cast<uid_t>(-1), gid});
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 07777) == 0660);
  CHECK(st.st_uid == ::geteuid());
  CHECK(st.st_gid == gid);
  CHECK((::fcntl(s.get(), F_GETFL) & O_NONBLOCK) != 0);
  CHECK((::fcntl(s.get(), F_GETFD) & FD_CLOEXEC) != 0);
  try {
    net::unix_connect(path, net::Deadline::after_ms(500));
    FAIL("connected before listen()");
  } catch (const Error& e) {
    CHECK(e.err() == ECONNREFUSED);
  }
  REQUIRE(::listen(s.get(), 4) == 0);
  CHECK_NOTHROW(net::unix_connect(path, net::Deadline::after_ms(1000)));
  // A stale file at the path is replaced.
  Fd again = net::unix_bind(path);
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK_THROWS_WITH_AS(net::unix_bind(dir.path + "/" + std::string(120, 'x')),
                       doctest::Contains("too long"), Error);
}

TEST_CASE("peer_pid names the process that called listen(), not the one that bound") {
  test::TempDir dir("peerpid");
  std::string path = dir.path + "/s.sock";
  Fd s = net::unix_bind(path);
  Pipe listening = Pipe::make(), hold = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    listening.read.reset();
    hold.write.reset();
    char c = ::listen(s.get(), 4) == 0 ? 'y' : 'n';
    write_all(listening.write.get(), &c, 1);
    char b;
    while (::read(hold.read.get(), &b, 1) > 0) {
    }
    ::_exit(0);
  }
  listening.write.reset();
  hold.read.reset();
  char c = 0;
  REQUIRE(read_full(listening.read.get(), &c, 1) == 1);
  CHECK(c == 'y');
  Fd conn = net::unix_connect(path, net::Deadline::after_ms(1000));
  CHECK(net::peer_pid(conn.get()) == pid);
  hold.write.reset();
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  // Our own listener names us; a descriptor that is no socket names nobody.
  Fd mine = net::unix_listen(dir.path + "/mine.sock");
  Fd conn2 = net::unix_connect(dir.path + "/mine.sock", net::Deadline::after_ms(1000));
  CHECK(net::peer_pid(conn2.get()) == ::getpid());
  CHECK(net::peer_pid(listening.read.get()) == -1);
}

TEST_CASE("listen_at and unlink_if_ours remove only our own socket file") {
  test::TempDir dir("listen");
  std::string path = dir.path + "/s.sock";
  CHECK(net::inode_of(path) == 0);
  net::Listener first = net::listen_at(path, 4);
  CHECK(first.ino != 0);
  CHECK(net::inode_of(path) == first.ino);
  CHECK_NOTHROW(net::unix_connect(path, net::Deadline::after_ms(1000)));
  // A later server binds the same path: the first may no longer remove it.
  net::Listener second = net::listen_at(path, 4);
  CHECK(second.ino != first.ino);
  net::unlink_if_ours(path, first);
  CHECK(net::inode_of(path) == second.ino);
  net::unlink_if_ours(path, net::Listener{});  // no inode: never unlinks
  CHECK(net::inode_of(path) == second.ino);
  net::unlink_if_ours(path, second);
  CHECK(net::inode_of(path) == 0);
  CHECK_NOTHROW(net::unlink_if_ours(path, second));  // already gone
}

// A jailed VMM (uid 65534 here) and a branch of it (a fork: the same uid, another pid) — the
// branch's connection is refused by peer_root_or_self though peer_trusted takes it; the VMM's own
// connection and root's are accepted.
TEST_CASE("peer_root_or_self refuses another process of our own uid" * test::needs_root()) {
  test::TempDir t("peer-self");
  ::chmod(t.path.c_str(), 0777);
  const std::string path = t.path + "/vsock.sock";
  Pipe verdict = Pipe::make();
  pid_t vmm = ::fork();
  REQUIRE(vmm >= 0);
  if (vmm == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(2);
    std::string out;
    try {
      net::SocketAccess open_to_root;
      open_to_root.mode = 0600;
      Fd l = net::unix_listen(path, 4, open_to_root);
      auto accept_one = [&] {
        net::wait_ready(l.get(), POLLIN, net::Deadline::after_ms(5000), "accept");
        return Fd(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
      };
      // Its own connection.
      Fd own = net::unix_connect(path, net::Deadline::after_ms(2000));
      Fd a = accept_one();
      out += net::peer_root_or_self(a.get()) ? "self:yes " : "self:no ";
      // A fork of it: the branch.
      pid_t branch = ::fork();
      if (branch == 0) {
        try {
          Fd c = net::unix_connect(path, net::Deadline::after_ms(2000));
          char b;
          ::recv(c.get(), &b, 1, 0);
        } catch (...) {
        }
        _exit(0);
      }
      Fd b = accept_one();
      out += net::peer_root_or_self(b.get()) ? "branch:yes " : "branch:no ";
      out += net::peer_trusted(b.get()) ? "trusted:yes " : "trusted:no ";
      b.reset();
      ::waitpid(branch, nullptr, 0);
      // Root (the test process, outside): told to connect by the verdict pipe's first line.
      (void)!::write(verdict.write.get(), "go\n", 3);
      Fd r = accept_one();
      out += net::peer_root_or_self(r.get()) ? "root:yes" : "root:no";
    } catch (const std::exception& e) {
      out += std::string("error: ") + e.what();
    }
    out = "\n" + out;
    (void)!::write(verdict.write.get(), out.data(), out.size());
    _exit(0);
  }
  verdict.write.reset();
  char go[3];
  REQUIRE(::read(verdict.read.get(), go, 3) == 3);
  Fd root_conn = net::unix_connect(path, net::Deadline::after_ms(2000));
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(verdict.read.get(), buf, sizeof buf)) > 0;) got.append(buf, n);
  int status = 0;
  REQUIRE(::waitpid(vmm, &status, 0) == vmm);
  CHECK(got == "\nself:yes branch:no trusted:yes root:yes");
}

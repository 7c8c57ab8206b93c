// Unit tests for util/sandbox_sockets: sync() listens for exactly the sandboxes wanted, each
// socket open (0660) to the group it was given; a connection reaches on_conn with its sandbox's
// id and its peer's credentials; a socket file that is no longer ours is made again, and never
// unlinked; destroying the set unlinks what is still ours. directory_group() tells a run
// directory's group, and nothing for a file or a missing path.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/temp_dir.h"
#include "util/fs.h"
#include "util/sandbox_sockets.h"
#include "util/socket.h"

using namespace space;

namespace {

struct Accepted {
  std::string id;
  pid_t pid;
  uid_t uid;
};

struct Set {
  const test::TempDir& tmp;
  EventLoop loop;
  std::vector<Accepted> got;
  std::vector<Fd> conns;  // kept open: the test's peer sees no close
  SandboxSockets sockets{loop, [this](const std::string& id) { return path(id); }, 4,
                         [this](Fd c, const std::string& id, const ucred& cr) {
                           got.push_back({id, cr.pid, cr.uid});
                           conns.push_back(std::move(c));
                         }};

  explicit Set(const test::TempDir& dir) : tmp(dir) {}
  std::string path(const std::string& id) const { return tmp.path + "/" + id + ".sock"; }
  // Connects to `id`'s socket and runs the loop until the connection was handed over.
  bool connect(const std::string& id) {
    size_t before = got.size();
    Fd c = net::unix_connect(path(id), net::Deadline::after_ms(2000));
    for (int i = 0; i < 100 && got.size() == before; i++) loop.run_once(20);
    peers.push_back(std::move(c));
    return got.size() == before + 1;
  }
  std::vector<Fd> peers;
};

mode_t mode_of(const std::string& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode;
}

}  // namespace

TEST_CASE("sandbox sockets: sync listens for exactly the sandboxes wanted, open to their group") {
  test::TempDir tmp{"sandbox-sockets"};
  Set s(tmp);
  const gid_t gid = ::getgid() == 0 ? 4242 : ::getgid();
  CHECK(s.sockets.empty());
  s.sockets.sync({{"a", gid}, {"b", gid}});
  CHECK_FALSE(s.sockets.empty());
  for (const char* id : {"a", "b"}) {
    const std::string p = s.path(id);
    REQUIRE(S_ISSOCK(mode_of(p)));
    CHECK((mode_of(p) & 0777) == 0660);
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    CHECK(st.st_gid == gid);
  }

  REQUIRE(s.connect("b"));
  CHECK(s.got.back().id == "b");
  CHECK(s.got.back().pid == ::getpid());
  CHECK(s.got.back().uid == ::getuid());
  REQUIRE(s.connect("a"));
  CHECK(s.got.back().id == "a");

  // "a" is no longer wanted: its socket is closed and unlinked; "b" is left as it was.
  struct stat b_before {};
  REQUIRE(::lstat(s.path("b").c_str(), &b_before) == 0);
  s.sockets.sync({{"b", gid}});
  CHECK_FALSE(fs::exists(s.path("a")));
  struct stat b_after {};
  REQUIRE(::lstat(s.path("b").c_str(), &b_after) == 0);
  CHECK(b_after.st_ino == b_before.st_ino);
  REQUIRE(s.connect("b"));

  s.sockets.sync({});
  CHECK(s.sockets.empty());
  CHECK_FALSE(fs::exists(s.path("b")));
}

TEST_CASE("sandbox sockets: a socket file no longer ours is made again and never unlinked") {
  test::TempDir tmp{"sandbox-sockets"};
  std::string other;
  Fd theirs;
  {
    Set s(tmp);
    s.sockets.sync({{"a", ::getgid()}});
    // Someone else's file now stands at "a"'s path (a new run directory's, say).
    const std::string p = s.path("a");
    REQUIRE(::unlink(p.c_str()) == 0);
    theirs = net::unix_listen(p);
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    const ino_t their_ino = st.st_ino;
    // Our listener for "a" is dropped without touching their file, and a new one made in its
    // place at the next sync.
    s.sockets.sync({{"a", ::getgid()}});
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    CHECK(st.st_ino != their_ino);
    REQUIRE(s.connect("a"));
    CHECK(s.got.back().id == "a");

    // Destroying the set unlinks our file, not one that replaced it since.
    REQUIRE(::unlink(p.c_str()) == 0);
    theirs = net::unix_listen(p);
    other = p;
  }
  CHECK(fs::exists(other));
}

TEST_CASE("sandbox sockets: accept_pending serves another listener too, with the id given") {
  test::TempDir tmp{"sandbox-sockets"};
  Set s(tmp);
  const std::string p = tmp.path + "/operator.sock";
  Fd op = net::unix_listen(p);
  Fd c = net::unix_connect(p, net::Deadline::after_ms(2000));
  s.sockets.accept_pending(op.get(), "");
  REQUIRE(s.got.size() == 1);
  CHECK(s.got[0].id.empty());
  CHECK(s.got[0].pid == ::getpid());
  s.sockets.accept_pending(op.get(), "");  // nothing waits: returns at once
  CHECK(s.got.size() == 1);
}

TEST_CASE("sandbox sockets: directory_group is a directory's group, nothing otherwise") {
  test::TempDir tmp{"dir-group"};
  struct stat st {};
  REQUIRE(::stat(tmp.path.c_str(), &st) == 0);
  auto g = directory_group(tmp.path);
  REQUIRE(g);
  CHECK(*g == st.st_gid);
  fs::write_file_atomic(tmp.path + "/f", "x", 0600);
  CHECK_FALSE(directory_group(tmp.path + "/f"));
  CHECK_FALSE(directory_group(tmp.path + "/missing"));
  REQUIRE(::symlink(tmp.path.c_str(), (tmp.path + "/link").c_str()) == 0);
  CHECK_FALSE(directory_group(tmp.path + "/link"));  // lstat: a link is not the directory
}

// Unit tests for core/copy (space cp) end to end without a VM: the host side against guest-init's
// own session code (serve_connection, on the fake VMM's thread) behind a fake vsock.sock that
// speaks the CONNECT handshake, in a FakeSandbox. In this mode guest-init's root is this
// machine's, so guest paths are temporary directories here. Covers round trips both ways with a
// checksum-like comparison, docker's destination rules, tar streams in and out, a hostile guest
// (`..`, absolute names, a link then a write through it) that writes nothing outside DST and
// reaches no tar stream on stdout, the size limit, what -a keeps or drops (setuid bits and
// security.* / trusted.* xattrs only with --keep-privileges), and the errors a user sees.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "core/copy.h"
#include "guest-init/context.h"
#include "guest-init/session.h"
#include "proto/agent.h"
#include "proto/files.h"
#include "support/fake_sandbox.h"
#include "support/fake_server.h"
#include "support/privileged_xattrs.h"
#include "support/skip.h"
#include "support/tar_writer.h"
#include "support/temp_dir.h"
#include "support/tree_files.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

using namespace space;
using space::test::exists;
using space::test::FakeSandbox;
using space::test::FakeServer;
using space::test::put_file;
using space::test::read_line_blocking;
using space::test::slurp;
using space::test::TempDir;
using space::test::write_str;

namespace {

// A sandbox whose vsock.sock leads to `guest(fd)` after the CONNECT handshake.
struct CopyRig {
  FakeSandbox sb{"cp1"};
  guest::Context ctx;
  FakeServer server;
  explicit CopyRig(std::function<void(int)> guest = {})
      : server([this, guest](int fd, int) {
          std::string line = read_line_blocking(fd);
          if (line != "CONNECT 1024") return;
          write_str(fd, "OK 1\n");
          if (guest) return guest(fd);
          guest::serve_connection(Fd(::dup(fd)), ctx);
        }) {
    ctx.console = guest::Console(devnull());
    ctx.hostname = "cp1";
    REQUIRE(::symlink(server.path.c_str(), sb.p.vsock_sock.c_str()) == 0);
  }
  static int devnull() {
    static Fd fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    return fd.get();
  }
  core::CopyStats cp(std::vector<std::string> src, std::string dest, uint64_t max = 0) {
    core::CopyOptions o;
    o.sources = std::move(src);
    o.dest = std::move(dest);
    o.max_bytes = max;
    return core::copy_files(sb.ctx, o);
  }
};

std::string error_of(const std::function<void()>& f, std::string* hint = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (hint) *hint = e.hint();
    return e.what();
  }
  return "<no error>";
}

// A source tree: a random file of `big_mib` MiB, `small` small files, a symlink, a hard link, an
// empty directory. Returns the random file's content.
std::string make_tree(const std::string& dir, size_t big_mib = 64, int small = 2000) {
  fs::mkdir_p(dir + "/sub/empty");
  std::string big(big_mib << 20, '\0');
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < big.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(&big[i], &v, std::min<size_t>(8, big.size() - i));
  }
  put_file(dir + "/big.bin", big);
  for (int i = 0; i < small; i++) put_file(dir + "/sub/f" + std::to_string(i), std::to_string(i));
  REQUIRE(::symlink("/etc/passwd", (dir + "/link").c_str()) == 0);
  REQUIRE(::link((dir + "/sub/f1").c_str(), (dir + "/hard").c_str()) == 0);
  return big;
}

}  // namespace

TEST_CASE("copy: paths name a sandbox by ID: before any '/'") {
  auto p = core::parse_copy_path("abc:/work");
  CHECK(p.sandbox == "abc");
  CHECK(p.path == "/work");
  CHECK(core::parse_copy_path("./a:b").sandbox.empty());
  CHECK(core::parse_copy_path("/x/a:b").sandbox.empty());
  CHECK(core::parse_copy_path("-").stream);
}

TEST_CASE("copy: a tree into a sandbox and back out is the same tree" * test::needs_root()) {
  CopyRig rig;
  TempDir t("cp");
  const std::string big = make_tree(t.path + "/src");
  fs::mkdir_p(t.path + "/guest");
  auto in = rig.cp({t.path + "/src"}, "cp1:" + t.path + "/guest");
  CHECK(in.bytes == big.size() + 6890);  // 64 MiB + "0".."1999"
  CHECK(slurp(t.path + "/guest/src/big.bin") == big);
  CHECK(slurp(t.path + "/guest/src/sub/f7") == "7");
  char buf[32] = {};
  CHECK(::readlink((t.path + "/guest/src/link").c_str(), buf, sizeof buf) == 11);
  struct stat a, b;
  REQUIRE(::stat((t.path + "/guest/src/hard").c_str(), &a) == 0);
  REQUIRE(::stat((t.path + "/guest/src/sub/f1").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(exists(t.path + "/guest/src/sub/empty"));

  fs::mkdir_p(t.path + "/out");
  auto out = rig.cp({"cp1:" + t.path + "/guest/src"}, t.path + "/out/copy");
  CHECK(out.bytes == in.bytes);
  CHECK(slurp(t.path + "/out/copy/big.bin") == big);
  CHECK(slurp(t.path + "/out/copy/hard") == "1");
}

// The rules below hold whatever the sizes: a small tree (a 2 MiB file, still eight frames) keeps
// them apart from the 64 MiB round trip above.
TEST_CASE("copy: SRC/. copies the contents; a file onto a new name; a missing parent is an error" *
          test::needs_root()) {
  CopyRig rig;
  TempDir t("cprules");
  const std::string big = make_tree(t.path + "/src", 2, 20);
  fs::mkdir_p(t.path + "/guest");
  rig.cp({t.path + "/src/sub/."}, "cp1:" + t.path + "/guest");
  CHECK(slurp(t.path + "/guest/f3") == "3");
  CHECK(exists(t.path + "/guest/empty"));
  rig.cp({t.path + "/src/big.bin"}, "cp1:" + t.path + "/guest/renamed");
  CHECK(slurp(t.path + "/guest/renamed") == big);
  CHECK(error_of([&] {
          rig.cp({t.path + "/src"}, "cp1:" + t.path + "/guest/renamed");
        }).find("cannot copy a directory") != std::string::npos);
  CHECK(error_of([&] {
          rig.cp({t.path + "/src/big.bin"}, "cp1:" + t.path + "/no/such/x");
        }).find("parent directory") != std::string::npos);
  CHECK(error_of([&] {
          rig.cp({"cp1:" + t.path + "/nothing"}, t.path + "/out");
        }).find("no such file or directory in the sandbox") != std::string::npos);
}

TEST_CASE("copy: the size limit stops a copy out, and what it wrote is removed") {
  CopyRig rig;
  TempDir t("cplimit");
  make_tree(t.path + "/guest/src", 2, 20);
  fs::mkdir_p(t.path + "/out");
  std::string hint;
  auto e = error_of(
      [&] { rig.cp({"cp1:" + t.path + "/guest/src"}, t.path + "/out/limited", 1 << 20); }, &hint);
  CHECK(e.find("size limit") != std::string::npos);
  CHECK(hint.find("--max-size") != std::string::npos);
  CHECK_FALSE(exists(t.path + "/out/limited"));
}

TEST_CASE("copy: tar streams in on stdin and out on stdout" * test::needs_root()) {
  CopyRig rig;
  TempDir t("cptar");
  fs::mkdir_p(t.path + "/src/d");
  put_file(t.path + "/src/d/x", "tarred");
  fs::mkdir_p(t.path + "/guest");
  auto r = proc::run({"/bin/tar", "-C", t.path + "/src", "-cf", t.path + "/in.tar", "."});
  REQUIRE(r.ok());
  Fd tar_in(::open((t.path + "/in.tar").c_str(), O_RDONLY | O_CLOEXEC));
  core::CopyOptions o;
  o.sources = {"-"};
  o.dest = "cp1:" + t.path + "/guest";
  o.stdin_fd = tar_in.get();
  core::copy_files(rig.sb.ctx, o);
  CHECK(slurp(t.path + "/guest/d/x") == "tarred");

  Fd tar_out(::open((t.path + "/out.tar").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  o.sources = {"cp1:" + t.path + "/guest/d"};
  o.dest = "-";
  o.stdout_fd = tar_out.get();
  core::copy_files(rig.sb.ctx, o);
  r = proc::run({"/bin/tar", "-tf", t.path + "/out.tar"});
  CHECK(r.output.find("d/x") != std::string::npos);
}

namespace {

TreeEntry tree_entry(EntryKind k, std::string name, std::string target = "") {
  TreeEntry e;
  e.kind = k;
  e.name = std::move(name);
  e.target = std::move(target);
  e.mode = 0644;
  return e;
}

// A guest that answers Hello and FileGet with a top directory, then `tree` (each File with the
// four bytes "evil"), then FileEnd.
std::function<void(int)> hostile_guest(std::vector<TreeEntry> tree) {
  return [tree = std::move(tree)](int fd) {
    proto::FrameDecoder dec;
    uint8_t buf[4096];
    int frames = 0;
    while (frames < 2) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return;
      dec.feed({buf, static_cast<size_t>(n)});
      while (dec.next()) frames++;
    }
    // The host may refuse an entry and close before the rest is sent: MSG_NOSIGNAL, so that
    // this fake guest gets EPIPE and stops, instead of a SIGPIPE ending the whole test binary.
    auto send = [&](proto::Type ty, const std::vector<uint8_t>& p) {
      auto b = proto::encode_frame(ty, p);
      for (size_t off = 0; off < b.size();) {
        ssize_t k = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
        if (k <= 0) return;
        off += static_cast<size_t>(k);
      }
    };
    proto::HelloReply hr;
    hr.agent = "evil";
    send(proto::Type::HelloReply, hr.encode());
    send(proto::Type::FileEntry, proto::encode_entry(tree_entry(EntryKind::Dir, "")));
    for (auto e : tree) {
      if (e.kind == EntryKind::File) e.size = 4;
      send(proto::Type::FileEntry, proto::encode_entry(e));
      if (e.kind == EntryKind::File) send(proto::Type::FileData, {'e', 'v', 'i', 'l'});
    }
    send(proto::Type::FileEnd, {});
    ::shutdown(fd, SHUT_WR);
    while (::read(fd, buf, sizeof buf) > 0) {
    }
  };
}

}  // namespace

TEST_CASE("copy: a hostile guest's tree writes nothing outside DST") {
  TempDir t("cphostile");
  put_file(t.path + "/canary", "untouched");
  fs::mkdir_p(t.path + "/dst");
  auto entry = [](EntryKind k, std::string name, std::string target = "") {
    return tree_entry(k, std::move(name), std::move(target));
  };
  // Each case: the tree the guest sends after its top directory.
  std::vector<std::vector<TreeEntry>> cases = {
      {entry(EntryKind::Dir, "ok"), entry(EntryKind::File, "../canary")},
      {entry(EntryKind::File, "/abs")},
      {entry(EntryKind::Symlink, "l", t.path), entry(EntryKind::File, "l/canary")},
      {entry(EntryKind::Hardlink, "h", "../../canary")},
      {entry(EntryKind::CharDev, "null")},  // skipped, not created: the copy itself succeeds
  };
  for (size_t i = 0; i < cases.size(); i++) {
    CopyRig rig(hostile_guest(cases[i]));
    std::string e = error_of([&] { rig.cp({"cp1:/x"}, t.path + "/dst/got"); });
    CAPTURE(i);
    CAPTURE(e);
    CHECK(slurp(t.path + "/canary") == "untouched");
    if (i + 1 < cases.size()) {
      CHECK(e != "<no error>");
      CHECK(fs::list_dir(t.path + "/dst").empty());  // what it made is gone
    } else {
      CHECK(e == "<no error>");
      CHECK_FALSE(exists(t.path + "/dst/got/null"));
      fs::remove_tree(t.path + "/dst/got");
    }
  }
}

TEST_CASE("copy: a hostile guest's tree copied out as a tar stream never reaches it") {
  TempDir t("cphostiletar");
  using K = EntryKind;
  struct Case {
    std::vector<TreeEntry> tree;
    std::string marker;  // what must not appear in the stream
  };
  const std::vector<Case> cases = {
      {{tree_entry(K::File, "../x")}, "../x"},
      {{tree_entry(K::File, "/abs")}, "abs"},
      {{tree_entry(K::Dir, "a"), tree_entry(K::File, "a/../../b")}, "../b"},
      {{tree_entry(K::Hardlink, "h", "../../etc/passwd")}, "etc/passwd"},
      {{tree_entry(K::Symlink, "l", "/etc"), tree_entry(K::File, "l/passwd")}, "passwd"},
      {{tree_entry(K::Symlink, "l", "/etc/passwd"), tree_entry(K::File, "l")}, "evil"},
  };
  for (size_t i = 0; i < cases.size(); i++) {
    CAPTURE(i);
    CopyRig rig(hostile_guest(cases[i].tree));
    const std::string out = t.path + "/out" + std::to_string(i) + ".tar";
    Fd tar(::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    REQUIRE(tar.valid());
    core::CopyOptions o;
    o.sources = {"cp1:/x"};
    o.dest = "-";
    o.stdout_fd = tar.get();
    std::string e = error_of([&] { core::copy_files(rig.sb.ctx, o); });
    CAPTURE(e);
    CHECK(e.find("entry '" + cases[i].tree.back().name + "'") != std::string::npos);
    CHECK(slurp(out).find(cases[i].marker) == std::string::npos);
  }
}

// Needs root: the entries carry owners, which only root can give.
TEST_CASE("copy: a hostile tar copied in writes nothing outside DST and leaves nothing in it" *
          test::needs_root()) {
  CopyRig rig;
  TempDir t("cpevil");
  fs::mkdir_p(t.path + "/guest/in");
  put_file(t.path + "/guest/canary", "untouched");
  using space::test::TarEntry;
  TarEntry link{"up", AE_IFLNK};
  link.link = "..";
  TarEntry through{"up/canary"};
  through.data = "evil";
  TarEntry ok{"fine"};
  ok.data = "made before the refusal";
  space::test::write_tar(t.path + "/evil.tar", {ok, link, through});
  Fd in(::open((t.path + "/evil.tar").c_str(), O_RDONLY | O_CLOEXEC));
  core::CopyOptions o;
  o.sources = {"-"};
  o.dest = "cp1:" + t.path + "/guest/in";
  o.stdin_fd = in.get();
  CHECK(error_of([&] { core::copy_files(rig.sb.ctx, o); }).find("symbolic link") !=
        std::string::npos);
  CHECK(slurp(t.path + "/guest/canary") == "untouched");
  CHECK(fs::list_dir(t.path + "/guest/in").empty());  // "fine" and "up" were removed again
}

TEST_CASE(
    "copy: out with -a drops setid bits and security/trusted xattrs unless kept, and says so" *
    test::needs_privileged_xattrs()) {
  space::test::PrivilegedXattrDir t("cppriv");
  REQUIRE(t.usable());
  using space::test::xattr_of;
  const std::string cap = space::test::cap_v2();
  const std::string src = t.path + "/guest/bin", ping = src + "/ping";
  fs::mkdir_p(src);
  put_file(ping, "ELF", 04755);
  REQUIRE(::chmod(ping.c_str(), 04755) == 0);
  REQUIRE(::setxattr(ping.c_str(), "security.capability", cap.data(), cap.size(), 0) == 0);
  REQUIRE(::setxattr(ping.c_str(), "trusted.x", "t", 1, 0) == 0);
  REQUIRE(::setxattr(ping.c_str(), "user.keep", "u", 1, 0) == 0);
  CopyRig rig;
  core::CopyOptions o;
  o.sources = {"cp1:" + src};
  o.archive = true;
  auto mode_of = [](const std::string& p) {
    struct stat st;
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
  };

  o.dest = t.path + "/dropped";
  core::CopyStats s = core::copy_files(rig.sb.ctx, o);
  CHECK(mode_of(t.path + "/dropped/ping") == 0755);
  CHECK(xattr_of(t.path + "/dropped/ping", "security.capability") == "<none>");
  CHECK(xattr_of(t.path + "/dropped/ping", "trusted.x") == "<none>");
  CHECK(xattr_of(t.path + "/dropped/ping", "user.keep") == "u");
  CHECK(s.setid_dropped == 1);
  CHECK(s.xattrs_dropped == 2);
  CHECK(core::privileges_warning(o, s) ==
        "space cp: dropped setuid/setgid bits of 1 file and 2 security xattrs; "
        "--keep-privileges keeps them");

  o.keep_privileges = true;
  o.dest = t.path + "/kept";
  s = core::copy_files(rig.sb.ctx, o);
  CHECK(mode_of(t.path + "/kept/ping") == 04755);
  CHECK(xattr_of(t.path + "/kept/ping", "security.capability") == cap);
  CHECK(xattr_of(t.path + "/kept/ping", "trusted.x") == "t");
  CHECK(s.setid_dropped == 0);
  CHECK(s.xattrs_dropped == 0);
  CHECK(core::privileges_warning(o, s).empty());

  // Without -a nothing of the kind is kept, as before, and there is nothing to warn about.
  o.archive = o.keep_privileges = false;
  o.dest = t.path + "/plain";
  s = core::copy_files(rig.sb.ctx, o);
  CHECK(mode_of(t.path + "/plain/ping") == 0755);
  CHECK(xattr_of(t.path + "/plain/ping", "user.keep") == "<none>");
  CHECK(core::privileges_warning(o, s).empty());

  // Copy in keeps them with -a alone.
  fs::mkdir_p(t.path + "/guest/in");
  o.archive = true;
  o.sources = {t.path + "/kept/ping"};
  o.dest = "cp1:" + t.path + "/guest/in/";
  core::copy_files(rig.sb.ctx, o);
  CHECK(mode_of(t.path + "/guest/in/ping") == 04755);
  CHECK(xattr_of(t.path + "/guest/in/ping", "trusted.x") == "t");
}

TEST_CASE("copy: errors a user sees") {
  CopyRig rig;
  TempDir t("cperr");
  CHECK(error_of([&] { rig.cp({t.path}, "nosuch:/x"); }).find("nosuch") != std::string::npos);
  CHECK(error_of([&] { rig.cp({t.path}, t.path + "/y"); }).find("neither side") !=
        std::string::npos);
  CHECK(error_of([&] {
          rig.cp({"cp1:/a", "cp1:/b"}, t.path);
        }).find("one source") != std::string::npos);
  CHECK(error_of([&] { rig.cp({t.path + "/missing"}, "cp1:/tmp"); }).find("missing") !=
        std::string::npos);
}

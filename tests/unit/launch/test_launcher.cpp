// Unit tests for core/launcher without a VMM: the boot wait against fake servers on Unix sockets
// (it redials vsock.sock and redoes the agent handshake while the guest boots, gives up at its
// deadline, and does not retry a refused handshake), the VMM's ready-pipe protocol, and the pure
// helpers: resolving and checking a cold boot's settings, the socket path limit, the run
// directory, the log tails of a failed start and $SPACE_BOOT_TIMEOUT.
#include <doctest/doctest.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "agent/client.h"
#include "launch/launcher.h"
#include "store/config.h"
#include "store/paths.h"
#include "support/fake_server.h"
#include "support/scoped_env.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/socket.h"

using namespace space;
using space::test::FakeServer;
using space::test::read_line_blocking;
using space::test::ScopedEnv;
using space::test::write_str;

TEST_CASE("vsock dial and agent handshake, retried while the guest boots") {
  // Connections 1 and 2 are closed at once (nobody listening in the guest yet), as the VMM does.
  FakeServer srv(
      [](int fd, int n) {
        std::string line = read_line_blocking(fd);
        if (line != "CONNECT 1024" || n < 3) return;
        write_str(fd, "OK 1073741824\n");
        proto::FrameDecoder dec;
        uint8_t buf[4096];
        std::optional<proto::Frame> f;
        while (!f) {
          ssize_t k = ::read(fd, buf, sizeof buf);
          if (k <= 0) return;
          dec.feed({buf, static_cast<size_t>(k)});
          f = dec.next();
        }
        if (f->type != proto::Type::Hello) return;
        proto::HelloReply reply;
        reply.agent = "guest-init test";
        reply.hostname = "box";
        auto bytes = proto::encode_frame(proto::Type::HelloReply, reply.encode());
        write_all(fd, bytes.data(), bytes.size());
      },
      "vsock.sock");
  try {
    agent::vsock_dial(srv.path, proto::kAgentPort, net::Deadline::after_ms(2000));
    FAIL("first dial should be reset");
  } catch (const Error& e) {
    CHECK(e.err() == ECONNRESET);
  }
  store::SandboxPaths p;
  p.vsock_sock = srv.path;
  auto reply = launch::wait_guest_ready(p, net::Deadline::after_ms(5000));
  CHECK(reply.agent == "guest-init test");
  CHECK(reply.hostname == "box");
  CHECK(srv.accepted.load() == 3);
}

TEST_CASE("the boot wait gives up at its deadline with the last failure") {
  store::SandboxPaths p;
  p.vsock_sock = "/tmp/space-test-no-such-dir/vsock.sock";
  CHECK_THROWS_WITH_AS(launch::wait_guest_ready(p, net::Deadline::after_ms(300)),
                       doctest::Contains("No such file"), Error);
}

TEST_CASE("a guest that refuses the handshake is not retried") {
  FakeServer srv([](int fd, int) {
    read_line_blocking(fd);
    write_str(fd, "OK 5\n");
    uint8_t hello[256];
    if (::read(fd, hello, sizeof hello) <= 0) return;  // the Hello frame
    proto::ErrorMsg err{.message = "version mismatch"};
    auto bytes = proto::encode_frame(proto::Type::Error, err.encode());
    write_all(fd, bytes.data(), bytes.size());
  });
  store::SandboxPaths p;
  p.vsock_sock = srv.path;
  CHECK_THROWS_WITH_AS(launch::wait_guest_ready(p, net::Deadline::after_ms(5000)),
                       doctest::Contains("refused the handshake: version mismatch"), Error);
  CHECK(srv.accepted.load() == 1);
}

TEST_CASE("ready pipe protocol") {
  auto run = [](const std::string& text) {
    Pipe p = Pipe::make();
    set_nonblocking(p.read.get());
    write_str(p.write.get(), text);
    p.write.reset();
    launch::wait_vmm_ready(p.read, net::Deadline::after_ms(1000));
  };
  CHECK_NOTHROW(run("ok\n"));
  CHECK_THROWS_WITH_AS(run("error: no KVM\n"), "the VMM failed: no KVM", Error);
  CHECK_THROWS_WITH_AS(run(""), "the VMM exited before the sandbox started", Error);
  CHECK_THROWS_WITH_AS(run("what\n"), doctest::Contains("unexpected ready line"), Error);
}

TEST_CASE("wait_vmm_ready: silence until the deadline, and a cancel fd") {
  Pipe p = Pipe::make();
  set_nonblocking(p.read.get());
  CHECK_THROWS_WITH_AS(launch::wait_vmm_ready(p.read, net::Deadline::after_ms(50)),
                       "the VMM did not report ready in time", Error);
  Pipe cancel = Pipe::make();
  write_str(cancel.write.get(), "x");
  auto dl = net::Deadline::after_ms(5000);
  dl.cancel_on(cancel.read.get());
  CHECK_THROWS_AS(launch::wait_vmm_ready(p.read, dl), net::Cancelled);
}

namespace {

// What `f` throws (message and hint); fails the test if it returns.
template <class F>
std::pair<std::string, std::string> error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.what(), e.hint()};
  }
  FAIL("no error");
  return {};
}

}  // namespace

TEST_CASE(
    "resolve_boot_spec: flags, then config.toml, then the defaults; ranges and files checked") {
  test::TempDir d("bootspec");
  std::string kernel = d.path + "/vmlinux", rootfs = d.path + "/rootfs.ext4";
  fs::write_file_atomic(kernel, "k");
  fs::write_file_atomic(rootfs, "r");
  store::HostConfig hc;
  auto b = launch::resolve_boot_spec(hc, std::nullopt, std::nullopt, kernel, rootfs);
  CHECK(b.vcpus == 1u);
  CHECK(b.memory_mib == 256u);
  CHECK(b.kernel == kernel);
  CHECK(b.rootfs_image == rootfs);
  hc.cpus = 2;
  hc.memory_mib = 512;
  hc.kernel = kernel;
  hc.rootfs = rootfs;
  b = launch::resolve_boot_spec(hc, std::nullopt, std::nullopt, "", "");
  CHECK(b.vcpus == 2u);
  CHECK(b.memory_mib == 512u);
  CHECK(b.kernel == kernel);
  CHECK(b.rootfs_image == rootfs);
  b = launch::resolve_boot_spec(hc, 1u, 1024u, "", "");
  CHECK(b.vcpus == 1u);
  CHECK(b.memory_mib == 1024u);
  b = launch::resolve_boot_spec(hc, store::kMaxCpus, store::kMinMemoryMib, "", "");
  CHECK(b.vcpus == store::kMaxCpus);
  CHECK(b.memory_mib == store::kMinMemoryMib);

  auto spec = [&](std::optional<uint32_t> c, std::optional<uint32_t> m, std::string k,
                  std::string r) {
    return error_of([&] { launch::resolve_boot_spec(hc, c, m, k, r); }).first;
  };
  CHECK(spec(0u, {}, "", "") == "--cpus 0: out of range 1..64");
  CHECK(spec(65u, {}, "", "") == "--cpus 65: out of range 1..64");
  CHECK(spec({}, 31u, "", "") == "--memory 31: out of range 32..1048576 MiB");
  CHECK(spec({}, (1u << 20) + 1, "", "") == "--memory 1048577: out of range 32..1048576 MiB");

  auto missing = error_of([&] { launch::resolve_boot_spec(hc, {}, {}, d.path + "/nope", ""); });
  CHECK(missing.first == "kernel " + d.path + "/nope: No such file or directory");
  CHECK(missing.second == "run scripts/install.sh or pass --kernel");
  auto dir = error_of([&] { launch::resolve_boot_spec(hc, {}, {}, d.path, ""); });
  CHECK(dir.first == "kernel " + d.path + ": not a regular file");
  CHECK(dir.second == "pass --kernel");
  auto no_rootfs =
      error_of([&] { launch::resolve_boot_spec(hc, {}, {}, "", d.path + "/nope.ext4"); });
  CHECK(no_rootfs.first == "rootfs image " + d.path + "/nope.ext4: No such file or directory");
  CHECK(no_rootfs.second == "run scripts/install.sh or pass --rootfs");
}

TEST_CASE("check_socket_paths: vsock.sock_<port> must fit in sun_path") {
  std::string fits(85, 'r'), too_long(86, 'r');  // 85 + "/vsock.sock" + "_4294967295" + NUL = 108
  fits[0] = too_long[0] = '/';
  CHECK_NOTHROW(launch::check_socket_paths(store::paths_in("/d", fits)));
  auto e = error_of([&] { launch::check_socket_paths(store::paths_in("/d", too_long)); });
  CHECK(e.first == "socket paths under " + too_long + " would be too long");
  CHECK(e.second == "set SPACE_RUN_DIR to a shorter directory");
}

TEST_CASE("make_run_dir makes the run directory afresh, mode 0700, replacing a stale one") {
  test::TempDir d("rundir");
  ScopedEnv run("SPACE_RUN_DIR", (d.path + "/run").c_str());
  auto p = store::sandbox_paths(d.path + "/root", "box");
  REQUIRE(p.run_dir == d.path + "/run/box");
  launch::make_run_dir(p);
  struct stat st {};
  REQUIRE(::stat(p.run_dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(::stat((d.path + "/run").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  fs::write_file_atomic(p.run_dir + "/vsock.sock", "stale");
  fs::mkdir_p(p.run_dir + "/sub");
  launch::make_run_dir(p);
  CHECK(fs::is_dir(p.run_dir));
  CHECK(fs::list_dir(p.run_dir).empty());
}

TEST_CASE(
    "make_run_dir for a jail: root's with the jail's group, mode 0710, below a base no one else "
    "may search" *
    test::needs_root()) {
  test::TempDir d("rundir-jail");
  const std::string base = d.path + "/run";
  ScopedEnv run("SPACE_RUN_DIR", base.c_str());
  auto p = store::sandbox_paths(d.path + "/root", "box");
  launch::make_run_dir(p, 4242);
  struct stat st {};
  REQUIRE(::stat(p.run_dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0710);
  CHECK(st.st_uid == 0);
  CHECK(st.st_gid == 4242);
  // A base others may search would let ".." from a branch child's run directory out of the jail.
  REQUIRE(::chmod(base.c_str(), 0711) == 0);
  auto e = error_of([&] { launch::make_run_dir(p, 4242); });
  CHECK(e.first == base +
                       " may be searched by others (mode 0711): a jailed VMM could reach the "
                       "host's files through it");
  CHECK(e.second == "chmod 0700 " + base);
  CHECK_NOTHROW(launch::make_run_dir(p));  // not jailed: no VMM climbs from there
}

TEST_CASE("log_tails: the last lines of vmm.log and console.log, or nothing") {
  test::TempDir d("tails");
  auto p = store::paths_in(d.path, d.path + "/run");
  CHECK(launch::log_tails(p) == "");
  std::string console;
  for (int i = 1; i <= 30; i++) console += "c" + std::to_string(i) + "\n";
  fs::write_file_atomic(p.console_log, console);
  std::string want_console =
      "\n--- console.log (last 20 lines) ---\n" + fs::tail_lines(p.console_log, 20);
  CHECK(launch::log_tails(p) == want_console);
  CHECK(want_console.find("c10\n") == std::string::npos);
  CHECK(want_console.find("c11\n") != std::string::npos);
  std::string vmm;
  for (int i = 1; i <= 15; i++) vmm += "v" + std::to_string(i) + "\n";
  fs::write_file_atomic(p.vmm_log, vmm);
  std::string got = launch::log_tails(p);
  CHECK(got == "\n--- vmm.log (last lines) ---\n" + fs::tail_lines(p.vmm_log, 10) + want_console);
  CHECK(got.find("v5\n") == std::string::npos);
  CHECK(got.find("v6\n") != std::string::npos);
}

TEST_CASE("boot_timeout_seconds: $SPACE_BOOT_TIMEOUT, default 300") {
  {
    ScopedEnv unset("SPACE_BOOT_TIMEOUT", nullptr);
    CHECK(launch::boot_timeout_seconds() == 300);
  }
  {
    ScopedEnv set("SPACE_BOOT_TIMEOUT", "42");
    CHECK(launch::boot_timeout_seconds() == 42);
  }
  {
    ScopedEnv bad("SPACE_BOOT_TIMEOUT", "5s");
    CHECK_THROWS_WITH_AS(launch::boot_timeout_seconds(), doctest::Contains("SPACE_BOOT_TIMEOUT"),
                         Error);
  }
}

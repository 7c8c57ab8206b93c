// The credential helper's sockets, run in a thread of this test (credd_main) over a temporary
// root with one fake sandbox whose recorded VMM is this process: the operator protocol through
// cred_call, fetches on the sandbox's socket, a reader that does not read (200 pipelined fetches
// of a 60 KB value) while the operator is still served, answers after the peer's EOF, a
// malformed frame, and the exit after the idle period with the sockets removed; helper_running
// before, during and after. The sandbox's socket is in its run directory, open to that
// directory's group (a jailed VMM's), and keeps the helper up while it exists: it exits only
// once the grant is gone and the idle period has passed. Run as `space __credd` runs it (in a
// forked child), the helper leaves its process not dumpable, with no core file.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "cred/client.h"
#include "cred/helper.h"
#include "cred/paths.h"
#include "cred/service.h"
#include "proto/agent.h"
#include "proto/cred.h"
#include "store/paths.h"
#include "store/state.h"
#include "support/forked.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"
#include "util/socket.h"

using namespace space;

namespace {

std::vector<uint8_t> get_frame(const std::string& name) {
  return proto::encode_frame(proto::Type::CredGet, proto::CredGet{.name = name}.encode());
}

Fd dial(const std::string& path) {
  return net::unix_connect(path, net::Deadline::after_ms(5000));
}

}  // namespace

TEST_CASE("credd serves the operator and one sandbox's socket, and exits when idle" *
          test::needs_root()) {
  test::TempDir d("credd");  // removed also when a REQUIRE fails
  std::string base = d.path, root = base + "/root";
  // credd_main sets umask(077) for the whole process; the other tests in this binary need the
  // one they started with back.
  struct UmaskRestore {
    mode_t saved = ::umask(0);
    UmaskRestore() { ::umask(saved); }
    ~UmaskRestore() { ::umask(saved); }
  } umask_restore;
  ::unsetenv("SPACE_CRED_DIR");
  ::setenv("SPACE_CREDD_IDLE_SECONDS", "1", 1);
  ::setenv("SPACE_RUN_DIR", (base + "/run").c_str(), 1);
  auto sp = store::sandbox_paths(root, "q1");
  fs::mkdir_p(sp.dir);
  fs::mkdir_p(sp.run_dir);
  REQUIRE(::chown(sp.run_dir.c_str(), 0, 4242) == 0);  // the jail's group
  store::SandboxState st;
  st.id = "q1";
  st.status = store::Status::Running;
  st.pid = ::getpid();
  st.pid_start_time = *proc::start_time(::getpid());
  st.created = store::rfc3339_now();
  store::write_state(sp.state, st);

  CHECK_FALSE(cred::helper_running(cred::cred_paths(root)));  // no lock file yet
  Pipe ready = Pipe::make();
  cred::HelperOptions o;
  o.root = root;
  o.ready_fd = ready.write.release();
  o.protect_memory = false;  // it would change this whole test process (tested below, forked)
  int rc = -1;
  std::thread helper([&] { rc = cred::credd_main(o); });
  auto line = net::read_line(ready.read.get(), net::Deadline::after_ms(10'000));
  REQUIRE(line);
  REQUIRE(*line == "ok");

  store::Context ctx{root};
  cred::CredPaths p = cred::cred_paths(root);
  CHECK(cred::helper_running(p));  // the VMM's probe before it would start a second one
  std::string value(60'000, '\0');
  for (size_t i = 0; i < value.size(); i++) value[i] = char(i * 7 + 3);
  CHECK_NOTHROW(cred::cred_call(ctx, proto::credd::SetRequest{"BIG", SecretString(value)}));
  CHECK_NOTHROW(cred::cred_call(ctx, proto::credd::GrantRequest{"q1", "BIG", {}, {}}));
  const std::string sock = cred::sandbox_socket("q1");
  CHECK(sock == sp.run_dir + "/cred.sock");
  REQUIRE(fs::exists(sock));
  struct stat sst {};
  REQUIRE(::lstat(sock.c_str(), &sst) == 0);
  CHECK((sst.st_mode & 07777) == 0660);
  CHECK(sst.st_gid == 4242);

  // 200 pipelined fetches, replies not read yet; the operator is served meanwhile. The first
  // CredService::kFetchBurst (and what the budget regains meanwhile) get the value, the rest are
  // refused for the rate, each with its own reply.
  Fd s = dial(sock);
  std::vector<uint8_t> many;
  for (int i = 0; i < 200; i++) {
    auto f = get_frame("BIG");
    many.insert(many.end(), f.begin(), f.end());
  }
  net::send_all(s.get(), {reinterpret_cast<const char*>(many.data()), many.size()},
                net::Deadline::after_ms(5000));
  ::usleep(300'000);
  auto listed = cred::cred_call(ctx, proto::credd::ListRequest{}).secrets;
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].name == "BIG");
  CHECK(listed[0].size == value.size());
  ::shutdown(s.get(), SHUT_WR);  // EOF: what was asked is still answered
  int values = 0, limited = 0;
  for (;;) {
    uint8_t hdr[8];
    if (!net::recv_exact(s.get(), hdr, 8, net::Deadline::after_ms(10'000))) break;
    uint32_t len;
    uint16_t type;
    std::memcpy(&len, hdr, 4);
    std::memcpy(&type, hdr + 4, 2);
    std::vector<uint8_t> body(len);
    REQUIRE(net::recv_exact(s.get(), body.data(), len, net::Deadline::after_ms(10'000)));
    if (type == uint16_t(proto::Type::CredDenied)) {
      auto d = proto::CredDenied::decode(body);
      CHECK(d.code == proto::DenyCode::NotAllowed);
      CHECK(d.message.find("too many requests") != std::string::npos);
      limited++;
      continue;
    }
    REQUIRE(type == uint16_t(proto::Type::CredValue));
    auto v = proto::CredValue::decode(body);
    CHECK(std::string(v.value.begin(), v.value.end()) == value);
    values++;
  }
  CHECK(values + limited == 200);  // how many are refused depends on the time taken; the
  CHECK(values >= int(cred::CredService::kFetchBurst));  // limit itself: test_service.cpp

  // An ungranted name, then a malformed frame: denied, then closed (after a pause that gives
  // the sandbox's rate budget a fetch back).
  ::usleep(300'000);
  Fd s2 = dial(sock);
  auto f = get_frame("NOPE");
  uint8_t bad[] = {5, 0, 0, 0, 20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0};
  f.insert(f.end(), bad, bad + sizeof bad);
  net::send_all(s2.get(), {reinterpret_cast<const char*>(f.data()), f.size()},
                net::Deadline::after_ms(5000));
  for (auto want : {proto::DenyCode::NotGranted, proto::DenyCode::BadRequest}) {
    uint8_t hdr[8];
    REQUIRE(net::recv_exact(s2.get(), hdr, 8, net::Deadline::after_ms(5000)));
    uint32_t len;
    std::memcpy(&len, hdr, 4);
    std::vector<uint8_t> body(len);
    REQUIRE(net::recv_exact(s2.get(), body.data(), len, net::Deadline::after_ms(5000)));
    CHECK(proto::CredDenied::decode(body).code == want);
  }
  uint8_t b;
  CHECK_FALSE(net::recv_exact(s2.get(), &b, 1, net::Deadline::after_ms(5000)));  // closed
  s.reset();
  s2.reset();

  // With a grant and its socket, the helper stays up past the idle period: a jailed VMM could
  // not start it again.
  ::usleep(1'500'000);
  CHECK(cred::helper_running(p));
  CHECK(fs::exists(sock));
  CHECK_NOTHROW(cred::cred_call(ctx, proto::credd::RevokeAllRequest{"q1", true, "test"}));
  helper.join();  // no grant left, idle for 1 s: it exits by itself
  CHECK(rc == 0);
  CHECK_FALSE(cred::helper_running(p));  // the lock file stays, unlocked
  CHECK_FALSE(fs::exists(p.sock));
  CHECK_FALSE(fs::exists(sock));
  ::unsetenv("SPACE_CREDD_IDLE_SECONDS");
  ::unsetenv("SPACE_RUN_DIR");
}

TEST_CASE("credd keeps its process's memory to itself: not dumpable, no core file") {
  test::TempDir d("credd");
  ::unsetenv("SPACE_CRED_DIR");
  ::setenv("SPACE_CREDD_IDLE_SECONDS", "1", 1);
  ::setenv("SPACE_RUN_DIR", (d.path + "/run").c_str(), 1);
  std::string got = test::output_of_child([&] {
    cred::HelperOptions o;  // as `space __credd` runs it
    o.root = d.path + "/root";
    int rc = cred::credd_main(o);  // nothing to serve: it exits after its idle second
    rlimit core{};
    ::getrlimit(RLIMIT_CORE, &core);
    return "rc=" + std::to_string(rc) + " dumpable=" + std::to_string(::prctl(PR_GET_DUMPABLE)) +
           " core=" + std::to_string(core.rlim_cur) + "/" + std::to_string(core.rlim_max);
  });
  ::unsetenv("SPACE_CREDD_IDLE_SECONDS");
  ::unsetenv("SPACE_RUN_DIR");
  CHECK(got == "rc=0 dumpable=0 core=0/0");
}

// The network broker (egress_main) run in a thread of this test over a temporary root: a sandbox
// whose recorded VMM is this process is served (bytes through to an echo server on 127.0.0.2),
// a second connection beyond [net] max_connections is refused 503, a sandbox whose VMM is
// another process is refused 403, the operator's ping and sync (a policy added and one removed
// make a socket appear and go), the audit lines of all of that, a second broker for the same
// root stepping aside, and the exit after the idle period with every socket removed. Floods:
// 10,000 connections over a sandbox's limit, and 5,000 denied ones each to a new host name,
// leave a few dozen audit lines whose counts account for every one.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "egress/broker.h"
#include "egress/paths.h"
#include "egress/policy_store.h"
#include "proto/agent.h"
#include "proto/net.h"
#include "store/paths.h"
#include "store/state.h"
#include "support/skip.h"
#include "support/tcp_server.h"
#include "support/temp_dir.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json_lines.h"
#include "util/process.h"
#include "util/procfs.h"
#include "util/socket.h"

using namespace space;
using namespace space::egress;

namespace {

void add_sandbox(const std::string& root, const std::string& id, pid_t vmm) {
  auto sp = store::sandbox_paths(root, id);
  fs::mkdir_p(sp.dir);
  fs::mkdir_p(store::run_base() + "/" + id);
  REQUIRE(::chown((store::run_base() + "/" + id).c_str(), 0, 4243) == 0);  // the jail's group
  store::SandboxState st;
  st.id = id;
  st.status = store::Status::Running;
  st.pid = vmm;
  st.pid_start_time = *proc::start_time(vmm);
  st.created = store::rfc3339_now();
  store::write_state(sp.state, st);
}

Fd dial(const std::string& path) {
  return net::unix_connect(path, net::Deadline::after_ms(5000));
}

proto::NetResult ask(int fd, const std::string& host, uint16_t port) {
  auto f = proto::encode_frame(proto::Type::NetConnect,
                               proto::NetConnect{.host = host, .port = port}.encode());
  try {
    net::send_all(fd, {reinterpret_cast<const char*>(f.data()), f.size()},
                  net::Deadline::after_ms(5000));
  } catch (const Error&) {
    // A broker over its limit answers 503 and closes without reading: the answer is still there.
  }
  uint8_t hdr[proto::kHeaderSize];
  REQUIRE(net::recv_exact(fd, hdr, sizeof hdr, net::Deadline::after_ms(10'000)));
  uint32_t len =
      uint32_t(hdr[0]) | uint32_t(hdr[1]) << 8 | uint32_t(hdr[2]) << 16 | uint32_t(hdr[3]) << 24;
  std::vector<uint8_t> all(hdr, hdr + sizeof hdr);
  all.resize(sizeof hdr + len);
  REQUIRE(net::recv_exact(fd, all.data() + sizeof hdr, len, net::Deadline::after_ms(5000)));
  proto::FrameDecoder dec;
  dec.feed(all);
  auto frame = dec.next();
  REQUIRE(frame);
  REQUIRE(frame->type == proto::Type::NetResult);
  return proto::NetResult::decode(frame->payload);
}

// The requests an audit log accounts for: one for each line, or its "count" when it stands for
// others (a rotation's marker counts none).
uint64_t accounted(const std::vector<json::Value>& lines) {
  uint64_t n = 0;
  for (const auto& l : lines) {
    if (l.at("decision").as_string() == "rotated") continue;
    const json::Value* c = l.find("count");
    n += c ? uint64_t(c->as_int()) : 1;
  }
  return n;
}

std::string operator_says(const EgressPaths& p, const std::string& line) {
  Fd c = dial(p.sock);
  net::send_all(c.get(), line + "\n", net::Deadline::after_ms(5000));
  return net::read_line(c.get(), net::Deadline::after_ms(5000), 256).value_or("<eof>");
}

// A temporary root and run directory for one broker, with its idle time; restores the umask
// (egress_main sets 077 for the whole process) and the environment afterwards.
struct BrokerRoot {
  test::TempDir d{"egress"};
  std::string root = d.path + "/root";
  mode_t saved_umask = ::umask(0);
  explicit BrokerRoot(const char* idle_seconds) {
    ::umask(saved_umask);
    ::setenv("SPACE_RUN_DIR", (d.path + "/run").c_str(), 1);
    ::setenv("SPACE_EGRESS_IDLE_SECONDS", idle_seconds, 1);
  }
  ~BrokerRoot() {
    ::umask(saved_umask);
    ::unsetenv("SPACE_EGRESS_IDLE_SECONDS");
    ::unsetenv("SPACE_RUN_DIR");
  }
};

}  // namespace

TEST_CASE("the broker serves its sandboxes' sockets, within limits, and exits when idle" *
          test::needs_root()) {
  BrokerRoot br("1");
  const std::string& root = br.root;
  test::TcpServer echo(test::echo_service);
  EgressPaths p = egress_paths(root);
  add_sandbox(root, "q1", ::getpid());
  add_sandbox(root, "q2", 1);  // its VMM is another process
  save_policy(p, "q1", policy_from_texts({echo.address()}));
  save_policy(p, "q2", policy_from_texts({echo.address()}));
  CHECK_FALSE(daemon::running(p.lock));

  Pipe ready = Pipe::make();
  BrokerOptions o;
  o.root = root;
  o.ready_fd = ready.write.release();
  o.max_per_sandbox = 1;
  int rc = -1;
  std::thread broker([&] { rc = egress_main(o); });
  auto line = net::read_line(ready.read.get(), net::Deadline::after_ms(10'000));
  REQUIRE(line);
  REQUIRE(*line == "ok");
  CHECK(daemon::running(p.lock));
  CHECK(operator_says(p, "ping") == "ok");
  CHECK(operator_says(p, "what") == "error: unknown request");

  // Each socket is open to its run directory's group (a jailed VMM's) and nobody else.
  struct stat sst {};
  REQUIRE(::lstat(sandbox_socket("q1").c_str(), &sst) == 0);
  CHECK((sst.st_mode & 07777) == 0660);
  CHECK(sst.st_gid == 4243);

  // q1: served, bytes both ways; a second connection at once is over its limit of 1.
  Fd c1 = dial(sandbox_socket("q1"));
  auto r1 = ask(c1.get(), "127.0.0.2", echo.port);
  CHECK(r1.ok());
  net::send_all(c1.get(), "ping through the broker", net::Deadline::after_ms(5000));
  char buf[64] = {};
  REQUIRE(net::recv_exact(c1.get(), buf, 23, net::Deadline::after_ms(5000)));
  CHECK(std::string(buf, 23) == "ping through the broker");
  // A second broker for the same root waits for the lock (3 s), then steps aside, reporting ok;
  // the open connection keeps the first from idling out meanwhile.
  {
    Pipe ready2 = Pipe::make();
    BrokerOptions o2 = o;
    o2.ready_fd = ready2.write.release();
    CHECK(egress_main(o2) == 0);
    CHECK(net::read_line(ready2.read.get(), net::Deadline::after_ms(5000)).value_or("") == "ok");
  }

  {
    Fd c2 = dial(sandbox_socket("q1"));
    auto r2 = ask(c2.get(), "127.0.0.2", echo.port);
    CHECK(r2.status == 503);
    CHECK(r2.message.find("[net] max_connections") != std::string::npos);
  }
  c1.reset();  // the broker sees EOF, ends the connection and audits it

  // q2: its socket exists, but this process is not its VMM.
  {
    Fd c = dial(sandbox_socket("q2"));
    auto r = ask(c.get(), "127.0.0.2", echo.port);
    CHECK(r.status == 403);
    CHECK(r.message.find("not from the VMM of q2") != std::string::npos);
  }

  // sync: a new policy gets a socket; a removed one loses it.
  add_sandbox(root, "q3", ::getpid());
  CHECK_FALSE(fs::exists(sandbox_socket("q3")));
  save_policy(p, "q3", Policy{});
  CHECK(operator_says(p, "sync") == "ok");
  CHECK(fs::exists(sandbox_socket("q3")));
  {
    Fd c = dial(sandbox_socket("q3"));
    auto r = ask(c.get(), "127.0.0.2", echo.port);
    CHECK(r.status == 403);  // a policy with no rules: a proxy that refuses everything
  }
  CHECK(remove_policy(p, "q2"));
  CHECK(operator_says(p, "sync") == "ok");
  CHECK_FALSE(fs::exists(sandbox_socket("q2")));

  // While a running sandbox has a policy the broker stays up past its idle time: a jailed VMM
  // could not start it again.
  ::usleep(1'500'000);
  CHECK(daemon::running(p.lock));
  CHECK(remove_policy(p, "q1"));
  CHECK(remove_policy(p, "q3"));
  CHECK(operator_says(p, "sync") == "ok");
  broker.join();  // no sandbox left to serve, idle for 1 s: it exits by itself
  CHECK(rc == 0);
  CHECK_FALSE(daemon::running(p.lock));
  CHECK_FALSE(fs::exists(p.sock));
  CHECK_FALSE(fs::exists(sandbox_socket("q1")));
  CHECK_FALSE(fs::exists(sandbox_socket("q3")));

  auto q1 = jsonl::read(audit_file(p, "q1"));
  REQUIRE(q1.size() == 2);
  // The 503 is written at once; the served connection when it ended.
  const json::Value& busy = q1[0].at("decision").as_string() == "deny" ? q1[0] : q1[1];
  const json::Value& served = &busy == &q1[0] ? q1[1] : q1[0];
  CHECK(busy.at("reason").as_string().find("max_connections") != std::string::npos);
  CHECK(served.at("decision").as_string() == "allow");
  CHECK(served.at("engine").as_string() == "vm");  // from the record the peer check read
  CHECK(served.at("address").as_string() == echo.address());
  CHECK(served.at("bytes_out").as_int() == 23);
  CHECK(served.at("bytes_in").as_int() == 23);
  auto q2 = jsonl::read(audit_file(p, "q2"));
  REQUIRE(q2.size() == 1);
  CHECK(q2[0].at("decision").as_string() == "deny");
  struct stat st {};
  REQUIRE(::stat(audit_file(p, "q1").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("a sandbox flooding the broker does not starve another, nor leak descriptors" *
          test::needs_root()) {
  BrokerRoot br("2");
  const std::string& root = br.root;
  auto open_fds = [] { return fs::list_dir("/proc/self/fd").size(); };
  test::TcpServer echo(test::echo_service);
  EgressPaths p = egress_paths(root);
  add_sandbox(root, "flood", ::getpid());
  add_sandbox(root, "calm", ::getpid());
  save_policy(p, "flood", policy_from_texts({echo.address()}));
  save_policy(p, "calm", policy_from_texts({echo.address()}));
  size_t fds_before = open_fds();

  Pipe ready = Pipe::make();
  BrokerOptions o;
  o.root = root;
  o.ready_fd = ready.write.release();
  o.max_per_sandbox = 16;
  int rc = -1;
  std::thread broker([&] { rc = egress_main(o); });
  REQUIRE(net::read_line(ready.read.get(), net::Deadline::after_ms(10'000)).value_or("") == "ok");

  // 100 connections that never send a request hold the flooder's 16 slots; then 10,000 more
  // attempts, each answered at once (503) without a thread or a held descriptor.
  std::vector<Fd> held;
  for (int i = 0; i < 100; i++) held.push_back(dial(sandbox_socket("flood")));
  std::atomic<int> refused{0}, attempts{0};
  std::thread flood([&] {
    for (int i = 0; i < 10'000; i++) {
      attempts++;
      Fd c = dial(sandbox_socket("flood"));
      auto r = ask(c.get(), "127.0.0.2", echo.port);
      if (r.status == 503) refused++;
    }
  });
  // Meanwhile the calm sandbox is served, each time.
  int served = 0;
  for (int i = 0; i < 20; i++) {
    Fd c = dial(sandbox_socket("calm"));
    if (!ask(c.get(), "127.0.0.2", echo.port).ok()) continue;
    net::send_all(c.get(), "x", net::Deadline::after_ms(5000));
    char b = 0;
    if (net::recv_exact(c.get(), &b, 1, net::Deadline::after_ms(5000)) && b == 'x') served++;
  }
  CHECK(served == 20);
  CHECK(attempts.load() > 0);  // the calm sandbox was served while the flood was on
  flood.join();
  CHECK(refused == 10'000);
  held.clear();
  CHECK(remove_policy(p, "flood"));  // nothing left to serve: the broker idles out
  CHECK(remove_policy(p, "calm"));
  CHECK(operator_says(p, "sync") == "ok");
  broker.join();
  CHECK(rc == 0);
  CHECK(open_fds() <= fds_before + 2);  // the echo server's and the ready pipe's ends at most
  // Every attempt is audited: a few on lines of their own, the others in counts by kind.
  auto flood_log = jsonl::read(audit_file(p, "flood"));
  CHECK(flood_log.size() < 100);
  CHECK(accounted(flood_log) == 10'000 + 100);
}

TEST_CASE(
    "egress: 5000 denied connections, each to a new name, leave a bounded log that counts them" *
    test::needs_root()) {
  BrokerRoot br("1");
  const std::string& root = br.root;
  test::TcpServer echo(test::echo_service);
  EgressPaths p = egress_paths(root);
  add_sandbox(root, "hostile", ::getpid());
  save_policy(p, "hostile", policy_from_texts({echo.address()}));

  Pipe ready = Pipe::make();
  BrokerOptions o;
  o.root = root;
  o.ready_fd = ready.write.release();
  o.max_per_sandbox = 1024;
  int rc = -1;
  std::thread broker([&] { rc = egress_main(o); });
  REQUIRE(net::read_line(ready.read.get(), net::Deadline::after_ms(10'000)).value_or("") == "ok");
  // A new host name each time, so that no two requests look alike; the policy allows none.
  int denied = 0;
  for (int i = 0; i < 5000; i++) {
    Fd c = dial(sandbox_socket("hostile"));
    denied += ask(c.get(), "h" + std::to_string(i) + ".example.com", 443).status == 403;
  }
  CHECK(denied == 5000);
  CHECK(remove_policy(p, "hostile"));
  CHECK(operator_says(p, "sync") == "ok");
  broker.join();  // idle: it exits, writing the counts it holds
  CHECK(rc == 0);

  const std::string file = audit_file(p, "hostile");
  auto lines = jsonl::read(file);
  CHECK(lines.size() < 100);
  CHECK(accounted(lines) == 5000);
  uint64_t alone = 0, counted = 0;
  for (const auto& l : lines) {
    CHECK(l.at("decision").as_string() == "deny");
    if (const json::Value* c = l.find("count")) {
      CHECK(l.at("kind").as_string() == "not allowed by the policy");
      CHECK(l.at("reason").as_string().find("denied " + std::to_string(c->as_int()) +
                                            " requests of kind 'not allowed by the policy' from "
                                            "sandbox hostile in the last") == 0);
      counted += uint64_t(c->as_int());
    } else {
      CHECK(l.at("host").as_string().find(".example.com") != std::string::npos);
      alone++;
    }
  }
  CHECK(alone > 0);
  CHECK(counted > 0);  // the aggregate line, with the right count
  CHECK(alone + counted == 5000);
  CHECK(fs::read_file(file).size() < (8u << 20));  // the default bound
}

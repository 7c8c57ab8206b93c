// Unit tests for egress/connection: one guest connection served end to end over a socketpair,
// against TCP servers on 127.0.0.2 and a fake resolver. Allowed addresses carry bytes both
// ways and are audited with their rule and byte counts; every refusal (no policy, not the VMM,
// a denied address, a name that resolves to loopback or to one of the host's own addresses, a
// malformed request, an unresolvable name, a refused port) answers the right status with a
// reason and is audited as such; an address that cannot be checked is not connected. A name
// no name rule allows never reaches the resolver, even when an address rule allows its port.
#include <doctest/doctest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <future>
#include <map>
#include <thread>

#include "egress/connection.h"
#include "proto/agent.h"
#include "proto/net.h"
#include "support/own_netns.h"
#include "support/skip.h"
#include "support/tcp_server.h"

using namespace space;
using namespace space::egress;
using space::test::TcpServer;

namespace {

// The guest's end of a connection being served on another thread.
struct Served {
  Fd guest;
  std::future<AuditRecord> done;
};

Served serve(const std::optional<Policy>& policy, const std::string& peer_problem = "",
             Resolver resolver = nullptr, ConnLimits limits = {}, int stop_fd = -1) {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  Fd host_end(sv[1]);
  if (!resolver)
    resolver = [](const std::string& h, std::string& err) {
      err = "no such host " + h;
      return std::vector<IpAddress>{};
    };
  Served s;
  s.guest = Fd(sv[0]);
  s.done = std::async(std::launch::async, [=, fd = std::move(host_end)]() mutable {
    return serve_connection(
        std::move(fd), "s1", peer_problem, [=] { return policy; }, resolver, limits, stop_fd);
  });
  return s;
}

void send_raw(int fd, const std::vector<uint8_t>& b) {
  REQUIRE(::send(fd, b.data(), b.size(), MSG_NOSIGNAL) == ssize_t(b.size()));
}

void ask(int fd, const std::string& host, uint16_t port) {
  send_raw(fd, proto::encode_frame(proto::Type::NetConnect,
                                   proto::NetConnect{.host = host, .port = port}.encode()));
}

proto::NetResult answer(int fd) {
  proto::FrameDecoder dec;
  uint8_t buf[512];
  for (;;) {
    if (auto f = dec.next()) {
      REQUIRE(f->type == proto::Type::NetResult);
      return proto::NetResult::decode(f->payload);
    }
    ssize_t n = ::recv(fd, buf, 1, 0);  // byte by byte: nothing after the frame is consumed
    REQUIRE(n == 1);
    dec.feed({buf, size_t(n)});
  }
}

Policy rules(const std::vector<std::string>& texts) {
  return policy_from_texts(texts);
}

}  // namespace

TEST_CASE("an allowed address: result, bytes both ways, half-close, audit") {
  TcpServer echo(test::echo_service);
  auto s = serve(rules({echo.address()}));
  ask(s.guest.get(), "127.0.0.2", echo.port);
  auto r = answer(s.guest.get());
  CHECK(r.ok());
  CHECK(r.address == echo.address());
  std::string msg(100'000, 'x');
  for (size_t i = 0; i < msg.size(); i++) msg[i] = char('a' + i % 26);
  std::thread writer([&] {
    REQUIRE(::send(s.guest.get(), msg.data(), msg.size(), MSG_NOSIGNAL) == ssize_t(msg.size()));
    ::shutdown(s.guest.get(), SHUT_WR);  // passed on: the echo server sees EOF and closes
  });
  std::string back = test::read_all(s.guest.get());
  writer.join();
  CHECK(back == msg);
  AuditRecord rec = s.done.get();
  CHECK(rec.sandbox == "s1");
  CHECK(rec.decision == "allow");
  CHECK(rec.host == "127.0.0.2");
  CHECK(rec.port == echo.port);
  CHECK(rec.address == echo.address());
  CHECK(rec.rule == echo.address());
  CHECK(rec.bytes_out == msg.size());
  CHECK(rec.bytes_in == msg.size());
  CHECK(rec.reason.empty());
  CHECK(rec.time_ms > 0);
}

TEST_CASE("refusals: status, reason for the guest, and the audit decision") {
  TcpServer echo(test::echo_service);
  TcpServer other(test::echo_service, "127.0.0.3");

  SUBCASE("no policy file: no network") {
    auto s = serve(std::nullopt);
    ask(s.guest.get(), "127.0.0.2", echo.port);
    auto r = answer(s.guest.get());
    CHECK(r.status == 403);
    CHECK(r.message.find("has no network") != std::string::npos);
    CHECK(r.message.find("space net allow s1") != std::string::npos);
    CHECK(s.done.get().decision == "deny");
  }
  SUBCASE("an address no rule covers") {
    auto s = serve(rules({echo.address()}));
    ask(s.guest.get(), "127.0.0.3", other.port);
    auto r = answer(s.guest.get());
    CHECK(r.status == 403);
    CHECK_FALSE(r.message.empty());
    auto rec = s.done.get();
    CHECK(rec.decision == "deny");
    CHECK(rec.host == "127.0.0.3");
    CHECK(rec.address.empty());
    CHECK(other.accepted == 0);
  }
  SUBCASE("the right address on another port") {
    auto s = serve(rules({echo.address()}));
    ask(s.guest.get(), "127.0.0.2", uint16_t(echo.port == 65535 ? 1 : echo.port + 1));
    CHECK(answer(s.guest.get()).status == 403);
    CHECK(s.done.get().decision == "deny");
  }
  SUBCASE("a name rule never admits a name that resolves to loopback (DNS rebinding)") {
    auto s = serve(rules({"api.example.com"}), "", [](const std::string&, std::string&) {
      return std::vector<IpAddress>{*IpAddress::parse("127.0.0.2")};
    });
    ask(s.guest.get(), "API.example.com.", echo.port);
    auto r = answer(s.guest.get());
    CHECK(r.status == 403);
    CHECK(r.message.find("loopback") != std::string::npos);
    auto rec = s.done.get();
    CHECK(rec.decision == "deny");
    CHECK(rec.host == "API.example.com.");
    CHECK(echo.accepted == 0);
  }
  SUBCASE("a connection from a process that is not the sandbox's VMM") {
    auto s = serve(rules({echo.address()}), "the connection comes from pid 1");
    ask(s.guest.get(), "127.0.0.2", echo.port);
    auto r = answer(s.guest.get());
    CHECK(r.status == 403);
    CHECK(r.message == "the connection comes from pid 1");
    CHECK(echo.accepted == 0);
    s.done.get();
  }
  SUBCASE("a name that does not resolve") {
    auto s = serve(rules({"*"}));
    ask(s.guest.get(), "nowhere.invalid", 443);
    auto r = answer(s.guest.get());
    CHECK(r.status == 502);
    CHECK(r.message.find("cannot resolve nowhere.invalid") != std::string::npos);
    CHECK(s.done.get().decision == "error");
  }
  SUBCASE("an allowed port nothing listens on") {
    uint16_t port = test::closed_port();
    auto s = serve(rules({"127.0.0.2"}));
    ask(s.guest.get(), "127.0.0.2", port);
    auto r = answer(s.guest.get());
    CHECK(r.status == 502);
    CHECK(r.message.find("Connection refused") != std::string::npos);
    auto rec = s.done.get();
    CHECK(rec.decision == "error");
    CHECK(rec.rule.empty() == false);
  }
  SUBCASE("a frame of the wrong type") {
    auto s = serve(rules({"*"}));
    send_raw(s.guest.get(),
             proto::encode_frame(proto::Type::NetResult, proto::NetResult{}.encode()));
    auto r = answer(s.guest.get());
    CHECK(r.status == 400);
    CHECK(r.message.find("unexpected frame type") != std::string::npos);
    CHECK(s.done.get().decision == "error");
  }
  SUBCASE("a malformed request") {
    auto s = serve(rules({"*"}));
    std::vector<uint8_t> bad = {1, 0, 0, 0};  // a host length and nothing more
    send_raw(s.guest.get(), proto::encode_frame(proto::Type::NetConnect, bad));
    auto r = answer(s.guest.get());
    CHECK(r.status == 400);
    CHECK(r.message.find("malformed request") != std::string::npos);
    s.done.get();
  }
  SUBCASE("no request in time") {
    ConnLimits l;
    l.request_ms = 100;
    auto s = serve(rules({"*"}), "", nullptr, l);
    auto r = answer(s.guest.get());
    CHECK(r.status == 400);
    CHECK(r.message == "no request within the time limit");
    s.done.get();
  }
}

TEST_CASE("a name resolving to several addresses: denied ones are skipped, an allowed one used") {
  TcpServer echo(test::echo_service);
  std::map<std::string, int> asked;
  auto s = serve(rules({"svc.test", "127.0.0.2/32"}), "", [&](const std::string& h, std::string&) {
    asked[h]++;
    return std::vector<IpAddress>{*IpAddress::parse("127.0.0.3"), *IpAddress::parse("127.0.0.2")};
  });
  ask(s.guest.get(), "svc.test", echo.port);
  auto r = answer(s.guest.get());
  CHECK(r.ok());
  CHECK(r.address == echo.address());
  ::shutdown(s.guest.get(), SHUT_WR);
  CHECK(test::read_all(s.guest.get()).empty());
  auto rec = s.done.get();
  CHECK(rec.decision == "allow");
  CHECK(rec.rule == "127.0.0.2");
  CHECK(asked["svc.test"] == 1);
}

TEST_CASE("the idle limit and the stop descriptor end a relayed connection") {
  TcpServer echo(test::echo_service);
  SUBCASE("idle") {
    ConnLimits l;
    l.idle_ms = 100;
    auto s = serve(rules({echo.address()}), "", nullptr, l);
    ask(s.guest.get(), "127.0.0.2", echo.port);
    CHECK(answer(s.guest.get()).ok());
    auto rec = s.done.get();  // nobody sends a byte
    CHECK(rec.decision == "allow");
    CHECK(rec.reason.find("idle") != std::string::npos);
  }
  SUBCASE("stop") {
    Fd stop(::eventfd(0, EFD_CLOEXEC));
    auto s = serve(rules({echo.address()}), "", nullptr, {}, stop.get());
    ask(s.guest.get(), "127.0.0.2", echo.port);
    CHECK(answer(s.guest.get()).ok());
    uint64_t one = 1;
    REQUIRE(::write(stop.get(), &one, sizeof one) == 8);
    auto rec = s.done.get();
    CHECK_FALSE(rec.reason.empty());
    CHECK(test::read_all(s.guest.get()).empty());  // the broker closed the guest's side
  }
}

// DNS as a way out: a policy of address rules only must not hand a name the guest chose (data in
// its labels) to the host's resolver, whatever the port; the resolver is never called.
TEST_CASE("with address rules only, a CONNECT by name is refused before any lookup") {
  TcpServer echo(test::echo_service);
  std::atomic<int> lookups{0};
  Resolver counting = [&](const std::string&, std::string&) {
    lookups++;
    return std::vector<IpAddress>{*IpAddress::parse("127.0.0.2")};
  };
  ConnLimits quick;  // should a name get through after all, the relay ends soon, not in 10 min
  quick.idle_ms = 500;
  const std::string port = std::to_string(echo.port);
  for (const std::string& rule :
       std::vector<std::string>{"127.0.0.2:" + port, "127.0.0.0/8", "0.0.0.0/0:" + port}) {
    CAPTURE(rule);
    auto s = serve(rules({rule}), "", counting, quick);
    ask(s.guest.get(), "onswg4tfoqwwiylumu.attacker.example", echo.port);
    auto r = answer(s.guest.get());
    CHECK(r.status == 403);
    CHECK(r.message.find("no name rule allows onswg4tfoqwwiylumu.attacker.example:" + port) !=
          std::string::npos);
    CHECK(r.message.find("add a name rule") != std::string::npos);
    CHECK(r.message.find("or connect by address") != std::string::npos);
    auto rec = s.done.get();
    CHECK(rec.decision == "deny");
    CHECK(rec.reason == r.message);
    CHECK(rec.host == "onswg4tfoqwwiylumu.attacker.example");
    CHECK(rec.address.empty());
  }
  CHECK(lookups == 0);
  CHECK(echo.accepted == 0);

  // The same destination by address goes through.
  auto s = serve(rules({"127.0.0.2:" + port}), "", counting);
  ask(s.guest.get(), "127.0.0.2", echo.port);
  CHECK(answer(s.guest.get()).ok());
  ::shutdown(s.guest.get(), SHUT_WR);
  CHECK(test::read_all(s.guest.get()).empty());
  CHECK(s.done.get().decision == "allow");
  CHECK(lookups == 0);

  // A name rule beside the address rule: that name, and only it, is looked up.
  auto named = serve(rules({"db.test:" + port, "127.0.0.2:" + port}), "", counting);
  ask(named.guest.get(), "DB.test", echo.port);
  auto r = answer(named.guest.get());
  CHECK(r.ok());
  CHECK(r.address == echo.address());
  ::shutdown(named.guest.get(), SHUT_WR);
  CHECK(test::read_all(named.guest.get()).empty());
  auto rec = named.done.get();
  CHECK(rec.decision == "allow");
  CHECK(rec.rule == "127.0.0.2:" + port);
  CHECK(lookups == 1);
  auto other = serve(rules({"db.test:" + port, "127.0.0.2:" + port}), "", counting, quick);
  ask(other.guest.get(), "other.test", echo.port);
  CHECK(answer(other.guest.get()).status == 403);
  other.done.get();
  CHECK(lookups == 1);
}

// A name under * that resolves to one of the host's own public addresses (here: of a network
// namespace the test made, where this connection is served) is refused like loopback; an
// address rule naming it lets it through.
TEST_CASE("a name rule never admits one of the host's own addresses, an address rule does" *
          test::needs_root()) {
  test::in_own_netns({"93.184.216.34"}, [] {
    TcpServer echo(test::echo_service, "93.184.216.34");
    auto to_own = [](const std::string&, std::string&) {
      return std::vector<IpAddress>{*IpAddress::parse("93.184.216.34")};
    };
    ConnLimits quick;  // should it get through after all, the relay ends soon
    quick.idle_ms = 500;
    auto s = serve(rules({"*"}), "", to_own, quick);
    ask(s.guest.get(), "own.example", echo.port);
    auto r = answer(s.guest.get());
    CHECK(r.status == 403);
    CHECK(r.message.find("own.example resolves to 93.184.216.34, one of this host's own "
                         "addresses; a name rule never admits it") != std::string::npos);
    auto rec = s.done.get();
    CHECK(rec.decision == "deny");
    CHECK(rec.reason == r.message);
    CHECK(echo.accepted == 0);

    const std::string rule = "93.184.216.34:" + std::to_string(echo.port);
    auto allowed = serve(rules({"*", rule}), "", to_own);
    ask(allowed.guest.get(), "own.example", echo.port);
    r = answer(allowed.guest.get());
    CHECK(r.ok());
    CHECK(r.address == echo.address());
    ::shutdown(allowed.guest.get(), SHUT_WR);
    CHECK(test::read_all(allowed.guest.get()).empty());
    rec = allowed.done.get();
    CHECK(rec.decision == "allow");
    CHECK(rec.rule == rule);
    CHECK(echo.accepted == 1);
  });
}

// Fail closed: when the kernel cannot be asked whether an address is the host's own (here a
// seccomp filter on the serving threads refuses netlink sockets), the address is not connected.
// The seccomp filter below is written for x86_64.
TEST_CASE("an address that cannot be checked against the host's own is not connected" *
          doctest::skip(::geteuid() != 0 || !test::kX86_64)) {
  test::in_own_netns({}, [] {
    sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{uint16_t(sizeof code / sizeof code[0]), code};
    // This thread only (no TSYNC), and the threads it starts.
    REQUIRE(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    REQUIRE(::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
    int lookups = 0;
    auto s = serve(rules({"*"}), "", [&](const std::string&, std::string&) {
      lookups++;
      return std::vector<IpAddress>{*IpAddress::parse("93.184.216.34")};
    });
    ask(s.guest.get(), "public.example", 443);
    auto r = answer(s.guest.get());
    CHECK(r.status == 503);
    CHECK(r.message.find("cannot tell whether 93.184.216.34 is one of this host's own "
                         "addresses: the route to 93.184.216.34: netlink socket: ") !=
          std::string::npos);
    auto rec = s.done.get();
    CHECK(rec.decision == "error");
    CHECK(rec.address.empty());
    CHECK(lookups == 1);
  });
}

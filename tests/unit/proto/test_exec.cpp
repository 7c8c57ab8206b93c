// Exec messages (src/proto/exec.h): round trips, every malformed case the decoders must refuse
// with ProtoError (never a crash, a huge allocation or UB), and the exit-code mapping.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "proto/agent.h"
#include "proto/exec.h"
#include "support/checks.h"

using namespace space::proto;
using space::test::check_every_truncation_throws;

namespace {

ExecRequest full_request() {
  ExecRequest q;
  q.argv = {"sh", "-c", "echo hi"};
  q.env = {"A=1", "EMPTY=", "B=x=y"};
  q.cwd = "/tmp";
  q.uid = 1000;
  q.gid = 100;
  q.tty = true;
  q.with_stdin = true;
  q.rows = 40;
  q.cols = 120;
  q.timeout_ms = 5000;
  return q;
}

}  // namespace

TEST_CASE("ExecRequest round-trips every field") {
  auto q = full_request();
  auto b = ExecRequest::decode(q.encode());
  CHECK(b.argv == q.argv);
  CHECK(b.env == q.env);
  CHECK(b.cwd == "/tmp");
  CHECK(b.uid == 1000u);
  CHECK(b.gid == 100u);
  CHECK(b.tty);
  CHECK(b.with_stdin);
  CHECK(b.rows == 40);
  CHECK(b.cols == 120);
  CHECK(b.timeout_ms == 5000);

  ExecRequest m;
  m.argv = {"true"};
  auto mb = ExecRequest::decode(m.encode());
  CHECK_FALSE(mb.uid);
  CHECK_FALSE(mb.gid);
  CHECK_FALSE(mb.tty);
  CHECK_FALSE(mb.with_stdin);
  CHECK(mb.env.empty());
  CHECK(mb.cwd.empty());
}

TEST_CASE("ExecRequest decode rejects truncations and trailing bytes") {
  check_every_truncation_throws<ExecRequest>(full_request().encode());
  auto q = full_request();
  q.groups = {10};
  q.umask = 022;
  q.rlimits = {{7, 1, 2}};
  check_every_truncation_throws<ExecRequest>(q.encode());
}

TEST_CASE("ExecRequest carries groups, umask and resource limits, checked") {
  auto q = full_request();
  q.groups = {10, 20};
  q.umask = 027;
  q.rlimits = {{7, 100, 200}, {4, 0, UINT64_MAX}};
  auto b = ExecRequest::decode(q.encode());
  CHECK(b.groups == q.groups);
  CHECK(b.umask == 027u);
  CHECK(b.rlimits == q.rlimits);
  auto only_umask = full_request();
  only_umask.umask = 0;  // umask 0 is a value, not "unset"
  CHECK(ExecRequest::decode(only_umask.encode()).umask == 0u);
  CHECK(ExecRequest::decode(full_request().encode()).rlimits.empty());
  auto bad = [](auto mutate) {
    auto r = full_request();
    mutate(r);
    return r.encode();
  };
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& r) { r.umask = 01000; })), ProtoError);
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& r) {
                    r.rlimits = {{16, 1, 1}};
                  })),
                  ProtoError);
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& r) {
                    r.rlimits = {{7, 2, 1}};
                  })),
                  ProtoError);
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& r) {
                    r.rlimits = {{7, 1, 1}, {7, 1, 1}};
                  })),
                  ProtoError);
  CHECK_THROWS_AS(
      ExecRequest::decode(bad([](ExecRequest& r) { r.groups.assign(kMaxGroups + 1, 5); })),
      ProtoError);
}

TEST_CASE("ExecRequest decode rejects bad fields") {
  auto bad = [](auto mutate) {
    auto q = full_request();
    mutate(q);
    return q.encode();
  };
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& q) { q.argv.clear(); })), ProtoError);
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& q) { q.argv[0] = ""; })), ProtoError);
  CHECK_THROWS_AS(
      ExecRequest::decode(bad([](ExecRequest& q) { q.argv[1] = std::string("a\0b", 3); })),
      ProtoError);
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& q) { q.env.push_back("NOEQUALS"); })),
                  ProtoError);
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& q) { q.env.push_back("=value"); })),
                  ProtoError);
  CHECK_THROWS_AS(
      ExecRequest::decode(bad([](ExecRequest& q) { q.env.push_back(std::string("A=\0", 3)); })),
      ProtoError);
  CHECK_THROWS_AS(ExecRequest::decode(bad([](ExecRequest& q) { q.cwd = std::string("/\0x", 3); })),
                  ProtoError);
  // Unknown flag bits.
  auto b = full_request().encode();
  b[3] = 0x80;
  CHECK_THROWS_AS(ExecRequest::decode(b), ProtoError);
}

TEST_CASE("ExecRequest decode caps argv and env counts before allocating") {
  Writer w;
  w.u32(0);
  w.u32(0xffffffffu);  // claims 4 billion arguments
  CHECK_THROWS_AS(ExecRequest::decode(w.buffer()), ProtoError);
  ExecRequest q;
  q.argv.assign(kMaxArgs + 1, "x");
  CHECK_THROWS_AS(ExecRequest::decode(q.encode()), ProtoError);
  q.argv.assign(kMaxArgs, "x");
  CHECK(ExecRequest::decode(q.encode()).argv.size() == kMaxArgs);
}

TEST_CASE("SignalMsg, WindowSize and StdinAck round-trip and check ranges") {
  CHECK(SignalMsg::decode(SignalMsg{.signo = 9}.encode()).signo == 9);
  CHECK(SignalMsg::decode(SignalMsg{.signo = kMaxSignal}.encode()).signo == kMaxSignal);
  CHECK_THROWS_AS(SignalMsg::decode(SignalMsg{.signo = 0}.encode()), ProtoError);
  CHECK_THROWS_AS(SignalMsg::decode(SignalMsg{.signo = kMaxSignal + 1}.encode()), ProtoError);
  check_every_truncation_throws<SignalMsg>(SignalMsg{.signo = 2}.encode());

  auto ws = WindowSize::decode(WindowSize{.rows = 50, .cols = 132}.encode());
  CHECK(ws.rows == 50);
  CHECK(ws.cols == 132);
  check_every_truncation_throws<WindowSize>(WindowSize{.rows = 1, .cols = 2}.encode());

  CHECK(StdinAck::decode(StdinAck{.bytes = 1}.encode()).bytes == 1);
  CHECK(StdinAck::decode(StdinAck{.bytes = kStdinWindow}.encode()).bytes == kStdinWindow);
  CHECK_THROWS_AS(StdinAck::decode(StdinAck{.bytes = 0}.encode()), ProtoError);
  CHECK_THROWS_AS(StdinAck::decode(StdinAck{.bytes = kStdinWindow + 1}.encode()), ProtoError);
  check_every_truncation_throws<StdinAck>(StdinAck{.bytes = 7}.encode());
}

TEST_CASE("ExitStatus round-trips each kind and maps to the documented exit codes") {
  struct Case {
    ExitKind kind;
    int32_t value;
    int code;
  } cases[] = {{ExitKind::Exited, 0, 0},     {ExitKind::Exited, 3, 3},
               {ExitKind::Exited, 255, 255}, {ExitKind::Signaled, 9, 137},
               {ExitKind::Signaled, 2, 130}, {ExitKind::TimedOut, 9, 124},
               {ExitKind::NotFound, 2, 127}, {ExitKind::CannotExecute, 13, 126}};
  for (const auto& c : cases) {
    ExitStatus s{.kind = c.kind,
                 .value = c.value,
                 .duration_us = 123456789,
                 .message = c.kind >= ExitKind::NotFound ? "why" : ""};
    auto b = ExitStatus::decode(s.encode());
    CHECK(b.kind == c.kind);
    CHECK(b.value == c.value);
    CHECK(b.duration_us == 123456789u);
    CHECK(b.message == s.message);
    CHECK(exit_code_of(b) == c.code);
  }
  check_every_truncation_throws<ExitStatus>(
      ExitStatus{.kind = ExitKind::NotFound, .value = 2, .duration_us = 5, .message = "msg"}
          .encode());
}

TEST_CASE("ExitStatus decode rejects unknown kinds and out-of-range values") {
  auto enc = [](uint8_t kind, int32_t value, std::string msg = "") {
    Writer w;
    w.u8(kind);
    w.i32(value);
    w.u64(0);
    w.str(msg);
    return w.buffer();
  };
  CHECK_NOTHROW(ExitStatus::decode(enc(0, 255)));
  CHECK_THROWS_AS(ExitStatus::decode(enc(5, 0)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(0xff, 0)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(0, 256)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(0, -1)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(1, 0)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(1, 65)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(2, 0)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(3, -5)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(4, 5000)), ProtoError);
  CHECK_THROWS_AS(ExitStatus::decode(enc(3, 2, std::string(kMaxExitMessage + 1, 'x'))), ProtoError);
  // The encoder truncates an overlong message instead of producing an undecodable frame.
  ExitStatus s{.kind = ExitKind::CannotExecute,
               .value = 13,
               .duration_us = 0,
               .message = std::string(10000, 'y')};
  CHECK(ExitStatus::decode(s.encode()).message.size() == kMaxExitMessage);
}

TEST_CASE("ExecRequest carries --secret-env entries only when there are some") {
  auto q = full_request();
  CHECK(ExecRequest::decode(q.encode()).secret_env.empty());
  q.secret_env = {"TOKEN=api-token", "_K2=db.password"};
  auto b = ExecRequest::decode(q.encode());
  CHECK(b.secret_env == q.secret_env);
  check_every_truncation_throws<ExecRequest>(q.encode());
  auto bad = [](std::string e) {
    auto r = full_request();
    r.secret_env = {std::move(e)};
    return r.encode();
  };
  for (const char* e : {"NOEQ", "=name", "1X=name", "A-B=name", "A=", "A=bad/name", "A=.hidden"})
    CHECK_THROWS_AS(ExecRequest::decode(bad(e)), ProtoError);
  // The flag set with an empty list is refused too.
  Writer w;
  w.u32(ExecRequest::kSecretEnv);
  w.strs({"true"});
  w.strs({});
  w.str("");
  w.u32(0);
  w.u32(0);
  w.u16(0);
  w.u16(0);
  w.u32(0);
  w.strs({});
  CHECK_THROWS_AS(ExecRequest::decode(w.buffer()), ProtoError);
  q.secret_env.assign(kMaxSecretEnv + 1, "A=b");
  CHECK_THROWS_AS(ExecRequest::decode(q.encode()), ProtoError);
}

TEST_CASE("ExecRequest carries a user name only when there is one, never with numeric ids") {
  ExecRequest q;
  q.argv = {"id"};
  q.user = "app:staff";
  auto b = ExecRequest::decode(q.encode());
  CHECK(b.user == "app:staff");
  CHECK_FALSE(b.uid);
  check_every_truncation_throws<ExecRequest>(q.encode());
  q.user.clear();
  CHECK(ExecRequest::decode(q.encode()).user.empty());
  q.user = "app";
  q.uid = 5;
  CHECK_THROWS_AS(ExecRequest::decode(q.encode()), ProtoError);
  q.uid.reset();
  q.user = std::string("a\0b", 3);
  CHECK_THROWS_AS(ExecRequest::decode(q.encode()), ProtoError);
}

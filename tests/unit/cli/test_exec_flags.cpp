// Unit tests for cli/exec_flags: the flags `space exec` and `space run` share, parsed by CLI11 the
// way cmd_exec.cpp declares them (a sandbox id, then the command), every error
// finish_exec_flags raises and the forms it accepts, and what report_exec prints and returns.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli/exec_flags.h"
#include "proto/exec.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;
using space::cli::ExecFlags;
using space::test::ScopedEnv;

namespace {

// Parses `args` (after the program name) as `space exec` does, then finishes the flags.
ExecFlags parse(const std::vector<std::string>& args) {
  CLI::App app("exec");
  ExecFlags f;
  std::string id;
  cli::add_exec_flags(&app, &f);
  app.add_option("id", id)->required();
  app.add_option("command", f.command)->required();
  std::vector<const char*> argv = {"exec"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  CHECK(id == "box");
  cli::finish_exec_flags(&f);
  return f;
}

// The message finish_exec_flags throws for `f` ("" if it accepts it).
std::string finish_error(ExecFlags f) {
  try {
    cli::finish_exec_flags(&f);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ExecFlags with_command(std::vector<std::string> cmd = {"true"}) {
  ExecFlags f;
  f.command = std::move(cmd);
  return f;
}

// What report_exec writes to stderr, and what it returns.
std::pair<std::string, int> report(const agent::ExecResult& r, const ExecFlags& f) {
  test::TempDir d("report");
  std::string path = d.path + "/stderr";
  Fd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  REQUIRE(file.valid());
  std::fflush(stderr);
  Fd saved(::dup(2));
  REQUIRE(saved.valid());
  ::dup2(file.get(), 2);
  int code = cli::report_exec(r, f);
  std::fflush(stderr);
  ::dup2(saved.get(), 2);
  return {fs::read_file(path), code};
}

}  // namespace

TEST_CASE("exec flags: every flag parsed, and the command after the sandbox id") {
  ScopedEnv stats("SPACE_EXEC_STATS", nullptr);
  auto f = parse(
      {"-i", "-t",   "-e", "A=1",      "--env",     "B=x=y", "--secret-env", "TOKEN=api.token",
       "-w", "/srv", "-u", "1000:100", "--timeout", "2.5",   "--stats",      "box",
       "--", "sh",   "-c", "echo hi"});
  CHECK(f.opts.interactive);
  CHECK(f.opts.tty);
  CHECK(f.opts.env == std::vector<std::string>{"A=1", "B=x=y"});
  CHECK(f.opts.secret_env == std::vector<std::string>{"TOKEN=api.token"});
  CHECK(f.opts.cwd == "/srv");
  CHECK(f.opts.uid == 1000u);
  CHECK(f.opts.gid == 100u);
  CHECK(f.opts.timeout_ms == 2500u);
  CHECK(f.stats);
  CHECK(f.opts.argv == std::vector<std::string>{"sh", "-c", "echo hi"});

  auto plain = parse({"box", "true"});
  CHECK_FALSE(plain.opts.interactive);
  CHECK_FALSE(plain.opts.tty);
  CHECK(plain.opts.env.empty());
  CHECK(plain.opts.cwd.empty());
  CHECK_FALSE(plain.opts.uid);
  CHECK_FALSE(plain.opts.gid);
  CHECK(plain.opts.timeout_ms == 0u);
  CHECK_FALSE(plain.stats);
  CHECK(plain.opts.argv == std::vector<std::string>{"true"});
}

TEST_CASE("exec flags: everything after the command's first word belongs to the command") {
  auto f = parse({"box", "ls", "-l", "-e", "X=1", "--timeout", "0"});
  CHECK(f.opts.argv == std::vector<std::string>{"ls", "-l", "-e", "X=1", "--timeout", "0"});
  CHECK(f.opts.env.empty());
  CHECK(f.opts.timeout_ms == 0u);
}

TEST_CASE("exec flags: --timeout must be within 0.001..4294967 seconds") {
  CHECK_THROWS_AS(parse({"--timeout", "0", "box", "true"}), CLI::ValidationError);
  CHECK_THROWS_AS(parse({"--timeout", "-1", "box", "true"}), CLI::ParseError);
  CHECK_THROWS_AS(parse({"--timeout", "4294968", "box", "true"}), CLI::ValidationError);
  CHECK_THROWS_AS(parse({"--timeout", "soon", "box", "true"}), CLI::ParseError);
  CHECK(parse({"--timeout", "0.001", "box", "true"}).opts.timeout_ms == 1u);
  CHECK(parse({"--timeout", "4294967", "box", "true"}).opts.timeout_ms == 4294967000u);
}

TEST_CASE("finish_exec_flags: the command, with or without a leading --") {
  CHECK(finish_error(with_command({})) == "no command given");
  CHECK(finish_error(with_command({"--"})) == "no command given");
  ExecFlags none;
  try {
    cli::finish_exec_flags(&none);
    FAIL("accepted no command");
  } catch (const Error& e) {
    CHECK(e.hint() == "put the command after --, e.g. -- ls -l");
  }
  ExecFlags optional;  // run --image: the image's Entrypoint and Cmd stand in
  cli::finish_exec_flags(&optional, /*command_optional=*/true);
  CHECK(optional.opts.argv.empty());
  auto f = with_command({"--", "ls", "--", "-l"});
  cli::finish_exec_flags(&f);
  CHECK(f.opts.argv == std::vector<std::string>{"ls", "--", "-l"});  // only the first -- goes
}

TEST_CASE("finish_exec_flags: -e K=V as given, -e K from our environment or skipped") {
  ScopedEnv set("SPACE_TEST_EXEC_FLAGS_SET", "from here");
  ScopedEnv unset("SPACE_TEST_EXEC_FLAGS_UNSET", nullptr);
  auto f = with_command();
  f.env = {"A=1", "EMPTY=", "SPACE_TEST_EXEC_FLAGS_SET", "SPACE_TEST_EXEC_FLAGS_UNSET", "C=a=b"};
  cli::finish_exec_flags(&f);
  CHECK(f.opts.env ==
        std::vector<std::string>{"A=1", "EMPTY=", "SPACE_TEST_EXEC_FLAGS_SET=from here", "C=a=b"});
  auto bad = with_command();
  bad.env = {"A=1", "=value"};
  CHECK(finish_error(bad) == "-e =value: the variable name is empty");
}

TEST_CASE("finish_exec_flags: --secret-env VAR=NAME, both checked") {
  auto f = with_command();
  f.secret_env = {"GITHUB_TOKEN=gh-token", "_k9=db.pass_2", "x=Y"};
  cli::finish_exec_flags(&f);
  CHECK(f.opts.secret_env == f.secret_env);

  for (const char* e : {"NOEQUALS", "=name", "1X=name", "A-B=name", "A B=name", "A.B=name"}) {
    CAPTURE(e);
    auto bad = with_command();
    bad.secret_env = {e};
    CHECK(finish_error(bad) == std::string("--secret-env ") + e + ": not VAR=NAME");
  }
  for (const char* e : {"A=", "A=.hidden", "A=-dash", "A=bad/name", "A=sp ace"}) {
    CAPTURE(e);
    auto bad = with_command();
    bad.secret_env = {e};
    CHECK(finish_error(bad) == std::string("--secret-env ") + e + ": invalid secret name");
  }
  auto longest = with_command();
  longest.secret_env = {"A=" + std::string(128, 'n')};
  CHECK(finish_error(longest) == "");
  longest.secret_env = {"A=" + std::string(129, 'n')};
  CHECK(finish_error(longest).find("invalid secret name") != std::string::npos);

  auto many = with_command();
  many.secret_env.assign(proto::kMaxSecretEnv, "A=b");
  CHECK(finish_error(many) == "");
  many.secret_env.push_back("A=b");
  CHECK(finish_error(many) ==
        "too many --secret-env (at most " + std::to_string(proto::kMaxSecretEnv) + ")");
}

TEST_CASE("finish_exec_flags: -u UID[:GID] numeric and 32-bit, or USER[:GROUP] sent as names") {
  auto f = with_command();
  f.user = "1000";
  cli::finish_exec_flags(&f);
  CHECK(f.opts.uid == 1000u);
  CHECK_FALSE(f.opts.gid);
  f = with_command();
  f.user = "0:4294967295";
  cli::finish_exec_flags(&f);
  CHECK(f.opts.uid == 0u);
  CHECK(f.opts.gid == 4294967295u);
  CHECK(f.opts.user.empty());
  for (const char* u : {"root", "1000:wheel", "app:staff", "www-data", "node_1.x"}) {
    CAPTURE(u);
    auto named = with_command();
    named.user = u;
    cli::finish_exec_flags(&named);
    CHECK(named.opts.user == u);
    CHECK_FALSE(named.opts.uid);
    CHECK_FALSE(named.opts.gid);
  }
  for (const char* u : {"1000:", ":100", "1:2:3", "4294967296", "-1", "+5", "12345678901", "a b",
                        "-app", "app:", "x/y"}) {
    CAPTURE(u);
    auto bad = with_command();
    bad.user = u;
    CHECK(finish_error(bad) == std::string("-u ") + u + ": not UID[:GID] or USER[:GROUP]");
  }
}

TEST_CASE("finish_exec_flags: --timeout in milliseconds, rounded up; SPACE_EXEC_STATS=1") {
  ScopedEnv stats("SPACE_EXEC_STATS", nullptr);
  auto f = with_command();
  f.timeout_s = 1.5;
  cli::finish_exec_flags(&f);
  CHECK(f.opts.timeout_ms == 1500u);
  CHECK_FALSE(f.stats);
  f = with_command();
  f.timeout_s = 0.0011;
  cli::finish_exec_flags(&f);
  CHECK(f.opts.timeout_ms == 2u);
  {
    ScopedEnv on("SPACE_EXEC_STATS", "1");
    f = with_command();
    cli::finish_exec_flags(&f);
    CHECK(f.stats);
  }
  {
    ScopedEnv other("SPACE_EXEC_STATS", "yes");
    f = with_command();
    cli::finish_exec_flags(&f);
    CHECK_FALSE(f.stats);
  }
}

TEST_CASE(
    "report_exec: the exit code, the reason when the command did not end by itself, --stats") {
  ExecFlags f = with_command();
  agent::ExecResult r;
  r.status = {.kind = proto::ExitKind::Exited, .value = 3, .message = ""};
  r.exit_code = 3;
  CHECK(report(r, f) == std::pair<std::string, int>{"", 3});

  r.status = {.kind = proto::ExitKind::NotFound,
              .value = 2,
              .message = "exec nosuch: No such file or directory"};
  r.exit_code = 127;
  CHECK(report(r, f) ==
        std::pair<std::string, int>{"space: exec nosuch: No such file or directory\n", 127});

  f.opts.timeout_ms = 1500;
  r.status = {.kind = proto::ExitKind::TimedOut, .value = 0, .message = ""};
  r.exit_code = 124;
  CHECK(report(r, f).first == "space: timed out after 1.5 s; the command was killed\n");

  f.stats = true;
  r.status = {.kind = proto::ExitKind::Exited, .value = 0, .message = ""};
  r.exit_code = 0;
  r.stats.total_us = 12'345;
  r.stats.connect_us = 1'000;
  r.stats.hello_us = 2'000;
  r.stats.guest_us = 5'000;
  CHECK(report(r, f) ==
        std::pair<std::string, int>{"space: exec stats: total_ms=12.345 connect_ms=1.000 "
                                    "hello_ms=2.000 guest_ms=5.000 host_overhead_ms=7.345\n",
                                    0});
}

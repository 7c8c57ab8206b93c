// Shared exec flags; see exec_flags.h.
#include "cli/exec_flags.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "proto/cred.h"
#include "proto/exec.h"
#include "util/error.h"
#include "util/utf8.h"

namespace space::cli {
namespace {

std::optional<uint32_t> parse_u32(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (v > 0xffffffffull) return std::nullopt;
  return static_cast<uint32_t>(v);
}

}  // namespace

// One half of -u: a number that fits in 32 bits, or a name ([A-Za-z0-9_][A-Za-z0-9_.-]*, at most
// 32 characters) that is not all digits.
bool user_part_ok(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  bool digits = true;
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && c != '_' && (i == 0 || (c != '.' && c != '-'))) return false;
    digits = digits && c >= '0' && c <= '9';
  }
  return !digits || parse_u32(s).has_value();
}

void add_exec_flags(CLI::App* cmd, ExecFlags* f) {
  cmd->positionals_at_end();  // everything after the first positional belongs to the command
  cmd->add_flag("-i,--interactive", f->opts.interactive, "Forward stdin (otherwise it is at EOF)");
  cmd->add_flag("-t,--tty", f->opts.tty, "Run the command on a pseudo-terminal");
  cmd->add_option("-e,--env", f->env, "Set K=V in its environment (K alone: our value of K)")
      ->allow_extra_args(false);
  cmd->add_option("--secret-env", f->secret_env,
                  "Set VAR to the secret NAME, fetched in the guest as the process starts "
                  "(VAR=NAME; the sandbox needs a grant of NAME)")
      ->allow_extra_args(false);
  cmd->add_flag("--no-proxy-env", f->opts.no_proxy_env,
                "Do not set HTTP_PROXY, HTTPS_PROXY, NO_PROXY (and lower-case forms) for a sandbox "
                "with a network");
  cmd->add_option("-w,--workdir", f->opts.cwd, "Working directory (default /)");
  cmd->add_option("-u,--user", f->user,
                  "Run as UID[:GID], or USER[:GROUP] looked up in the guest's (or image's) "
                  "/etc/passwd and /etc/group (default root, or the image's User)");
  cmd->add_option("--timeout", f->timeout_s, "Kill it after this many seconds and exit 124")
      ->check(CLI::Range(0.001, 4294967.0));
  cmd->add_flag("--stats", f->stats, "Print host and guest timings to stderr")->group("");
}

void finish_exec_flags(ExecFlags* f, bool command_optional) {
  auto& cmd = f->command;
  if (!cmd.empty() && cmd.front() == "--") cmd.erase(cmd.begin());
  if (cmd.empty() && !command_optional)
    fail("no command given", "put the command after --, e.g. -- ls -l");
  f->opts.argv = cmd;
  for (const auto& e : f->env) {
    size_t eq = e.find('=');
    if (eq == 0) fail("-e " + e + ": the variable name is empty");
    if (eq != std::string::npos) {
      f->opts.env.push_back(e);
    } else if (const char* v = std::getenv(e.c_str())) {
      f->opts.env.push_back(e + "=" + v);
    }
  }
  for (const auto& e : f->secret_env) {
    size_t eq = e.find('=');
    bool var_ok = eq != std::string::npos && eq > 0 && !(e[0] >= '0' && e[0] <= '9');
    for (size_t i = 0; var_ok && i < eq; i++) {
      char c = e[i];
      var_ok =
          c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    }
    if (!var_ok)
      fail("--secret-env " + e + ": not VAR=NAME", "e.g. --secret-env GITHUB_TOKEN=gh-token");
    if (!proto::valid_secret_name(e.substr(eq + 1)))
      fail("--secret-env " + e + ": invalid secret name",
           "use 1-128 characters of A-Z a-z 0-9 _ . -, not starting with '.' or '-'");
    f->opts.secret_env.push_back(e);
  }
  if (f->opts.secret_env.size() > proto::kMaxSecretEnv)
    fail("too many --secret-env (at most " + std::to_string(proto::kMaxSecretEnv) + ")");
  if (!f->user.empty()) {
    size_t colon = f->user.find(':');
    std::string u = f->user.substr(0, colon);
    std::string g = colon == std::string::npos ? "" : f->user.substr(colon + 1);
    if (!user_part_ok(u) || (colon != std::string::npos && !user_part_ok(g)))
      fail("-u " + f->user + ": not UID[:GID] or USER[:GROUP]",
           "e.g. -u 1000:1000 or -u app (names are looked up in the guest)");
    auto uid = parse_u32(u);
    std::optional<uint32_t> gid;
    if (colon != std::string::npos) gid = parse_u32(g);
    if (uid && (colon == std::string::npos || gid)) {
      f->opts.uid = uid;
      f->opts.gid = gid;
    } else {
      f->opts.user = f->user;  // resolved by guest-init in the exec's root
    }
  }
  if (f->timeout_s > 0) f->opts.timeout_ms = static_cast<uint32_t>(std::ceil(f->timeout_s * 1000));
  const char* env_stats = std::getenv("SPACE_EXEC_STATS");
  if (env_stats && std::string(env_stats) == "1") f->stats = true;
}

int report_exec(const agent::ExecResult& r, const ExecFlags& f) {
  std::string why = utf8::printable(ops::describe_exit(r, f.opts));  // the guest wrote it
  if (!why.empty()) std::fprintf(stderr, "space: %s\n", why.c_str());
  if (f.stats) std::fprintf(stderr, "space: %s\n", ops::format_stats(r).c_str());
  return r.exit_code;
}

}  // namespace space::cli

// Exec message codecs; see exec.h. Encoders trust their caller (the fields come from our own
// code); decoders trust nothing.
#include "proto/exec.h"

#include "proto/cred.h"

namespace space::proto {
namespace {

void check_no_nul(const std::string& s, const char* what) {
  if (s.find('\0') != std::string::npos)
    throw ProtoError(std::string(what) + " contains a NUL byte");
}

void check_secret_env(const std::string& e) {
  auto eq = e.find('=');
  if (eq == std::string::npos || eq == 0) throw ProtoError("secret env entry is not VAR=NAME");
  for (size_t i = 0; i < eq; i++) {
    char c = e[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) throw ProtoError("secret env variable name is not [A-Za-z_][A-Za-z0-9_]*");
  }
  if (!valid_secret_name(std::string_view(e).substr(eq + 1)))
    throw ProtoError("secret env entry names an invalid secret");
}

}  // namespace

ExecRequest::Wire ExecRequest::wire() const {
  Wire w;
  const bool limits = !groups.empty() || umask || !rlimits.empty();
  w.flags = (tty ? kTty : 0) | (with_stdin ? kStdin : 0) | (uid ? kUid : 0) | (gid ? kGid : 0) |
            (secret_env.empty() ? 0 : kSecretEnv) | (user.empty() ? 0 : kUser) |
            (limits ? kLimits : 0);
  w.uid = uid.value_or(0);
  w.gid = gid.value_or(0);
  w.has_umask = umask ? 1 : 0;
  w.umask = umask.value_or(0);
  return w;
}

void ExecRequest::apply(const Wire& w) {
  if (w.flags & ~(kTty | kStdin | kUid | kGid | kSecretEnv | kUser | kLimits))
    throw ProtoError("unknown exec flags");
  tty = w.flags & kTty;
  with_stdin = w.flags & kStdin;
  uid = w.flags & kUid ? std::optional<uint32_t>(w.uid) : std::nullopt;
  gid = w.flags & kGid ? std::optional<uint32_t>(w.gid) : std::nullopt;
  if ((w.flags & kSecretEnv) && secret_env.empty())
    throw ProtoError("secret env flag without entries");
  if ((w.flags & kUser) && user.empty()) throw ProtoError("user flag without a user");
  if ((w.flags & kUser) && (w.flags & (kUid | kGid)))
    throw ProtoError("a user name and numeric ids together");
  if (!(w.flags & kLimits)) return;
  if (w.has_umask > 1 || w.umask > 0777) throw ProtoError("invalid umask");
  umask = w.has_umask ? std::optional<uint32_t>(w.umask) : std::nullopt;
  if (groups.empty() && !umask && rlimits.empty()) throw ProtoError("limits flag without limits");
}

void ExecRequest::check() const {
  for (const auto& e : secret_env) check_secret_env(e);
  check_no_nul(user, "the user");
  for (size_t i = 0; i < rlimits.size(); i++) {
    const auto& l = rlimits[i];
    if (l.resource >= kMaxRlimitResource) throw ProtoError("unknown resource limit");
    if (l.soft > l.hard) throw ProtoError("a resource limit's soft value above its hard one");
    for (size_t j = 0; j < i; j++)
      if (rlimits[j].resource == l.resource) throw ProtoError("a resource limit given twice");
  }
  if (argv.empty()) throw ProtoError("exec without a command");
  if (argv[0].empty()) throw ProtoError("exec of an empty command name");
  for (const auto& a : argv) check_no_nul(a, "an argument");
  for (const auto& e : env) {
    check_no_nul(e, "an environment entry");
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) throw ProtoError("environment entry is not K=V");
  }
  check_no_nul(cwd, "the working directory");
}

void SignalMsg::check() const {
  if (signo == 0 || signo > kMaxSignal) throw ProtoError("signal number out of range");
}

void StdinAck::check() const {
  if (bytes == 0 || bytes > kStdinWindow) throw ProtoError("stdin ack out of range");
}

void ExitStatus::check() const {
  if (static_cast<uint8_t>(kind) > static_cast<uint8_t>(ExitKind::CannotExecute))
    throw ProtoError("unknown exit kind");
  switch (kind) {
    case ExitKind::Exited:
      if (value < 0 || value > 255) throw ProtoError("exit code out of range");
      break;
    case ExitKind::Signaled:
    case ExitKind::TimedOut:
      if (value <= 0 || value > static_cast<int32_t>(kMaxSignal))
        throw ProtoError("exit signal out of range");
      break;
    case ExitKind::NotFound:
    case ExitKind::CannotExecute:
      if (value < 0 || value > 4095) throw ProtoError("exit errno out of range");
      break;
  }
}

int exit_code_of(const ExitStatus& s) {
  switch (s.kind) {
    case ExitKind::Exited:
      return s.value;
    case ExitKind::Signaled:
      return 128 + s.value;
    case ExitKind::TimedOut:
      return 124;
    case ExitKind::NotFound:
      return 127;
    case ExitKind::CannotExecute:
      return 126;
  }
  return 125;
}

}  // namespace space::proto

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

std::vector<uint8_t> ExecRequest::encode() const {
  Writer w;
  w.u32((tty ? kTty : 0) | (with_stdin ? kStdin : 0) | (uid ? kUid : 0) | (gid ? kGid : 0) |
        (secret_env.empty() ? 0 : kSecretEnv) | (user.empty() ? 0 : kUser) |
        (groups.empty() && !umask && rlimits.empty() ? 0 : kLimits));
  w.strs(argv);
  w.strs(env);
  w.str(cwd);
  w.u32(uid.value_or(0));
  w.u32(gid.value_or(0));
  w.u16(rows);
  w.u16(cols);
  w.u32(timeout_ms);
  if (!secret_env.empty()) w.strs(secret_env);
  if (!user.empty()) w.str(user);
  if (!groups.empty() || umask || !rlimits.empty()) {
    w.u32(static_cast<uint32_t>(groups.size()));
    for (uint32_t g : groups) w.u32(g);
    w.u32(umask ? 1 : 0);
    w.u32(umask.value_or(0));
    w.u32(static_cast<uint32_t>(rlimits.size()));
    for (const auto& l : rlimits) {
      w.u32(l.resource);
      w.u64(l.soft);
      w.u64(l.hard);
    }
  }
  return std::move(w.buffer());
}

ExecRequest ExecRequest::decode(std::span<const uint8_t> p) {
  Reader r(p);
  ExecRequest q;
  uint32_t flags = r.u32();
  if (flags & ~(kTty | kStdin | kUid | kGid | kSecretEnv | kUser | kLimits))
    throw ProtoError("unknown exec flags");
  q.tty = flags & kTty;
  q.with_stdin = flags & kStdin;
  q.argv = r.strs(kMaxArgs);
  q.env = r.strs(kMaxArgs);
  q.cwd = r.str();
  uint32_t uid = r.u32(), gid = r.u32();
  if (flags & kUid) q.uid = uid;
  if (flags & kGid) q.gid = gid;
  q.rows = r.u16();
  q.cols = r.u16();
  q.timeout_ms = r.u32();
  if (flags & kSecretEnv) {
    q.secret_env = r.strs(kMaxSecretEnv);
    if (q.secret_env.empty()) throw ProtoError("secret env flag without entries");
    for (const auto& e : q.secret_env) check_secret_env(e);
  }
  if (flags & kUser) {
    q.user = r.str();
    if (q.user.empty()) throw ProtoError("user flag without a user");
    if (flags & (kUid | kGid)) throw ProtoError("a user name and numeric ids together");
    check_no_nul(q.user, "the user");
  }
  if (flags & kLimits) {
    uint32_t ng = r.u32();
    if (ng > kMaxGroups) throw ProtoError("too many supplementary groups");
    for (uint32_t i = 0; i < ng; i++) q.groups.push_back(r.u32());
    uint32_t has_umask = r.u32(), mask = r.u32();
    if (has_umask > 1 || mask > 0777) throw ProtoError("invalid umask");
    if (has_umask) q.umask = mask;
    uint32_t nl = r.u32();
    if (nl > kMaxRlimitResource) throw ProtoError("too many resource limits");
    for (uint32_t i = 0; i < nl; i++) {
      ExecRequest::Rlimit l;
      l.resource = r.u32();
      l.soft = r.u64();
      l.hard = r.u64();
      if (l.resource >= kMaxRlimitResource) throw ProtoError("unknown resource limit");
      if (l.soft > l.hard) throw ProtoError("a resource limit's soft value above its hard one");
      for (const auto& o : q.rlimits)
        if (o.resource == l.resource) throw ProtoError("a resource limit given twice");
      q.rlimits.push_back(l);
    }
    if (q.groups.empty() && !q.umask && q.rlimits.empty())
      throw ProtoError("limits flag without limits");
  }
  r.finish();
  if (q.argv.empty()) throw ProtoError("exec without a command");
  if (q.argv[0].empty()) throw ProtoError("exec of an empty command name");
  for (const auto& a : q.argv) check_no_nul(a, "an argument");
  for (const auto& e : q.env) {
    check_no_nul(e, "an environment entry");
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) throw ProtoError("environment entry is not K=V");
  }
  check_no_nul(q.cwd, "the working directory");
  return q;
}

std::vector<uint8_t> SignalMsg::encode() const {
  Writer w;
  w.u32(signo);
  return std::move(w.buffer());
}

SignalMsg SignalMsg::decode(std::span<const uint8_t> p) {
  Reader r(p);
  SignalMsg s{r.u32()};
  r.finish();
  if (s.signo == 0 || s.signo > kMaxSignal) throw ProtoError("signal number out of range");
  return s;
}

std::vector<uint8_t> WindowSize::encode() const {
  Writer w;
  w.u16(rows);
  w.u16(cols);
  return std::move(w.buffer());
}

WindowSize WindowSize::decode(std::span<const uint8_t> p) {
  Reader r(p);
  WindowSize s;
  s.rows = r.u16();
  s.cols = r.u16();
  r.finish();
  return s;
}

std::vector<uint8_t> StdinAck::encode() const {
  Writer w;
  w.u32(bytes);
  return std::move(w.buffer());
}

StdinAck StdinAck::decode(std::span<const uint8_t> p) {
  Reader r(p);
  StdinAck a{r.u32()};
  r.finish();
  if (a.bytes == 0 || a.bytes > kStdinWindow) throw ProtoError("stdin ack out of range");
  return a;
}

std::vector<uint8_t> ExitStatus::encode() const {
  Writer w;
  w.u8(static_cast<uint8_t>(kind));
  w.i32(value);
  w.u64(duration_us);
  w.str(message.size() > kMaxExitMessage ? message.substr(0, kMaxExitMessage) : message);
  return std::move(w.buffer());
}

ExitStatus ExitStatus::decode(std::span<const uint8_t> p) {
  Reader r(p);
  ExitStatus s;
  uint8_t kind = r.u8();
  if (kind > static_cast<uint8_t>(ExitKind::CannotExecute)) throw ProtoError("unknown exit kind");
  s.kind = static_cast<ExitKind>(kind);
  s.value = r.i32();
  s.duration_us = r.u64();
  s.message = r.str();
  r.finish();
  if (s.message.size() > kMaxExitMessage) throw ProtoError("exit message too long");
  switch (s.kind) {
    case ExitKind::Exited:
      if (s.value < 0 || s.value > 255) throw ProtoError("exit code out of range");
      break;
    case ExitKind::Signaled:
    case ExitKind::TimedOut:
      if (s.value <= 0 || s.value > static_cast<int32_t>(kMaxSignal))
        throw ProtoError("exit signal out of range");
      break;
    case ExitKind::NotFound:
    case ExitKind::CannotExecute:
      if (s.value < 0 || s.value > 4095) throw ProtoError("exit errno out of range");
      break;
  }
  return s;
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

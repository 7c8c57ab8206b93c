// Exec messages of the agent protocol (frame types in agent.h). One exec per vsock connection:
//   host:  Hello, Exec, then Stdin chunks (an empty one is EOF), Signal and Resize at any time;
//   guest: HelloReply, then Stdout/Stderr chunks (an empty one is EOF), StdinAck, and Exit last.
// Flow control: at most kStdinWindow stdin bytes may be unacknowledged; the guest returns credit
// with StdinAck as the process consumes its input. So the guest always keeps reading the
// connection, and a Signal is never stuck behind stdin that the process does not read.
// Payload layouts, little-endian (str = u32 length + bytes; strs = u32 count + that many str):
//   ExecRequest  u32 flags, strs argv, strs env ("K=V"), str cwd, u32 uid, u32 gid,
//                u16 rows, u16 cols, u32 timeout_ms, and with flag kSecretEnv: strs secret_env
//                ("VAR=NAME": guest-init fetches secret NAME over kCredentialPort and sets VAR),
//                then with flag kUser: str user
//   SignalMsg    u32 signo            WindowSize  u16 rows, u16 cols
//   StdinAck     u32 bytes            ExitStatus  u8 kind, i32 value, u64 duration_us, str message
// Decoders check every field (counts, NUL-free strings, known flags and kinds, ranges) and throw
// ProtoError on anything else; they never read outside the payload.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proto/fields.h"
#include "proto/wire.h"

namespace space::proto {

constexpr uint32_t kMaxArgs = 4096;            // argv entries, and env entries
constexpr size_t kMaxStdinChunk = 64 * 1024;   // payload of one Stdin frame
constexpr uint32_t kStdinWindow = 256 * 1024;  // unacknowledged stdin bytes in flight
constexpr size_t kMaxExitMessage = 4096;
constexpr uint32_t kMaxSignal = 64;
constexpr uint32_t kMaxSecretEnv = 64;  // --secret-env entries per exec
constexpr size_t kMaxGroups = 64;
constexpr uint32_t kMaxRlimitResource = 16;  // RLIM_NLIMITS

struct ExecRequest : FieldMessage<ExecRequest> {
  static constexpr uint32_t kTty = 1, kStdin = 2, kUid = 4, kGid = 8, kSecretEnv = 16, kUser = 32,
                            kLimits = 64;
  // One resource limit (an OCI process.rlimits entry): setrlimit(resource, {soft, hard}).
  struct Rlimit {
    uint32_t resource = 0;  // RLIMIT_*, below kMaxRlimitResource
    uint64_t soft = 0, hard = 0;
    friend bool operator==(const Rlimit&, const Rlimit&) = default;
    SPACE_FIELDS(resource, soft, hard);
  };
  std::vector<std::string> argv;     // argv[0] is looked up in PATH unless it contains '/'
  std::vector<std::string> env;      // "K=V", applied over guest-init's environment
  std::string cwd;                   // "" = "/"
  std::optional<uint32_t> uid, gid;  // unset = root
  // "USER[:GROUP]", each a name or a number, resolved by guest-init in the exec's root (the
  // image's /etc/passwd and /etc/group); "" = none. Excludes uid and gid.
  std::string user;
  bool tty = false;             // a pty for stdin/stdout/stderr instead of pipes
  bool with_stdin = false;      // the host sends stdin; otherwise it is at EOF from the start
  uint16_t rows = 0, cols = 0;  // initial pty size (tty only; 0 = leave the default)
  uint32_t timeout_ms = 0;      // 0 = none; else the process group is killed after it
  // "VAR=NAME": VAR gets the value of secret NAME, fetched by guest-init from the credential
  // helper just before the spawn (a valid variable name; a valid proto::valid_secret_name NAME).
  std::vector<std::string> secret_env;
  // kLimits: what an OCI runtime's process also asks for. Supplementary groups besides gid
  // (at most kMaxGroups), the umask (at most 0777), and resource limits (at most one per
  // resource), all set before the ids are dropped.
  std::vector<uint32_t> groups;
  std::optional<uint32_t> umask;
  std::vector<Rlimit> rlimits;

  // What the members above say in the form the bytes carry it: the flag word, the ids (0 when
  // unset) and the umask with its presence. wire() computes it; decoding apply()s it.
  struct Wire {
    uint32_t flags = 0, uid = 0, gid = 0, has_umask = 0, umask = 0;
  };
  template <class S, class F>
  static void fields(S& s, F&& f) {
    Wire w = s.wire();
    f("flags", w.flags);
    f("argv", s.argv, Max{kMaxArgs});
    f("env", s.env, Max{kMaxArgs});
    f("cwd", s.cwd);
    f("uid", w.uid);
    f("gid", w.gid);
    f("rows", s.rows);
    f("cols", s.cols);
    f("timeout_ms", s.timeout_ms);
    f("secret_env", s.secret_env, Max{kMaxSecretEnv}, When{(w.flags & kSecretEnv) != 0});
    f("user", s.user, When{(w.flags & kUser) != 0});
    const bool limits = (w.flags & kLimits) != 0;
    f("groups", s.groups, Max{kMaxGroups}, When{limits});
    f("has_umask", w.has_umask, When{limits});
    f("umask", w.umask, When{limits});
    f("rlimits", s.rlimits, Max{kMaxRlimitResource}, When{limits});
    if constexpr (!std::is_const_v<S>) s.apply(w);
  }
  Wire wire() const;
  void apply(const Wire& w);  // throws ProtoError on unknown flags and flags without their fields
  void check() const;
};
struct SignalMsg : FieldMessage<SignalMsg> {
  uint32_t signo = 0;  // 1..kMaxSignal
  SPACE_FIELDS(signo);
  void check() const;
};

struct WindowSize : FieldMessage<WindowSize> {
  uint16_t rows = 0, cols = 0;
  SPACE_FIELDS(rows, cols);
};

struct StdinAck : FieldMessage<StdinAck> {
  uint32_t bytes = 0;  // 1..kStdinWindow
  SPACE_FIELDS(bytes);
  void check() const;
};

enum class ExitKind : uint8_t {
  Exited = 0,         // value: exit code 0..255
  Signaled = 1,       // value: the signal that killed it
  TimedOut = 2,       // value: the signal the guest killed it with after timeout_ms
  NotFound = 3,       // value: errno (ENOENT): the command does not exist
  CannotExecute = 4,  // value: errno (EACCES, ENOEXEC, a bad cwd or user...): it could not start
};

struct ExitStatus : FieldMessage<ExitStatus> {
  ExitKind kind = ExitKind::Exited;
  int32_t value = 0;
  uint64_t duration_us = 0;  // guest-measured, from just before spawning to the exit
  std::string message;       // why it could not start; "" otherwise
  SPACE_FIELDS(kind, value, duration_us, (message, Cut{kMaxExitMessage}));
  void check() const;
};

// The exit code `space exec` returns for `s`: the code; 128+N for signal N; 124 on timeout;
// 127 when not found; 126 when it cannot be executed.
int exit_code_of(const ExitStatus& s);

}  // namespace space::proto

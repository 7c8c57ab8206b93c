// state.json: the record of one sandbox, with OCI-like fields. Writers replace it atomically
// (temp file, fsync, rename) while holding the sandbox's SandboxLock; readers take no lock.
// The recorded status is what the last writer knew. A VMM killed with SIGKILL cannot update it,
// so readers use observed_status(): a sandbox recorded as creating/running/paused whose
// (pid, start time) no longer names a live process is reported as "stopped".
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/fd.h"
#include "util/json.h"

namespace space::store {

// A sandbox's status. In state.json and on output it is its name: creating, running, paused,
// checkpointed, stopped.
enum class Status { Creating, Running, Paused, Checkpointed, Stopped };

// The status's name ("running").
const char* status_name(Status s);
// The status named `name`, or nullopt when it names none.
std::optional<Status> parse_status(std::string_view name);
// True when a sandbox in status `s` has (or, creating with a pid, is getting) a VMM process.
bool claims_vmm(Status s, int pid);

struct SandboxState {
  std::string id;
  Status status = Status::Creating;
  std::string engine = "vm";    // what runs it: "vm" (KVM) or "gvisor" (runsc), launch/engine.h
  int pid = 0;                  // the VMM process (gvisor: its monitor), 0 when there is none
  uint64_t pid_start_time = 0;  // its start time (clock ticks since boot, /proc/PID/stat)
  std::string created;          // RFC 3339, UTC
  std::string template_name;    // JSON "template"; "" (null) when not made from a template
  std::string parent;           // the sandbox it was branched from, "" (null) when none
  std::string image;            // the user image its second disk was copied from, "" (null)
  uint32_t vcpus = 1;
  uint32_t memory_mib = 256;
  uint32_t uid = 0;         // the uid (and gid) its VMM runs as in its jail; 0 = not jailed
  std::string cgroup;       // its cgroup, relative to each hierarchy ("space/ID"); "" = none
  std::string expires;      // RFC 3339 (UTC): when it ends (--ttl); "" (null) = never
  std::string on_expiry;    // "destroy" or "checkpoint": what ending means; "" with no expiry
  uint64_t disk_limit = 0;  // bytes of its own its subvolume may hold (btrfs qgroup), 0 = none
  // Idle pause and idle checkpoint (core/idle.h): unused this long, it is paused, or
  // checkpointed (0 = never). `idle_asleep`: its pause or checkpoint came from idleness, so the
  // next exec, cp or forwarded connection wakes it (an explicit one is never undone that way).
  // JSON "idle": null when neither is set, else {"pause_after_ms", "checkpoint_after_ms",
  // "asleep"}.
  uint64_t idle_pause_ms = 0;
  uint64_t idle_checkpoint_ms = 0;
  bool idle_asleep = false;
  std::map<std::string, std::string> annotations;
};

// Reads and checks state.json; throws Error naming the file and the field.
SandboxState read_state(const std::string& path);
// Why process `pid` (a socket peer, by SO_PEERCRED) is not the running VMM of sandbox `id` under
// `root`, by the pid and start time in its state.json; "" when it is. The helpers that serve
// guests (credentials, network) trust a connection only from there. `engine`, when given, gets
// the engine the same record names ("" when it is unreadable), for their audit lines.
std::string vmm_peer_problem(const std::string& root, const std::string& id, int pid,
                             std::string* engine = nullptr);
// The engine ("vm", "gvisor") sandbox `id` under `root` records, or "" when its state.json is
// missing or unreadable (for audit lines, which name it).
std::string recorded_engine(const std::string& root, const std::string& id);
// Replaces state.json atomically, and durably unless `sync` is Volatile.
void write_state(const std::string& path, const SandboxState& s, fs::Sync sync = fs::Sync::Durable);
// The JSON form (keys in a fixed order; empty template/parent as null), and back.
json::Value state_to_json(const SandboxState& s);
SandboxState state_from_json(const json::Value& v);
// The status as observed now: Stopped if the record claims a VMM that is no longer alive.
Status observed_status(const SandboxState& s);
// The current time in RFC 3339 (UTC, seconds), e.g. "2025-01-31T12:00:00Z".
std::string rfc3339_now();
// `unix_s` (seconds since the epoch) in RFC 3339 (UTC).
std::string rfc3339(int64_t unix_s);
// Seconds since the epoch of an RFC 3339 UTC time as rfc3339() writes it; nullopt otherwise.
std::optional<int64_t> parse_rfc3339(std::string_view text);

// An exclusive flock on a sandbox's lock file, released on destruction. Blocking mode waits for
// it; nonblocking mode returns at once with held() false if another process has it, or if the
// sandbox directory no longer exists (it is being destroyed). create and branch make the file
// (LockFile::Create); commands on an existing sandbox open it only if it is there
// (LockFile::Existing, missing() tells), so that one waiting while a destroy removes the
// directory does not make the file again and leave the destroy a directory it cannot remove.
enum class LockFile { Create, Existing };
class SandboxLock {
 public:
  explicit SandboxLock(const std::string& lock_path, bool nonblocking = false,
                       LockFile file = LockFile::Create);
  bool held() const { return fd_.valid(); }
  bool missing() const { return missing_; }

 private:
  Fd fd_;
  bool missing_ = false;
};

}  // namespace space::store

// CredService: the credential helper's decisions, with no sockets in it, so that tests drive it
// directly with an injected clock. It owns the grant table (saved to grants.json after every
// change), opens the secret store for each operation (values are read from disk only when they
// are about to be sent, and wiped afterwards), and appends an audit line for every grant, fetch,
// denial, expiry, revocation and store change. The operator's requests (proto/credd.h, from
// credd.sock) each have one handler here. What a sandbox can provoke is bounded: its fetches
// are rate-limited (kFetchBurst at once, then kFetchPerSecond); its denials are audited one by
// one within a budget (AuditThrottle: a burst, then one a second, and the first of each kind),
// the others counted by kind and written as one line with the count once kDenialWindowMs has
// passed (or the helper exits), whatever names they asked for; the audit log is bounded
// (cred/audit.h); and grants.json is rewritten (with its fsync) only when a fetch spends a
// counted use.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cred/audit.h"
#include "cred/grants.h"
#include "cred/paths.h"
#include "proto/cred.h"
#include "proto/credd.h"
#include "util/audit_throttle.h"
#include "util/token_bucket.h"
#include "util/wipe.h"

namespace space::cred {

class CredService {
 public:
  static constexpr uint64_t kFetchBurst = 30;      // fetches a sandbox may make at once
  static constexpr uint64_t kFetchPerSecond = 10;  // and then, sustained
  static constexpr uint64_t kDenialWindowMs = 60'000;

  using Clock = std::function<uint64_t()>;  // milliseconds since the epoch
  // Loads grants.json from `paths`; `root` is the run directory whose sandboxes may be granted.
  // The audit log keeps at most `audit_max_bytes` per file.
  CredService(std::string root, CredPaths paths, Clock now,
              uint64_t audit_max_bytes = kAuditMaxBytes);

  // Answers one operator request line with a reply line; never throws (a failure, a malformed
  // line or an invalid sandbox id included, becomes {"ok": false, "error", "hint"}). The sandbox
  // ids a request names are validated here, before its handler runs.
  // The line is in secret memory: a swap's reply carries a value.
  SecretString handle_line(std::string_view line);

  // The operator's requests, one handler each, reached through handle_line (which validated
  // their sandbox ids); they throw Error (with a hint) on refusal.
  proto::credd::PingReply handle(const proto::credd::PingRequest& r);
  proto::credd::SetReply handle(const proto::credd::SetRequest& r);
  proto::credd::ListReply handle(const proto::credd::ListRequest& r);
  proto::credd::Done handle(const proto::credd::RemoveRequest& r);
  proto::credd::Done handle(const proto::credd::GrantRequest& r);
  proto::credd::Done handle(const proto::credd::RevokeRequest& r);
  proto::credd::RevokeAllReply handle(const proto::credd::RevokeAllRequest& r);
  proto::credd::CopyReply handle(const proto::credd::CopyRequest& r);
  proto::credd::GrantsReply handle(const proto::credd::GrantsRequest& r);
  // The broker's: the sandbox's placeholders, and which are bound to a host; and a swap (a use
  // spent and audited: host, method and target, never the value).
  proto::credd::BindingsReply handle(const proto::credd::BindingsRequest& r);
  proto::credd::SwapReply handle(const proto::credd::SwapRequest& r);

  struct Fetch {
    bool ok = false;
    SecretString value;  // when ok
    proto::DenyCode code = proto::DenyCode::NotGranted;
    std::string message;  // when refused: what the guest is told
  };
  // A fetch of `name` by sandbox `sandbox`, whose connection passed the peer check unless
  // `peer_problem` says why not. Spends a use (saved before returning) and audits the outcome.
  Fetch fetch(const std::string& sandbox, const std::string& name, const std::string& peer_problem);
  // Audits a request that could not be decoded.
  void audit_bad_request(const std::string& sandbox, const std::string& why);

  // Audits grants that expired since the last call, and the counts of denials whose window has
  // passed. Returns when the next grant will expire.
  std::optional<uint64_t> sweep_expired();
  // Writes every count of denials not yet audited (before the helper exits).
  void flush_audit();
  // Revokes (and audits) the grants of sandboxes whose directory is gone; forgets them.
  void drop_vanished();
  // The sandboxes that should have a socket.
  std::vector<std::string> socket_sandboxes() const { return grants_.sandboxes(); }
  bool sandbox_exists(const std::string& id) const;
  // Why the process `pid` is not the VMM of `sandbox` ("" if it is).
  std::string check_peer(const std::string& sandbox, int pid) const;
  // The "created" of `sandbox`'s state.json ("" if unreadable).
  std::string created_of(const std::string& sandbox) const;

 private:
  // Audits one event; a denial goes through the throttle under `kind` (a fixed label; "" for
  // `detail` itself, when that is one).
  void audit(const std::string& sandbox, const std::string& name, const std::string& outcome,
             const std::string& detail, const std::string& kind = "");
  void save_grants();
  void write_audit(const AuditEntry& e);
  // Writes the counts the throttle hands out (all of them, or those whose window passed).
  void write_counts(bool all);
  bool admit_fetch(const std::string& sandbox, uint64_t now);

  AuditThrottle throttle_{{.burst = 20, .period_ms = 1000, .window_ms = kDenialWindowMs}};
  std::map<std::string, TokenBucket> buckets_;  // fetches, per sandbox

  std::string root_;
  CredPaths paths_;
  Clock now_;
  uint64_t audit_max_bytes_;
  GrantTable grants_;
};

// The clock CredService uses outside tests: CLOCK_REALTIME in milliseconds.
uint64_t wall_clock_ms();

}  // namespace space::cred

// The credential helper's decisions; see service.h.
#include "cred/service.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <type_traits>
#include <utility>

#include "cred/audit.h"
#include "cred/sandbox_ca.h"
#include "cred/store.h"
#include "proto/rpc.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"

namespace space::cred {

uint64_t wall_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

namespace {

std::string limits_of(const Grant& g, uint64_t now_ms) {
  std::string d;
  if (g.expires_ms)
    d += "ttl=" + format_duration_ms(*g.expires_ms > now_ms ? *g.expires_ms - now_ms : 0);
  if (g.uses_left) d += std::string(d.empty() ? "" : " ") + "uses=" + std::to_string(*g.uses_left);
  return d;
}

proto::credd::GrantInfo grant_info(const std::string& sb, const Grant& g, uint64_t now_ms) {
  proto::credd::GrantInfo o;
  o.sandbox = sb;
  o.name = g.name;
  o.granted = rfc3339_ms(g.granted_ms);
  if (g.expires_ms) o.expires = rfc3339_ms(*g.expires_ms);
  o.uses_left = g.uses_left;
  o.inject = g.inject;
  o.state = "active";
  if (g.expires_ms && now_ms >= *g.expires_ms)
    o.state = "expired";
  else if (g.uses_left && *g.uses_left == 0)
    o.state = "used up";
  return o;
}

}  // namespace

CredService::CredService(std::string root, CredPaths paths, Clock now, uint64_t audit_max_bytes)
    : root_(std::move(root)),
      paths_(std::move(paths)),
      now_(std::move(now)),
      audit_max_bytes_(audit_max_bytes),
      grants_(GrantTable::load(paths_.grants)) {}

void CredService::write_audit(const AuditEntry& e) {
  try {
    audit_append(paths_.audit, e, audit_max_bytes_);
  } catch (const Error& err) {
    log::error(std::string("audit log: ") + err.what());
  }
}

void CredService::write_counts(bool all) {
  const uint64_t now = now_();
  for (const auto& c : throttle_.due(now, all))
    write_audit({now, c.sandbox, "", "denied", AuditThrottle::describe(c, "denied", now), c.count,
                 store::recorded_engine(root_, c.sandbox)});
}

void CredService::flush_audit() {
  write_counts(true);
}

void CredService::audit(const std::string& sandbox, const std::string& name,
                        const std::string& outcome, const std::string& detail,
                        const std::string& kind) {
  const uint64_t now = now_();
  // A sandbox asking again and again, for the same name or a new one each time, gets a few
  // lines, then one line with the count.
  if (outcome == "denied" && !throttle_.admit(sandbox, kind.empty() ? detail : kind, now)) return;
  write_audit({now, sandbox, name, outcome, detail, 0,
               sandbox.empty() ? "" : store::recorded_engine(root_, sandbox)});
}

bool CredService::admit_fetch(const std::string& sandbox, uint64_t now) {
  auto it = buckets_.try_emplace(sandbox, kFetchBurst, 1000 / kFetchPerSecond).first;
  return it->second.take(now);
}

void CredService::save_grants() {
  grants_.save(paths_.grants);
}

bool CredService::sandbox_exists(const std::string& id) const {
  return fs::exists(store::sandbox_paths(root_, id).state);
}

std::string CredService::created_of(const std::string& sandbox) const {
  try {
    return store::read_state(store::sandbox_paths(root_, sandbox).state).created;
  } catch (const Error&) {
    return "";
  }
}

std::string CredService::check_peer(const std::string& sandbox, int pid) const {
  return store::vmm_peer_problem(root_, sandbox, pid);
}

SecretString CredService::handle_line(std::string_view line) {
  std::optional<SecretString> swapped;
  std::string reply = proto::rpc::answer([&] {
    proto::credd::Request req = proto::credd::decode_request(line);
    // Every sandbox id a request names is checked here, once, before any handler uses it as a
    // key or in a path.
    for (const std::string& id : proto::credd::sandbox_ids(req)) store::validate_id(id);
    if (const auto* s = std::get_if<proto::credd::SwapRequest>(&req)) {
      swapped = proto::credd::encode_swap_reply(handle(*s));  // a value: secret memory only
      return std::string();
    }
    return std::visit(
        [this](const auto& r) {
          if constexpr (std::is_same_v<std::decay_t<decltype(r)>, proto::credd::SwapRequest>)
            return std::string();  // answered above
          else
            return proto::credd::encode_reply(handle(r));
        },
        req);
  });
  if (swapped) return std::move(*swapped);
  return SecretString(std::move(reply));
}

proto::credd::PingReply CredService::handle(const proto::credd::PingRequest&) {
  return {static_cast<int64_t>(::getpid())};
}

proto::credd::SetReply CredService::handle(const proto::credd::SetRequest& r) {
  check_secret_name(r.name);
  SecretStore store(paths_.secrets);
  bool replaced = store.set(r.name, r.value.bytes, rfc3339_ms(now_()));
  audit("", r.name, "set",
        std::to_string(r.value.bytes.size()) + " bytes" + (replaced ? ", replaced" : ""));
  return {replaced};
}

proto::credd::ListReply CredService::handle(const proto::credd::ListRequest&) {
  return {SecretStore(paths_.secrets).list()};
}

proto::credd::Done CredService::handle(const proto::credd::RemoveRequest& r) {
  check_secret_name(r.name);
  SecretStore store(paths_.secrets);
  if (!store.remove(r.name))
    throw Error("no secret named " + r.name, ENOENT, "'space secret list' shows the secrets");
  audit("", r.name, "removed", "");
  return {};
}

proto::credd::Done CredService::handle(const proto::credd::GrantRequest& r) {
  const uint64_t now = now_();
  GrantSpec spec{r.name, r.ttl_ms, r.uses, {}};
  for (const auto& h : r.inject) {
    std::string hp = parse_inject_host(h);
    if (std::find(spec.inject.begin(), spec.inject.end(), hp) == spec.inject.end())
      spec.inject.push_back(hp);
  }
  check_secret_name(spec.name);
  if ((spec.ttl_ms && *spec.ttl_ms == 0) || (spec.uses && *spec.uses == 0))
    fail("ttl and uses must be at least 1");
  if (!sandbox_exists(r.sandbox))
    throw Error("sandbox " + r.sandbox + " does not exist", ENOENT,
                "'space list' shows the sandboxes");
  if (!SecretStore(paths_.secrets).contains(spec.name))
    throw Error("no secret named " + spec.name, ENOENT,
                "store it first: space secret set " + spec.name + " < value-file");
  if (!spec.inject.empty()) ensure_sandbox_ca(paths_.dir, r.sandbox);  // before the grant
  grants_.grant(r.sandbox, spec, now, created_of(r.sandbox), new_placeholder());
  save_grants();
  const Grant* g = std::as_const(grants_).find(r.sandbox, spec.name);
  std::string detail = g ? limits_of(*g, now) : "";
  if (!spec.inject.empty()) {
    std::string hosts;
    for (const auto& h : spec.inject) hosts += (hosts.empty() ? "" : ",") + h;
    detail += (detail.empty() ? "" : " ") + std::string("inject=") + hosts;
  }
  audit(r.sandbox, spec.name, "granted", detail);
  return {};
}

proto::credd::BindingsReply CredService::handle(const proto::credd::BindingsRequest& r) {
  const std::string here = parse_inject_host(r.host + ":" + std::to_string(r.port));
  proto::credd::BindingsReply out;
  for (const auto& g : grants_.grants_of(r.sandbox)) {
    if (g.placeholder.empty()) continue;
    bool bound = std::find(g.inject.begin(), g.inject.end(), here) != g.inject.end();
    out.placeholders.push_back({g.placeholder, g.name, bound});
    for (const auto& h : g.inject)
      if (!bound && split_inject_host(h).first == split_inject_host(here).first)
        out.elsewhere = true;
  }
  return out;
}

proto::credd::SwapReply CredService::handle(const proto::credd::SwapRequest& r) {
  const uint64_t now = now_();
  const std::string here = parse_inject_host(r.host + ":" + std::to_string(r.port));
  const std::string what = here + " " + r.method + " " + r.target.substr(0, 200);
  const Grant* g = std::as_const(grants_).find_placeholder(r.sandbox, r.token);
  if (!g) {
    audit(r.sandbox, "", "denied", "swap of an unknown placeholder toward " + what, "swap refused");
    throw Error("no binding with that placeholder");
  }
  const std::string name = g->name;
  if (std::find(g->inject.begin(), g->inject.end(), here) == g->inject.end()) {
    audit(r.sandbox, name, "denied", "swap toward an unbound host " + what, "swap refused");
    throw Error("secret " + name + " is not bound to " + here);
  }
  if (!g->sandbox_created.empty() && g->sandbox_created != created_of(r.sandbox)) {
    audit(r.sandbox, name, "denied", "the grant was made to an earlier sandbox with this id",
          "swap refused");
    throw Error("not granted to this sandbox");
  }
  const bool limited = g->uses_left.has_value();
  switch (grants_.consume(r.sandbox, name, now)) {
    case Verdict::Allow:
      break;
    case Verdict::Expired:
      audit(r.sandbox, name, "denied", "expired: " + what, "expired");
      throw Error("the grant of " + name + " has expired");
    case Verdict::UsedUp:
      audit(r.sandbox, name, "denied", "used up: " + what, "used up");
      throw Error("the grant of " + name + " is used up");
    case Verdict::NotGranted:
      throw Error("not granted");
  }
  if (limited) save_grants();  // the use is spent before the value leaves
  std::optional<SecretString> value = SecretStore(paths_.secrets).get(name);
  if (!value) {
    audit(r.sandbox, name, "denied", "no such secret: " + what, "no such secret");
    throw Error("secret " + name + " no longer exists");
  }
  audit(r.sandbox, name, "injected", what);
  return {std::move(*value)};
}

proto::credd::Done CredService::handle(const proto::credd::RevokeRequest& r) {
  check_secret_name(r.name);
  if (!grants_.revoke(r.sandbox, r.name))
    throw Error("sandbox " + r.sandbox + " has no grant of " + r.name, ENOENT,
                "'space secret grants " + r.sandbox + "' shows its grants");
  save_grants();
  audit(r.sandbox, r.name, "revoked", r.reason);
  return {};
}

proto::credd::RevokeAllReply CredService::handle(const proto::credd::RevokeAllRequest& r) {
  auto names = grants_.revoke_all(r.sandbox, r.forget);
  save_grants();
  if (r.forget) remove_sandbox_ca(paths_.dir, r.sandbox);
  for (const auto& n : names) audit(r.sandbox, n, "revoked", r.reason);
  return {std::move(names)};
}

proto::credd::CopyReply CredService::handle(const proto::credd::CopyRequest& r) {
  const uint64_t now = now_();
  if (!sandbox_exists(r.to))
    throw Error("sandbox " + r.to + " does not exist", ENOENT, "'space list' shows the sandboxes");
  proto::credd::CopyReply out;
  std::vector<Grant> src = grants_.grants_of(r.from);
  for (const auto& g : src) {
    if (grants_.check(r.from, g.name, now) != Verdict::Allow) continue;  // spent ones stay behind
    GrantSpec s{g.name, g.expires_ms ? std::optional<uint64_t>(*g.expires_ms - now) : std::nullopt,
                g.uses_left, g.inject};
    if (!g.inject.empty()) ensure_sandbox_ca(paths_.dir, r.to);        // a CA of its own
    grants_.grant(r.to, s, now, created_of(r.to), new_placeholder());  // and placeholders
    std::string limits = limits_of(g, now);
    audit(r.to, g.name, "granted", "copied from " + r.from + (limits.empty() ? "" : ", " + limits));
    out.copied.push_back(g.name);
  }
  if (!src.empty()) grants_.add_sandbox(r.to);
  save_grants();
  return out;
}

proto::credd::GrantsReply CredService::handle(const proto::credd::GrantsRequest& r) {
  const uint64_t now = now_();
  // One sandbox's: refused for an id that names neither a sandbox nor any grant, rather than an
  // empty list that reads as "no grants".
  if (!r.sandbox.empty() && grants_.grants_of(r.sandbox).empty() && !sandbox_exists(r.sandbox))
    throw Error("sandbox " + r.sandbox + " does not exist", ENOENT,
                "'space list' shows the sandboxes");
  proto::credd::GrantsReply out;
  for (const auto& sb : grants_.sandboxes()) {
    if (!r.sandbox.empty() && sb != r.sandbox) continue;
    for (const auto& g : grants_.grants_of(sb)) out.grants.push_back(grant_info(sb, g, now));
  }
  return out;
}

CredService::Fetch CredService::fetch(const std::string& sandbox, const std::string& name,
                                      const std::string& peer_problem) {
  Fetch f;
  // Every refusal is a denial; its kind is its detail unless that varies.
  auto deny = [&](proto::DenyCode code, const std::string& message, const std::string& outcome,
                  const std::string& detail, const std::string& kind = "") {
    f.code = code;
    f.message = message;
    audit(sandbox, name, outcome, detail, kind);
    return std::move(f);
  };
  if (!peer_problem.empty())
    return deny(proto::DenyCode::NotAllowed, "request refused: not from this sandbox's VMM",
                "denied", peer_problem, "not from the sandbox's VMM");
  const uint64_t now = now_();
  if (!admit_fetch(sandbox, now))
    return deny(proto::DenyCode::NotAllowed,
                "too many requests: at most " + std::to_string(kFetchPerSecond) +
                    " a second per sandbox; try again shortly",
                "denied", "rate limited");
  switch (grants_.check(sandbox, name, now)) {
    case Verdict::NotGranted:
      return deny(proto::DenyCode::NotGranted, "not granted to this sandbox", "denied",
                  "not granted");
    case Verdict::Expired:
      return deny(proto::DenyCode::Expired, "the grant has expired", "denied", "expired");
    case Verdict::UsedUp:
      return deny(proto::DenyCode::UsedUp, "the grant is used up", "denied", "used up");
    case Verdict::Allow:
      break;
  }
  const GrantTable& table = grants_;
  if (const Grant* g = table.find(sandbox, name);
      g && !g->sandbox_created.empty() && g->sandbox_created != created_of(sandbox))
    return deny(proto::DenyCode::NotGranted, "not granted to this sandbox", "denied",
                "the grant was made to an earlier sandbox with this id");
  if (const Grant* b = table.find(sandbox, name); b && !b->placeholder.empty()) {
    // A binding: the sandbox gets the placeholder, never the value; no use is spent (the broker
    // spends one at each swap).
    audit(sandbox, name, "placeholder", "");
    f.ok = true;
    f.value = SecretString(b->placeholder);
    return f;
  }
  std::optional<SecretString> value;
  try {
    value = SecretStore(paths_.secrets).get(name);
  } catch (const Error& e) {
    log::error(std::string("fetch: ") + e.what());
    return deny(proto::DenyCode::Internal, "the credential helper cannot read its store", "denied",
                "store unreadable");
  }
  if (!value)
    return deny(proto::DenyCode::NoSuchSecret, "granted, but the secret no longer exists", "denied",
                "no such secret");
  // Spend the use, durably, before the value leaves: a crash after this loses a use, never
  // grants an extra one. A grant without a use limit has nothing to record (no write, no fsync).
  const Grant* counted = table.find(sandbox, name);
  bool limited = counted && counted->uses_left.has_value();
  grants_.consume(sandbox, name, now);
  if (limited) {
    try {
      save_grants();
    } catch (const Error& e) {
      log::error(std::string("fetch: ") + e.what());
      return deny(proto::DenyCode::Internal, "the credential helper cannot record the fetch",
                  "denied", "grants file unwritable");
    }
  }
  std::string left;
  for (const auto& g : grants_.grants_of(sandbox))
    if (g.name == name && g.uses_left) left = "uses left " + std::to_string(*g.uses_left);
  audit(sandbox, name, "fetched", left);
  f.ok = true;
  f.value = std::move(*value);
  return f;
}

void CredService::audit_bad_request(const std::string& sandbox, const std::string& why) {
  audit(sandbox, "", "denied", "malformed request: " + why, "malformed request");
}

std::optional<uint64_t> CredService::sweep_expired() {
  auto now = now_();
  write_counts(false);
  auto gone = grants_.newly_expired(now);
  if (!gone.empty()) {
    for (const auto& [sb, name] : gone) audit(sb, name, "expired", "");
    try {
      save_grants();
    } catch (const Error& e) {
      log::error(e.what());
    }
  }
  return grants_.next_expiry();
}

void CredService::drop_vanished() {
  bool changed = false;
  for (const auto& sb : grants_.sandboxes()) {
    if (sandbox_exists(sb)) continue;
    for (const auto& n : grants_.revoke_all(sb, /*forget=*/true))
      audit(sb, n, "revoked", "the sandbox no longer exists");
    remove_sandbox_ca(paths_.dir, sb);
    changed = true;
  }
  if (changed) save_grants();
}

}  // namespace space::cred

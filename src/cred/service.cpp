// The credential helper's decisions; see service.h.
#include "cred/service.h"

#include <time.h>

#include <cerrno>

#include "store/paths.h"
#include "store/state.h"
#include "cred/audit.h"
#include "cred/base64.h"
#include "cred/store.h"
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

json::Value grant_json(const std::string& sb, const Grant& g, uint64_t now_ms) {
  json::Value o = json::Value::object();
  o.set("sandbox", sb);
  o.set("name", g.name);
  o.set("granted", rfc3339_ms(g.granted_ms));
  o.set("expires", g.expires_ms ? json::Value(rfc3339_ms(*g.expires_ms)) : json::Value());
  o.set("uses_left", g.uses_left ? json::Value(*g.uses_left) : json::Value());
  std::string state = "active";
  if (g.expires_ms && now_ms >= *g.expires_ms) state = "expired";
  else if (g.uses_left && *g.uses_left == 0) state = "used up";
  o.set("state", state);
  return o;
}

}  // namespace

CredService::CredService(std::string root, CredPaths paths, Clock now)
    : root_(std::move(root)), paths_(std::move(paths)), now_(std::move(now)),
      grants_(GrantTable::load(paths_.grants)) {}

void CredService::audit(const std::string& sandbox, const std::string& name,
                        const std::string& outcome, const std::string& detail) {
  try {
    audit_append(paths_.audit, {now_(), sandbox, name, outcome, detail});
  } catch (const Error& e) {
    log::error(std::string("audit log: ") + e.what());
  }
}

void CredService::save_grants() { grants_.save(paths_.grants); }

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
  store::SandboxState st;
  try {
    st = store::read_state(store::sandbox_paths(root_, sandbox).state);
  } catch (const Error& e) {
    return std::string("the sandbox's state cannot be read: ") + e.what();
  }
  if (st.pid <= 0) return "sandbox " + sandbox + " has no running VMM";
  if (pid != st.pid)
    return "the connection comes from pid " + std::to_string(pid) + ", not from the VMM of " +
           sandbox + " (pid " + std::to_string(st.pid) + ")";
  if (!proc::is_alive(st.pid, st.pid_start_time))
    return "pid " + std::to_string(pid) + " is not the process recorded as the VMM of " + sandbox;
  return "";
}

json::Value CredService::handle(const json::Value& req) {
  json::Value reply;
  try {
    std::string op = json::string_field(req, "op");
    reply = dispatch(op, req);
    reply.set("ok", true);
  } catch (const std::exception& e) {
    reply = json::Value::object();
    reply.set("ok", false);
    reply.set("error", std::string(e.what()));
    if (auto* se = dynamic_cast<const Error*>(&e); se && !se->hint().empty())
      reply.set("hint", se->hint());
  }
  return reply;
}

json::Value CredService::dispatch(const std::string& op, const json::Value& req) {
  json::Value r = json::Value::object();
  const uint64_t now = now_();
  if (op == "ping") {
    r.set("pid", static_cast<int64_t>(::getpid()));
  } else if (op == "set") {
    std::string name = json::string_field(req, "name");
    check_secret_name(name);
    auto value = base64_decode(json::string_field(req, "value_base64"));
    if (!value) fail("value_base64 is not base64");
    SecretString v(std::move(*value));
    SecretStore store(paths_.secrets);
    bool replaced = store.set(name, v.bytes, rfc3339_ms(now));
    audit("", name, "set", std::to_string(v.bytes.size()) + " bytes" + (replaced ? ", replaced" : ""));
    r.set("replaced", replaced);
  } else if (op == "list") {
    json::Value a = json::Value::array();
    for (const auto& m : SecretStore(paths_.secrets).list()) {
      json::Value o = json::Value::object();
      o.set("name", m.name);
      o.set("size", m.size);
      o.set("created", m.created);
      o.set("updated", m.updated);
      a.push_back(std::move(o));
    }
    r.set("secrets", std::move(a));
  } else if (op == "rm") {
    std::string name = json::string_field(req, "name");
    check_secret_name(name);
    SecretStore store(paths_.secrets);
    if (!store.remove(name))
      throw Error("no secret named " + name, ENOENT, "'space secret list' shows the secrets");
    audit("", name, "removed", "");
  } else if (op == "grant") {
    std::string sb = json::string_field(req, "sandbox");
    store::validate_id(sb);
    GrantSpec spec;
    spec.name = json::string_field(req, "name");
    check_secret_name(spec.name);
    if (req.find("ttl_ms") && !req.at("ttl_ms").is_null()) spec.ttl_ms = json::uint_field(req, "ttl_ms");
    if (req.find("uses") && !req.at("uses").is_null()) spec.uses = json::uint_field(req, "uses");
    if ((spec.ttl_ms && *spec.ttl_ms == 0) || (spec.uses && *spec.uses == 0))
      fail("ttl and uses must be at least 1");
    if (!sandbox_exists(sb))
      throw Error("sandbox " + sb + " does not exist", ENOENT, "'space list' shows the sandboxes");
    sandbox_socket(paths_.dir, sb);  // throws (with a hint) if its socket path cannot exist
    if (!SecretStore(paths_.secrets).contains(spec.name))
      throw Error("no secret named " + spec.name, ENOENT,
                  "store it first: space secret set " + spec.name + " < value-file");
    grants_.grant(sb, spec, now, created_of(sb));
    save_grants();
    const Grant* g = nullptr;
    for (const auto& x : grants_.grants_of(sb))
      if (x.name == spec.name) g = &x;
    audit(sb, spec.name, "granted", g ? limits_of(*g, now) : "");
  } else if (op == "revoke") {
    std::string sb = json::string_field(req, "sandbox");
    store::validate_id(sb);
    const json::Value* all = req.find("all");
    if (all && all->as_bool()) {
      const json::Value* f = req.find("forget");
      bool forget = f && f->as_bool();
      auto names = grants_.revoke_all(sb, forget);
      save_grants();
      json::Value a = json::Value::array();
      std::string why = json::string_field_or(req, "reason", "");
      for (const auto& n : names) {
        audit(sb, n, "revoked", why);
        a.push_back(n);
      }
      r.set("revoked", std::move(a));
    } else {
      std::string name = json::string_field(req, "name");
      check_secret_name(name);
      if (!grants_.revoke(sb, name))
        throw Error("sandbox " + sb + " has no grant of " + name, ENOENT,
                    "'space secret grants " + sb + "' shows its grants");
      save_grants();
      audit(sb, name, "revoked", json::string_field_or(req, "reason", ""));
    }
  } else if (op == "copy") {
    std::string from = json::string_field(req, "from"), to = json::string_field(req, "to");
    store::validate_id(from);
    store::validate_id(to);
    if (!sandbox_exists(to))
      throw Error("sandbox " + to + " does not exist", ENOENT, "'space list' shows the sandboxes");
    sandbox_socket(paths_.dir, to);
    json::Value a = json::Value::array();
    std::vector<Grant> src = grants_.grants_of(from);
    for (const auto& g : src) {
      if (grants_.check(from, g.name, now) != Verdict::Allow) continue;  // spent ones stay behind
      GrantSpec s{g.name, g.expires_ms ? std::optional<uint64_t>(*g.expires_ms - now) : std::nullopt,
                  g.uses_left};
      grants_.grant(to, s, now, created_of(to));
      audit(to, g.name, "granted", "copied from " + from + (limits_of(g, now).empty() ? "" : ", " + limits_of(g, now)));
      a.push_back(g.name);
    }
    if (!src.empty()) grants_.add_sandbox(to);
    save_grants();
    r.set("copied", std::move(a));
  } else if (op == "grants") {
    std::string only = json::string_field_or(req, "sandbox", "");
    json::Value a = json::Value::array();
    for (const auto& sb : grants_.sandboxes()) {
      if (!only.empty() && sb != only) continue;
      for (const auto& g : grants_.grants_of(sb)) a.push_back(grant_json(sb, g, now));
    }
    r.set("grants", std::move(a));
  } else {
    fail("unknown op \"" + op + "\"");
  }
  return r;
}

CredService::Fetch CredService::fetch(const std::string& sandbox, const std::string& name,
                                      const std::string& peer_problem) {
  Fetch f;
  auto deny = [&](proto::DenyCode code, const std::string& message, const std::string& outcome,
                  const std::string& detail) {
    f.code = code;
    f.message = message;
    audit(sandbox, name, outcome, detail);
    return std::move(f);
  };
  if (!peer_problem.empty())
    return deny(proto::DenyCode::NotAllowed, "request refused: not from this sandbox's VMM",
                "denied", peer_problem);
  const uint64_t now = now_();
  switch (grants_.check(sandbox, name, now)) {
    case Verdict::NotGranted:
      return deny(proto::DenyCode::NotGranted, "not granted to this sandbox", "denied", "not granted");
    case Verdict::Expired:
      return deny(proto::DenyCode::Expired, "the grant has expired", "denied", "expired");
    case Verdict::UsedUp:
      return deny(proto::DenyCode::UsedUp, "the grant is used up", "denied", "used up");
    case Verdict::Allow: break;
  }
  const GrantTable& table = grants_;
  if (const Grant* g = table.find(sandbox, name);
      g && !g->sandbox_created.empty() && g->sandbox_created != created_of(sandbox))
    return deny(proto::DenyCode::NotGranted, "not granted to this sandbox", "denied",
                "the grant was made to an earlier sandbox with this id");
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
  // grants an extra one.
  grants_.consume(sandbox, name, now);
  try {
    save_grants();
  } catch (const Error& e) {
    log::error(std::string("fetch: ") + e.what());
    return deny(proto::DenyCode::Internal, "the credential helper cannot record the fetch", "denied",
                "grants file unwritable");
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
  audit(sandbox, "", "denied", "malformed request: " + why);
}

std::optional<uint64_t> CredService::sweep_expired() {
  auto now = now_();
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
    changed = true;
  }
  if (changed) save_grants();
}

}  // namespace space::cred

// Grant specs and the grant table; see grants.h.
#include "cred/grants.h"

#include <sys/random.h>

#include <algorithm>
#include <cctype>

#include "cred/store.h"
#include "store/paths.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fs.h"

namespace space::cred {

namespace {

constexpr uint64_t kMaxUses = 1'000'000'000;

std::optional<uint64_t> parse_uint(const std::string& s) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(s);
}

}  // namespace

uint64_t parse_duration_ms(const std::string& text) {
  return space::parse_duration_ms(text, "ttl=");
}

std::string format_duration_ms(uint64_t ms) {
  return space::format_duration_ms(ms);
}

std::string parse_inject_host(const std::string& text) {
  const std::string hint =
      "name a host as HOST or HOST:PORT, e.g. api.github.com or 127.0.0.2:8443";
  std::string host, port_text;
  if (!text.empty() && text[0] == '[') {  // [IPv6]:PORT
    size_t close = text.find(']');
    if (close == std::string::npos) fail("--inject " + text + ": no closing ]", hint);
    host = text.substr(0, close + 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') fail("--inject " + text + ": junk after ]", hint);
      port_text = text.substr(close + 2);
    }
  } else {
    size_t colon = text.rfind(':');
    host = text.substr(0, colon);
    if (colon != std::string::npos) port_text = text.substr(colon + 1);
  }
  for (char& c : host) c = char(std::tolower(static_cast<unsigned char>(c)));
  bool ok = !host.empty() && host.size() <= 253;
  for (char c : host)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '[' ||
                c == ']' || c == ':' || c == '_');
  if (!ok) fail("--inject " + text + ": not a host name or address", hint);
  uint64_t port = 443;
  if (!port_text.empty() || (text.find(':') != std::string::npos && text[0] != '[')) {
    auto n = parse_uint(port_text);
    if (!n || *n == 0 || *n > 65535) fail("--inject " + text + ": a bad port", hint);
    port = *n;
  }
  return host + ":" + std::to_string(port);
}

void apply_inject_flag(std::vector<GrantSpec>& specs, const std::string& flag) {
  size_t eq = flag.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size())
    fail("--inject " + flag + ": expected NAME=HOST[,HOST...]",
         "e.g. --inject GITHUB_TOKEN=api.github.com,github.com");
  const std::string name = flag.substr(0, eq);
  check_secret_name(name);
  GrantSpec* spec = nullptr;
  for (auto& s : specs)
    if (s.name == name) spec = &s;
  if (!spec) {
    specs.push_back(GrantSpec{name, std::nullopt, std::nullopt, {}});
    spec = &specs.back();
  }
  size_t start = eq + 1;
  while (start <= flag.size()) {
    size_t comma = flag.find(',', start);
    if (comma == std::string::npos) comma = flag.size();
    std::string hp = parse_inject_host(flag.substr(start, comma - start));
    if (std::find(spec->inject.begin(), spec->inject.end(), hp) == spec->inject.end())
      spec->inject.push_back(hp);
    start = comma + 1;
  }
}

std::pair<std::string, uint16_t> split_inject_host(const std::string& host_port) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) fail("not HOST:PORT: " + host_port);
  std::string host = host_port.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return {host, static_cast<uint16_t>(std::stoul(host_port.substr(colon + 1)))};
}

std::string new_placeholder() {
  unsigned char b[16];
  if (::getrandom(b, sizeof b, 0) != ssize_t(sizeof b)) throw_errno("getrandom");
  static const char* hex = "0123456789abcdef";
  std::string out = "space-placeholder-";
  for (unsigned char c : b) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

GrantSpec parse_grant_spec(const std::string& spec) {
  GrantSpec g;
  size_t colon = spec.find(':');
  g.name = spec.substr(0, colon);
  check_secret_name(g.name);
  while (colon != std::string::npos) {
    size_t next = spec.find(':', colon + 1);
    std::string opt = spec.substr(colon + 1, next == std::string::npos ? next : next - colon - 1);
    colon = next;
    if (opt.rfind("ttl=", 0) == 0) {
      if (g.ttl_ms) fail("grant " + spec + ": ttl given twice");
      g.ttl_ms = parse_duration_ms(opt.substr(4));
    } else if (opt.rfind("uses=", 0) == 0) {
      if (g.uses) fail("grant " + spec + ": uses given twice");
      auto n = parse_uint(opt.substr(5));
      if (!n || *n == 0 || *n > kMaxUses)
        fail("grant " + spec + ": uses must be a whole number from 1 to " +
             std::to_string(kMaxUses));
      g.uses = *n;
    } else {
      fail("grant " + spec + ": unknown option \"" + opt + "\"",
           "use NAME[:ttl=DURATION][:uses=N], e.g. API_TOKEN:ttl=10m:uses=3");
    }
  }
  return g;
}

void GrantTable::grant(const std::string& sandbox, const GrantSpec& spec, uint64_t now_ms,
                       const std::string& created, const std::string& placeholder) {
  Grant g;
  g.name = spec.name;
  g.sandbox_created = created;
  g.granted_ms = now_ms;
  if (spec.ttl_ms) g.expires_ms = now_ms + *spec.ttl_ms;
  g.uses_left = spec.uses;
  g.inject = spec.inject;
  if (!g.inject.empty()) {
    if (placeholder.empty()) fail("a binding needs a placeholder");
    g.placeholder = placeholder;
  }
  if (Grant* old = find(sandbox, spec.name)) {
    if (!g.inject.empty() && !old->placeholder.empty()) g.placeholder = old->placeholder;
    *old = g;
    return;
  }
  table_[sandbox].push_back(g);
}

const Grant* GrantTable::find_placeholder(const std::string& sandbox,
                                          const std::string& token) const {
  if (token.empty()) return nullptr;
  for (const auto& g : grants_of(sandbox))
    if (g.placeholder == token) return &g;
  return nullptr;
}

bool GrantTable::revoke(const std::string& sandbox, const std::string& name) {
  auto it = table_.find(sandbox);
  if (it == table_.end()) return false;
  auto& v = it->second;
  for (auto g = v.begin(); g != v.end(); ++g)
    if (g->name == name) {
      v.erase(g);
      return true;
    }
  return false;
}

std::vector<std::string> GrantTable::revoke_all(const std::string& sandbox, bool forget) {
  std::vector<std::string> names;
  auto it = table_.find(sandbox);
  if (it == table_.end()) return names;
  for (const auto& g : it->second) names.push_back(g.name);
  if (forget)
    table_.erase(it);
  else
    it->second.clear();
  return names;
}

Verdict GrantTable::check(const std::string& sandbox, const std::string& name,
                          uint64_t now_ms) const {
  const Grant* g = find(sandbox, name);
  if (!g) return Verdict::NotGranted;
  if (g->expires_ms && now_ms >= *g->expires_ms) return Verdict::Expired;
  if (g->uses_left && *g->uses_left == 0) return Verdict::UsedUp;
  return Verdict::Allow;
}

Verdict GrantTable::consume(const std::string& sandbox, const std::string& name, uint64_t now_ms) {
  Verdict v = check(sandbox, name, now_ms);
  if (v == Verdict::Allow) {
    Grant* g = find(sandbox, name);
    if (g->uses_left) --*g->uses_left;
  }
  return v;
}

std::vector<std::pair<std::string, std::string>> GrantTable::newly_expired(uint64_t now_ms) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& [sb, v] : table_)
    for (auto& g : v)
      if (g.expires_ms && now_ms >= *g.expires_ms && !g.expiry_logged) {
        g.expiry_logged = true;
        out.emplace_back(sb, g.name);
      }
  return out;
}

std::optional<uint64_t> GrantTable::next_expiry() const {
  std::optional<uint64_t> t;
  for (const auto& [sb, v] : table_)
    for (const auto& g : v)
      if (g.expires_ms && !g.expiry_logged && (!t || *g.expires_ms < *t)) t = g.expires_ms;
  return t;
}

std::vector<std::string> GrantTable::sandboxes() const {
  std::vector<std::string> out;
  for (const auto& [sb, _] : table_) out.push_back(sb);
  return out;
}

const std::vector<Grant>& GrantTable::grants_of(const std::string& sandbox) const {
  static const std::vector<Grant> kNone;
  auto it = table_.find(sandbox);
  return it == table_.end() ? kNone : it->second;
}

Grant* GrantTable::find(const std::string& sandbox, const std::string& name) {
  auto it = table_.find(sandbox);
  if (it == table_.end()) return nullptr;
  for (auto& g : it->second)
    if (g.name == name) return &g;
  return nullptr;
}

const Grant* GrantTable::find(const std::string& sandbox, const std::string& name) const {
  return const_cast<GrantTable*>(this)->find(sandbox, name);
}

json::Value GrantTable::to_json() const {
  json::Value sbs = json::Value::object();
  for (const auto& [sb, v] : table_) {
    json::Value a = json::Value::array();
    for (const auto& g : v) {
      json::Value o =
          json::Object{{"name", g.name},
                       {"granted_ms", g.granted_ms},
                       {"expires_ms", g.expires_ms ? json::Value(*g.expires_ms) : json::Value()},
                       {"uses_left", g.uses_left ? json::Value(*g.uses_left) : json::Value()},
                       {"expiry_logged", g.expiry_logged}};
      if (!g.sandbox_created.empty()) o.set("sandbox_created", g.sandbox_created);
      if (!g.inject.empty()) {
        json::Value hosts = json::Value::array();
        for (const auto& h : g.inject) hosts.push_back(h);
        o.set("inject", std::move(hosts));
        o.set("placeholder", g.placeholder);
      }
      a.push_back(std::move(o));
    }
    sbs.set(sb, std::move(a));
  }
  json::Value v = json::Value::object();
  v.set("sandboxes", std::move(sbs));
  return v;
}

GrantTable GrantTable::from_json(const json::Value& v) {
  GrantTable t;
  if (!v.is_object()) fail("not a JSON object");
  for (auto& [k, _] : v.as_object())
    if (k != "sandboxes") fail("unknown field \"" + k + "\"");
  const json::Value* sbs = v.find("sandboxes");
  if (!sbs) return t;
  for (const auto& [sb, list] : sbs->as_object()) {
    store::validate_id(sb);
    auto& out = t.table_[sb];
    for (const auto& o : list.as_array()) {
      for (auto& [k, _] : o.as_object())
        if (k != "name" && k != "granted_ms" && k != "expires_ms" && k != "uses_left" &&
            k != "expiry_logged" && k != "sandbox_created" && k != "inject" && k != "placeholder")
          fail("unknown field \"" + k + "\"");
      Grant g;
      g.name = json::string_field(o, "name");
      check_secret_name(g.name);
      g.granted_ms = json::uint_field(o, "granted_ms");
      if (const auto* e = o.find("expires_ms"); e && !e->is_null())
        g.expires_ms = json::uint_field(o, "expires_ms");
      if (const auto* u = o.find("uses_left"); u && !u->is_null())
        g.uses_left = json::uint_field(o, "uses_left");
      if (const auto* l = o.find("expiry_logged")) g.expiry_logged = l->as_bool();
      g.sandbox_created = json::string_field_or(o, "sandbox_created", "");
      if (const auto* hosts = o.find("inject")) {
        if (!hosts->is_array()) fail("field \"inject\" must be an array");
        for (const auto& h : hosts->as_array()) {
          if (!h.is_string()) fail("field \"inject\" must hold strings");
          g.inject.push_back(parse_inject_host(h.as_string()));
        }
        g.placeholder = json::string_field(o, "placeholder");
        if (g.placeholder.rfind("space-placeholder-", 0) != 0)
          fail("grant " + g.name + ": a bad placeholder");
      }
      for (const auto& x : out)
        if (x.name == g.name) fail("sandbox " + sb + ": grant " + g.name + " appears twice");
      out.push_back(g);
    }
  }
  return t;
}

GrantTable GrantTable::load(const std::string& path) {
  if (!fs::exists(path)) return {};
  return json::load_file(path, "grants", from_json);
}

void GrantTable::save(const std::string& path) const {
  json::save_file(path, to_json(), 0600);
}

}  // namespace space::cred

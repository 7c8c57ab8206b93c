// Rule parsing, canonical texts, address classes and decisions; see policy.h. Names are checked
// by hand (labels of letters, digits, '-' and '_'); addresses go through inet_pton/inet_ntop.
// Something that a resolver would take for an IPv4 address in another spelling (labels that
// are all decimal, or 0x hex, such as 0x7f.1 or 2130706433) is never accepted as a name.
#include "egress/policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "util/enum_names.h"
#include "util/error.h"

namespace space::egress {

namespace {

constexpr const char* kRuleHint =
    "rules look like pypi.org, *.example.com:443, 127.0.0.2:8080, 10.0.0.0/8:5432 or "
    "[fd00::/8]:5432 (no port: any port)";
constexpr size_t kMaxName = 253;
constexpr size_t kMaxLabel = 63;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_label_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
}
char lower(char c) {
  return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

// True for a label inet_aton would read as a number: decimal digits, or 0x and hex digits.
bool numeric_label(std::string_view l) {
  if (l.size() >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X'))
    return std::all_of(l.begin() + 2, l.end(), is_hex);
  return std::all_of(l.begin(), l.end(), is_digit);
}

// `s` as a host name in lower case without one trailing dot; nullopt with `why` if invalid.
std::optional<std::string> normalize_name(std::string_view s, std::string& why) {
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  if (s.empty()) {
    why = "empty host name";
    return std::nullopt;
  }
  if (s.size() > kMaxName) {
    why = "host name longer than " + std::to_string(kMaxName) + " characters";
    return std::nullopt;
  }
  std::string out;
  out.reserve(s.size());
  bool all_numeric = true;
  size_t start = 0;
  for (;;) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty()) {
      why = "empty label in host name";
      return std::nullopt;
    }
    if (label.size() > kMaxLabel) {
      why = "label longer than " + std::to_string(kMaxLabel) + " characters";
      return std::nullopt;
    }
    for (char c : label) {
      if (c == '*') {
        why = "'*' may only be the whole first label, as in *.example.com";
        return std::nullopt;
      }
      if (!is_label_char(c)) {
        why = "invalid character in host name (labels are letters, digits, '-' and '_')";
        return std::nullopt;
      }
      out += lower(c);
    }
    all_numeric = all_numeric && numeric_label(label);
    if (dot == std::string_view::npos) break;
    out += '.';
    start = dot + 1;
  }
  if (all_numeric) {
    why = "not a valid IPv4 address";
    return std::nullopt;
  }
  return out;
}

// The number in `s` if it is all digits and at most `max`.
std::optional<unsigned> parse_number(std::string_view s, unsigned max) {
  if (s.empty()) return std::nullopt;
  unsigned n = 0;
  for (char c : s) {
    if (!is_digit(c)) return std::nullopt;
    n = n * 10 + unsigned(c - '0');
    if (n > max) return std::nullopt;
  }
  return n;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

unsigned full_length(const IpAddress& a) {
  return a.family() == AF_INET ? 32 : 128;
}

// True when the first `len` bits of `a` and `b` agree.
bool same_prefix(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b, unsigned len) {
  size_t whole = len / 8;
  if (std::memcmp(a.data(), b.data(), whole) != 0) return false;
  unsigned rest = len % 8;
  if (rest == 0) return true;
  uint8_t mask = uint8_t(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

// True when `a` (an IPv6 address) lies in the network of `net` bytes (zero-filled) and `len`.
bool in6(const IpAddress& a, std::initializer_list<uint8_t> net, unsigned len) {
  std::array<uint8_t, 16> n{};
  std::copy(net.begin(), net.end(), n.begin());
  return same_prefix(a.bytes(), n, len);
}

// The network rule for `addr`/`prefix`: host bits cleared, an IPv4-mapped network as IPv4.
Rule network_rule(IpAddress addr, unsigned prefix, uint16_t port) {
  if (addr.is_v4_mapped() && prefix >= 96) {
    addr = addr.unmapped();
    prefix -= 96;
  }
  std::array<uint8_t, 16> b = addr.bytes();
  for (unsigned bit = prefix; bit < 128; bit++) b[bit / 8] &= uint8_t(~(0x80 >> (bit % 8)));
  Rule r;
  r.kind = RuleKind::Network;
  r.network = IpAddress::from_bytes(addr.family(), b);
  r.prefix = prefix;
  r.port = port;
  return r;
}

// "ADDR:PORT", IPv6 in brackets.
std::string with_port(const IpAddress& a, uint16_t port) {
  std::string s = a.to_string();
  if (a.family() == AF_INET6) s = "[" + s + "]";
  return s + ":" + std::to_string(port);
}

Decision refused(std::string reason) {
  return Decision{false, "", std::move(reason)};
}
Decision allowed_by(const Rule& r) {
  return Decision{true, canonical(r), ""};
}

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  char buf[INET6_ADDRSTRLEN + 1];
  if (text.empty() || text.size() >= sizeof buf) return std::nullopt;
  if (text.find('\0') != std::string_view::npos) return std::nullopt;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress a;
  a.family_ = text.find(':') != std::string_view::npos ? AF_INET6 : AF_INET;
  if (::inet_pton(a.family_, buf, a.bytes_.data()) != 1) return std::nullopt;
  return a;
}

IpAddress IpAddress::from_bytes(int family, const std::array<uint8_t, 16>& bytes) {
  IpAddress a;
  a.family_ = family == AF_INET6 ? AF_INET6 : AF_INET;
  std::copy_n(bytes.begin(), a.family_ == AF_INET ? 4 : 16, a.bytes_.begin());
  return a;
}

std::optional<IpAddress> IpAddress::from_sockaddr(const sockaddr* sa) {
  if (!sa) return std::nullopt;
  IpAddress a;
  if (sa->sa_family == AF_INET) {
    sockaddr_in sin;
    std::memcpy(&sin, sa, sizeof sin);
    a.family_ = AF_INET;
    std::memcpy(a.bytes_.data(), &sin.sin_addr, 4);
    return a;
  }
  if (sa->sa_family == AF_INET6) {
    sockaddr_in6 sin6;
    std::memcpy(&sin6, sa, sizeof sin6);
    a.family_ = AF_INET6;
    std::memcpy(a.bytes_.data(), &sin6.sin6_addr, 16);
    return a;
  }
  return std::nullopt;
}

bool IpAddress::is_v4_mapped() const {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return family_ == AF_INET6 && std::memcmp(bytes_.data(), kMapped, 12) == 0;
}

IpAddress IpAddress::unmapped() const {
  if (!is_v4_mapped()) return *this;
  IpAddress a;
  std::memcpy(a.bytes_.data(), bytes_.data() + 12, 4);
  return a;
}

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN];
  if (!::inet_ntop(family_, bytes_.data(), buf, sizeof buf)) return "?";
  return buf;
}

socklen_t IpAddress::to_sockaddr(uint16_t port, sockaddr_storage& out) const {
  IpAddress a = unmapped();
  out = sockaddr_storage{};
  if (a.family_ == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&out);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, a.bytes_.data(), 4);
    return sizeof(sockaddr_in);
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(port);
  std::memcpy(&sin6->sin6_addr, a.bytes_.data(), 16);
  return sizeof(sockaddr_in6);
}

AddressClass classify(const IpAddress& addr) {
  IpAddress a = addr.unmapped();
  using C = AddressClass;
  if (a.family() == AF_INET) {
    const auto& b = a.bytes();
    uint32_t x = uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
    auto in = [x](uint32_t net, unsigned len) { return (x >> (32 - len)) == (net >> (32 - len)); };
    if (in(0x00000000, 8)) return C::Unspecified;
    if (in(0x7f000000, 8)) return C::Loopback;
    // 169.254.169.254, and Azure's wire server 168.63.129.16 (a host service reached by every
    // Azure VM from a public-looking address: instance provisioning, health, DNS).
    if (x == 0xa9fea9fe || x == 0xa83f8110) return C::Metadata;
    if (in(0xa9fe0000, 16)) return C::LinkLocal;
    if (in(0x0a000000, 8) || in(0xac100000, 12) || in(0xc0a80000, 16)) return C::Private;
    if (in(0x64400000, 10)) return C::SharedCgnat;
    if (in(0xe0000000, 4)) return C::Multicast;
    if (in(0xf0000000, 4) || in(0xc0000000, 24) || in(0xc0000200, 24) || in(0xc6120000, 15) ||
        in(0xc6336400, 24) || in(0xcb007100, 24))
      return C::Reserved;
    return C::Public;
  }
  if (in6(a, {}, 128)) return C::Unspecified;
  if (in6(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128)) return C::Loopback;
  if (in6(a, {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, 128))
    return C::Metadata;
  if (in6(a, {0xfe, 0x80}, 10)) return C::LinkLocal;
  // Unique local fc00::/7, and site-local fec0::/10 (deprecated, RFC 3879, but a host or a
  // network may still use it as its private space: never a destination on the internet).
  if (in6(a, {0xfc}, 7) || in6(a, {0xfe, 0xc0}, 10)) return C::Private;
  if (in6(a, {0xff}, 8)) return C::Multicast;
  // Documentation, NAT64 (well-known and local-use), 6to4, Teredo 2001::/32, and the deprecated
  // IPv4-compatible ::a.b.c.d: each may lead to an IPv4 address no name rule should reach (a
  // Teredo address embeds its server's IPv4 address and its client's, obscured).
  if (in6(a, {0x20, 0x01, 0x0d, 0xb8}, 32) || in6(a, {0x00, 0x64, 0xff, 0x9b}, 96) ||
      in6(a, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48) || in6(a, {0x20, 0x02}, 16) ||
      in6(a, {0x20, 0x01, 0x00, 0x00}, 32) || in6(a, {}, 96))
    return C::Reserved;
  return C::Public;
}

const char* describe(AddressClass c) {
  using C = AddressClass;
  static constexpr EnumName<C> kNames[] = {
      {C::Public, "a public address"},
      {C::Loopback, "a loopback address"},
      {C::Private, "a private address"},
      {C::LinkLocal, "a link-local address"},
      {C::Metadata, "a cloud metadata address"},
      {C::SharedCgnat, "a shared (carrier-grade NAT) address"},
      {C::Unspecified, "an unspecified address"},
      {C::Multicast, "a multicast address"},
      {C::Reserved, "a reserved address"},
      {C::HostOwn, "one of this host's own addresses"},
  };
  return name_in(kNames, c, "an unknown address");
}

Rule parse_rule(std::string_view text) {
  auto bad = [&](const std::string& why) -> Error {
    return Error("network rule \"" + std::string(text) + "\": " + why, 0, kRuleHint);
  };
  constexpr const char* kStray =
      "stray '[' or ']' (brackets hold an IPv6 address before a port, as in [::1]:8080)";
  std::string_view t = trim(text);
  if (t.empty()) throw bad("empty rule");
  std::string_view host = t;
  std::optional<std::string_view> port_text;
  bool bracketed = false;
  if (t.front() == '[') {
    size_t close = t.find(']');
    if (close == std::string_view::npos) throw bad("'[' without ']'");
    host = t.substr(1, close - 1);
    std::string_view rest = t.substr(close + 1);
    if (host.find('[') != std::string_view::npos || rest.find_first_of("[]") != rest.npos)
      throw bad(kStray);
    if (!rest.empty() && rest.front() != ':') throw bad("']' must be followed by :PORT");
    if (!rest.empty()) port_text = rest.substr(1);
    bracketed = true;
  } else if (std::count(t.begin(), t.end(), ':') == 1) {
    size_t colon = t.find(':');
    host = t.substr(0, colon);
    port_text = t.substr(colon + 1);
  }
  if (host.find_first_of("[]") != std::string_view::npos) throw bad(kStray);
  uint16_t port = 0;
  if (port_text) {
    auto p = parse_number(*port_text, 65535);
    if (!p || *p == 0) throw bad("the port must be a number from 1 to 65535");
    port = uint16_t(*p);
  }
  if (host.empty()) throw bad("no host before the port");

  bool v6 = host.find(':') != std::string_view::npos;
  size_t slash = host.find('/');
  if (v6 || bracketed || slash != std::string_view::npos || IpAddress::parse(host)) {
    std::string_view addr_text = host.substr(0, slash);
    auto addr = IpAddress::parse(addr_text);
    if (!addr) throw bad("\"" + std::string(addr_text) + "\" is not a valid IP address");
    if (bracketed && addr->family() != AF_INET6)
      throw bad("brackets are only for IPv6 addresses (write 10.0.0.1:80, not [10.0.0.1]:80)");
    unsigned max = full_length(*addr);
    unsigned prefix = max;
    if (slash != std::string_view::npos) {
      std::string_view len_text = host.substr(slash + 1);
      auto len = parse_number(len_text, max);
      if (!len) {
        if (!bracketed && len_text.find(':') != std::string_view::npos)
          throw bad("an IPv6 rule with a port needs brackets, as in [fd00::/8]:5432");
        throw bad("the prefix length must be a number from 0 to " + std::to_string(max));
      }
      prefix = *len;
    }
    return network_rule(*addr, prefix, port);
  }

  Rule r;
  r.port = port;
  std::string why;
  if (host == "*") {
    r.kind = RuleKind::Wildcard;
    return r;
  }
  if (host.starts_with("*.")) {
    r.kind = RuleKind::Wildcard;
    host.remove_prefix(2);
    if (host.empty() || host == ".") throw bad("'*.' needs a domain after it, as in *.example.com");
  }
  auto name = normalize_name(host, why);
  if (!name) throw bad(why);
  r.name = *name;
  return r;
}

std::vector<Rule> parse_rules(std::string_view text) {
  std::vector<Rule> out;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (trim(item).empty())
      throw Error("network rules \"" + std::string(text) +
                      "\": an empty rule (a comma at an end, or two in a row)",
                  0, kRuleHint);
    Rule r = parse_rule(item);
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(std::move(r));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string canonical(const Rule& r) {
  std::string port = r.port ? ":" + std::to_string(r.port) : "";
  switch (r.kind) {
    case RuleKind::Name:
      return r.name + port;
    case RuleKind::Wildcard:
      return (r.name.empty() ? "*" : "*." + r.name) + port;
    case RuleKind::Network:
      break;
  }
  std::string s = r.network.to_string();
  if (r.prefix != full_length(r.network)) s += "/" + std::to_string(r.prefix);
  if (r.network.family() == AF_INET6 && r.port) s = "[" + s + "]";
  return s + port;
}

bool matches_name(const Rule& r, std::string_view host, uint16_t port) {
  if (r.port != 0 && r.port != port) return false;
  if (r.kind == RuleKind::Name) return host == r.name;
  if (r.kind != RuleKind::Wildcard) return false;
  if (r.name.empty()) return true;
  return host.size() > r.name.size() + 1 && host.ends_with(r.name) &&
         host[host.size() - r.name.size() - 1] == '.';
}

bool covers(const Rule& r, const IpAddress& addr, uint16_t port) {
  if (r.kind != RuleKind::Network) return false;
  if (r.port != 0 && r.port != port) return false;
  IpAddress a = addr.unmapped();
  if (a.family() != r.network.family()) return false;
  return same_prefix(a.bytes(), r.network.bytes(), std::min(r.prefix, full_length(a)));
}

std::optional<std::string> normalize_host(std::string_view host) {
  if (host.starts_with('[')) {
    if (!host.ends_with(']')) return std::nullopt;
    auto a = IpAddress::parse(host.substr(1, host.size() - 2));
    if (!a || a->family() != AF_INET6) return std::nullopt;
    return a->to_string();
  }
  if (auto a = IpAddress::parse(host)) return a->to_string();
  std::string why;
  return normalize_name(host, why);
}

Policy::Policy(std::vector<Rule> rules) {
  allow(rules);
}

size_t Policy::allow(const std::vector<Rule>& rules) {
  size_t added = 0;
  for (const auto& r : rules) {
    std::string text = canonical(r);
    bool present = std::any_of(rules_.begin(), rules_.end(),
                               [&](const Rule& have) { return canonical(have) == text; });
    if (present) continue;
    rules_.push_back(r);
    added++;
  }
  return added;
}

size_t Policy::deny(const std::vector<Rule>& rules) {
  size_t before = rules_.size();
  std::erase_if(rules_, [&](const Rule& have) {
    std::string text = canonical(have);
    return std::any_of(rules.begin(), rules.end(),
                       [&](const Rule& r) { return canonical(r) == text; });
  });
  return before - rules_.size();
}

Decision Policy::precheck(std::string_view host, uint16_t port) const {
  auto h = normalize_host(host);
  if (!h) return refused("invalid host name \"" + std::string(host) + "\"");
  if (auto literal = IpAddress::parse(*h)) return check(*h, *literal, port);
  if (port == 0) return refused("port 0 is not a valid port");
  for (const auto& r : rules_)
    if (matches_name(r, *h, port)) return allowed_by(r);
  return refused_name(*h, port);
}

Decision Policy::check(std::string_view host, const IpAddress& addr, uint16_t port,
                       const AddressClassifier& classify_addr) const {
  auto h = normalize_host(host);
  if (!h) return refused("invalid host name \"" + std::string(host) + "\"");
  if (port == 0) return refused("port 0 is not a valid port");
  if (IpAddress::parse(*h)) {
    for (const auto& r : rules_)
      if (covers(r, addr, port)) return allowed_by(r);
    return refused("no rule allows " + with_port(addr, port));
  }
  auto name_rule = std::find_if(rules_.begin(), rules_.end(),
                                [&](const Rule& r) { return matches_name(r, *h, port); });
  if (name_rule == rules_.end()) return refused_name(*h, port);
  for (const auto& r : rules_)
    if (covers(r, addr, port)) return allowed_by(r);
  AddressClass c = classify_addr(addr);
  if (c == AddressClass::Public) return allowed_by(*name_rule);
  IpAddress a = addr.unmapped();
  return refused(*h + " resolves to " + addr.to_string() + ", " + describe(c) +
                 "; a name rule never admits it (add an address rule such as " +
                 canonical(network_rule(a, full_length(a), port)) + ")");
}

Decision Policy::refused_name(const std::string& host, uint16_t port) const {
  std::string dest = host + ":" + std::to_string(port);
  auto address_rule = std::find_if(rules_.begin(), rules_.end(), [&](const Rule& r) {
    return r.kind == RuleKind::Network && (r.port == 0 || r.port == port);
  });
  if (address_rule == rules_.end()) return refused("no rule allows " + dest);
  return refused("no name rule allows " + dest + ", and a name is resolved only for a name rule (" +
                 canonical(*address_rule) + " is an address rule): add a name rule such as " +
                 dest + ", or connect by address");
}

std::vector<std::string> to_texts(const Policy& p) {
  std::vector<std::string> out;
  for (const auto& r : p.rules()) out.push_back(canonical(r));
  return out;
}

Policy policy_from_texts(const std::vector<std::string>& texts) {
  std::vector<Rule> rules;
  for (const auto& t : texts) rules.push_back(parse_rule(t));
  return Policy(std::move(rules));
}

}  // namespace space::egress

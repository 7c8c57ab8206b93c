// A sandbox's network egress policy: the rules a user writes (`--net allow=RULE,...`, `space net
// allow ID RULE...`), their one canonical text each, and the decisions the broker asks for. A rule
// is a host name (`pypi.org[:PORT]`), a wildcard (`*.example.com[:PORT]`: one or more labels in
// front, never the apex; a lone `*` is every name) or an address or network (`10.0.0.0/8[:PORT]`,
// `::1`, `[fd00::/8]:5432`); no port means any. Only a name rule lets a name be resolved: with
// address rules alone a request by name is refused before any lookup (a lookup of a name the
// guest chose carries data out through DNS). A name rule admits only public addresses: what a
// name resolves to is checked again before the broker connects (DNS rebinding), so a loopback,
// private, link-local or metadata address, or one of the host's own, needs an address rule that
// covers it. An IPv4-mapped
// IPv6 address (::ffff:a.b.c.d) is the IPv4 address for classification and matching, and an
// address rule inside ::ffff:0:0/96 is parsed as the IPv4 rule. No sockets and no DNS here.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace space::egress {

// An IPv4 or IPv6 address: its family and 16 bytes in network order (IPv4 in the first 4).
class IpAddress {
 public:
  // 0.0.0.0.
  IpAddress() = default;
  // The address in `text` (dotted quad or IPv6 text, no brackets, port or zone); nullopt if not.
  static std::optional<IpAddress> parse(std::string_view text);
  // The address of a sockaddr_in or sockaddr_in6; nullopt for any other family.
  static std::optional<IpAddress> from_sockaddr(const sockaddr* sa);
  // The address of `family` (AF_INET or AF_INET6) and `bytes`; IPv4 keeps only the first 4.
  static IpAddress from_bytes(int family, const std::array<uint8_t, 16>& bytes);
  // AF_INET or AF_INET6.
  int family() const { return family_; }
  // The address bytes in network order; an IPv4 address uses the first 4.
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }
  // True for an IPv6 address in ::ffff:0:0/96 (an IPv4 address in IPv6 form).
  bool is_v4_mapped() const;
  // The IPv4 address of an IPv4-mapped address; any other address unchanged.
  IpAddress unmapped() const;
  // inet_ntop's text: "127.0.0.1", "::1", "::ffff:10.0.0.1" (no brackets).
  std::string to_string() const;
  // Fills `out` with the socket address of unmapped():`port`; returns its length.
  socklen_t to_sockaddr(uint16_t port, sockaddr_storage& out) const;
  // Ordered by family, then bytes; a mapped address is not equal to its IPv4 address.
  auto operator<=>(const IpAddress&) const = default;

 private:
  int family_ = AF_INET;
  std::array<uint8_t, 16> bytes_{};
};

// What kind of address an address is; everything but Public is refused to a name rule.
enum class AddressClass {
  Public,
  Loopback,     // 127.0.0.0/8, ::1
  Private,      // 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 (site-local)
  LinkLocal,    // 169.254/16, fe80::/10
  Metadata,     // 169.254.169.254, fd00:ec2::254, 168.63.129.16 (Azure's wire server)
  SharedCgnat,  // 100.64/10
  Unspecified,  // 0.0.0.0/8, ::
  Multicast,    // 224/4, ff00::/8
  Reserved,     // 240/4, documentation, benchmarking, 192.0.0/24, NAT64, 6to4, Teredo 2001::/32
  HostOwn,      // one of the host's own (otherwise public) addresses: never from classify(), only
                // from a classifier that asks the host (egress/host_address.h)
};

// The class of `addr` (of its IPv4 address when it is IPv4-mapped), by its value alone.
AddressClass classify(const IpAddress& addr);
// A classification of addresses for Policy::check: classify, or one that knows more.
using AddressClassifier = std::function<AddressClass(const IpAddress&)>;
// The class as a noun phrase for messages: "a loopback address", "a private address", ...
const char* describe(AddressClass c);

// What a rule names: a host, the names under a domain, or a network.
enum class RuleKind { Name, Wildcard, Network };

// One allow rule, in canonical form when it came from parse_rule.
struct Rule {
  RuleKind kind = RuleKind::Name;
  std::string name;     // Name: the host; Wildcard: the domain after "*." ("" for a lone "*")
  IpAddress network;    // Network: the network address, host bits cleared
  unsigned prefix = 0;  // Network: the prefix length (32 or 128 for one address)
  uint16_t port = 0;    // 0: any port
  bool operator==(const Rule&) const = default;
};

// The rule in `text`; throws space::Error("network rule \"TEXT\": why", hint with the forms).
Rule parse_rule(std::string_view text);
// The comma-separated rules in `text`, exact duplicates dropped, in order; throws like
// parse_rule, and on an empty item.
std::vector<Rule> parse_rules(std::string_view text);
// The canonical text of `r`; parse_rule(canonical(r)) == r for every parsed rule.
std::string canonical(const Rule& r);
// True when `r` is a name or wildcard rule that matches the normalised name `host` and `port`.
bool matches_name(const Rule& r, std::string_view host, uint16_t port);
// True when `r` is a network rule that contains addr.unmapped() and allows `port`.
bool covers(const Rule& r, const IpAddress& addr, uint16_t port);

// `host` as the guest sent it, normalised: an address literal (IPv6 with or without brackets)
// as IpAddress::to_string(), a name in lower case without one trailing dot; nullopt if invalid.
std::optional<std::string> normalize_host(std::string_view host);

// The outcome of a policy question.
struct Decision {
  bool allow = false;
  std::string rule;    // canonical text of the rule that allowed it; "" if none
  std::string reason;  // why not, for the guest and the audit log; "" when allowed
};

// The ordered set of allow rules of one sandbox (no duplicates). Everything else is denied.
class Policy {
 public:
  // No rule: nothing is allowed.
  Policy() = default;
  // The given rules, duplicates (by canonical text) dropped, in order.
  explicit Policy(std::vector<Rule> rules);
  // The rules, in the order they were added.
  const std::vector<Rule>& rules() const { return rules_; }
  // True when there is no rule: the sandbox has no network.
  bool empty() const { return rules_.empty(); }
  // Adds the rules not already present (by canonical text); returns how many were new.
  size_t allow(const std::vector<Rule>& rules);
  // Removes the rules equal (canonically) to the given ones; returns how many were removed.
  size_t deny(const std::vector<Rule>& rules);
  // Before resolving: may a request for `host` (name or literal, as sent) and `port` go on to
  // resolution? A literal is decided fully here, by check(); a name goes on only when a name or
  // wildcard rule matches it and the port (never for an address rule alone: the name would
  // reach the host's resolver, a channel out through DNS).
  Decision precheck(std::string_view host, uint16_t port) const;
  // After resolving: may the broker connect to `addr`:`port` for a request of `host`? A literal
  // needs an address rule covering addr. A name needs a name rule as in precheck; then an
  // address rule covering addr decides, else the name rule admits only an addr that
  // `classify_addr` calls Public (the broker's also refuses the host's own addresses). What
  // `classify_addr` throws passes through.
  Decision check(std::string_view host, const IpAddress& addr, uint16_t port,
                 const AddressClassifier& classify_addr = classify) const;

 private:
  // The refusal of the name `host` (normalised) no name rule allows on `port`; when an address
  // rule allows the port, the reason says names are not resolved for it and how to get through.
  Decision refused_name(const std::string& host, uint16_t port) const;

  std::vector<Rule> rules_;
};

// The canonical texts of the policy's rules, in order.
std::vector<std::string> to_texts(const Policy& p);
// The policy of the rule texts `texts`; throws like parse_rule.
Policy policy_from_texts(const std::vector<std::string>& texts);

}  // namespace space::egress

// Unit tests for egress/policy: every rule form and its canonical text, each rejection, wildcard
// and port matching, the address classes (IPv4, IPv6 and IPv4-mapped), and the broker's two
// questions: precheck before resolving (only a name rule lets a name through to the resolver)
// and check of every resolved address (a name rule never admits a loopback, private, link-local
// or metadata address; an address rule does).
#include <doctest/doctest.h>
#include <sys/un.h>

#include <cerrno>
#include <string>
#include <vector>

#include "egress/policy.h"
#include "support/ip_address.h"
#include "util/error.h"

using namespace space;
using namespace space::egress;

namespace {

using test::ip;

// The message of the Error parse_rule throws for `text` ("" if it parses), checking the hint.
std::string rule_error(const std::string& text) {
  try {
    parse_rule(text);
  } catch (const Error& e) {
    CHECK(e.hint().find("*.example.com:443") != std::string::npos);
    return e.what();
  }
  return "";
}

std::string rules_error(const std::string& text) {
  try {
    parse_rules(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Policy policy(const char* rules) {
  return Policy(parse_rules(rules));
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_SUITE("egress/policy") {
  TEST_CASE("IpAddress parses, prints, compares and converts both families") {
    CHECK(ip("127.0.0.2").family() == AF_INET);
    CHECK(ip("127.0.0.2").to_string() == "127.0.0.2");
    CHECK(ip("FD00:0:0::1").family() == AF_INET6);
    CHECK(ip("FD00:0:0::1").to_string() == "fd00::1");
    CHECK(ip("::ffff:10.0.0.1").to_string() == "::ffff:10.0.0.1");
    for (const char* bad : {"", "1.2.3", "256.0.0.1", "1.2.3.4.5", " 1.2.3.4", "1.2.3.4:80",
                            "[::1]", "::1%lo", "fe80::1::2", "pypi.org", "0x7f.0.0.1"})
      CHECK_MESSAGE(!IpAddress::parse(bad), bad);
    CHECK_FALSE(IpAddress::parse(std::string_view("1.2.3.4\0junk", 12)));

    CHECK(ip("10.0.0.1") == ip("10.0.0.1"));
    CHECK(ip("10.0.0.1") < ip("10.0.0.2"));
    CHECK(ip("::ffff:10.0.0.1") != ip("10.0.0.1"));  // equal only after unmapped()
    CHECK(ip("::ffff:10.0.0.1").is_v4_mapped());
    CHECK(ip("::ffff:10.0.0.1").unmapped() == ip("10.0.0.1"));
    CHECK(ip("::1").unmapped() == ip("::1"));
    CHECK_FALSE(ip("10.0.0.1").is_v4_mapped());

    sockaddr_storage ss{};
    REQUIRE(ip("192.0.2.7").to_sockaddr(8080, ss) == sizeof(sockaddr_in));
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    CHECK(sin->sin_family == AF_INET);
    CHECK(ntohs(sin->sin_port) == 8080);
    CHECK(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss)) == ip("192.0.2.7"));
    REQUIRE(ip("2001:db8::5").to_sockaddr(443, ss) == sizeof(sockaddr_in6));
    CHECK(ss.ss_family == AF_INET6);
    CHECK(ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port) == 443);
    CHECK(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss)) == ip("2001:db8::5"));
    // A mapped address connects as its IPv4 address.
    REQUIRE(ip("::ffff:192.0.2.7").to_sockaddr(80, ss) == sizeof(sockaddr_in));
    CHECK(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss)) == ip("192.0.2.7"));
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    CHECK_FALSE(IpAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&un)));
    CHECK_FALSE(IpAddress::from_sockaddr(nullptr));
    CHECK(IpAddress::from_bytes(AF_INET, ip("1.2.3.4").bytes()) == ip("1.2.3.4"));
  }

  TEST_CASE("every rule form parses to its canonical text, and the text parses back") {
    struct Case {
      const char* text;
      const char* canonical;
      RuleKind kind;
    };
    const Case cases[] = {
        {"pypi.org", "pypi.org", RuleKind::Name},
        {"PyPI.Org.", "pypi.org", RuleKind::Name},
        {"pypi.org:443", "pypi.org:443", RuleKind::Name},
        {"my_host-1.internal:00080", "my_host-1.internal:80", RuleKind::Name},
        {"localhost", "localhost", RuleKind::Name},
        {"  pypi.org ", "pypi.org", RuleKind::Name},
        {"*.githubusercontent.com", "*.githubusercontent.com", RuleKind::Wildcard},
        {"*.Example.COM.:443", "*.example.com:443", RuleKind::Wildcard},
        {"*", "*", RuleKind::Wildcard},
        {"*:443", "*:443", RuleKind::Wildcard},
        {"127.0.0.2", "127.0.0.2", RuleKind::Network},
        {"127.0.0.2/32", "127.0.0.2", RuleKind::Network},
        {"127.0.0.2:8080", "127.0.0.2:8080", RuleKind::Network},
        {"10.0.0.0/8", "10.0.0.0/8", RuleKind::Network},
        {"10.0.0.0/8:5432", "10.0.0.0/8:5432", RuleKind::Network},
        {"10.1.2.3/8", "10.0.0.0/8", RuleKind::Network},  // host bits masked
        {"192.168.77.200/20", "192.168.64.0/20", RuleKind::Network},
        {"0.0.0.0/0", "0.0.0.0/0", RuleKind::Network},
        {"::1", "::1", RuleKind::Network},
        {"::1/128", "::1", RuleKind::Network},
        {"[::1]", "::1", RuleKind::Network},
        {"[::1]:8080", "[::1]:8080", RuleKind::Network},
        {"FD00::/8", "fd00::/8", RuleKind::Network},
        {"fd12:3456::1/8", "fd00::/8", RuleKind::Network},
        {"[fd00::/8]:5432", "[fd00::/8]:5432", RuleKind::Network},
        {"::/0", "::/0", RuleKind::Network},
        {"2001:db8::/33", "2001:db8::/33", RuleKind::Network},
        // An IPv4-mapped rule is the IPv4 rule.
        {"::ffff:127.0.0.1", "127.0.0.1", RuleKind::Network},
        {"[::ffff:10.0.0.0/104]:53", "10.0.0.0/8:53", RuleKind::Network},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      Rule r = parse_rule(c.text);
      CHECK(r.kind == c.kind);
      CHECK(canonical(r) == c.canonical);
      CHECK(parse_rule(canonical(r)) == r);
    }
    Rule r = parse_rule("10.9.8.7/16:5432");
    CHECK(r.network == ip("10.9.0.0"));
    CHECK(r.prefix == 16);
    CHECK(r.port == 5432);
    CHECK(parse_rule("pypi.org").port == 0);
    CHECK(parse_rule("*.example.com").name == "example.com");
    CHECK(parse_rule("*").name == "");
  }

  TEST_CASE("malformed rules are refused with the reason and the accepted forms") {
    std::string long_label(64, 'a');
    std::string long_name;
    for (int i = 0; i < 4; i++) long_name += std::string(63, 'a') + ".";
    long_name += "com";  // 4 * 64 + 3 = 259 characters
    std::string max_name = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                           std::string(63, 'c') + "." + std::string(61, 'd');  // 253
    CHECK(rule_error(max_name) == "");
    CHECK(rule_error(max_name + ".") == "");
    CHECK(rule_error(std::string(63, 'a') + ".com") == "");

    struct Case {
      std::string text;
      const char* why;
    };
    const Case cases[] = {
        {"pypi.org:0", "port must be a number from 1 to 65535"},
        {"pypi.org:65536", "port must be"},
        {"pypi.org:abc", "port must be"},
        {"pypi.org:", "port must be"},
        {"pypi.org:-1", "port must be"},
        {"pypi.org:+80", "port must be"},
        {"10.0.0.0/33", "prefix length must be a number from 0 to 32"},
        {"fd00::/129", "prefix length must be a number from 0 to 128"},
        {"10.0.0.0/", "prefix length"},
        {"10.0.0.0/x", "prefix length"},
        {"10.0.0.0/-1", "prefix length"},
        {"fd00::/8:5432", "needs brackets, as in [fd00::/8]:5432"},
        {"pypi..org", "empty label"},
        {".pypi.org", "empty label"},
        {"pypi.org..", "empty label"},
        {".", "empty host name"},
        {long_label + ".com", "label longer than 63"},
        {long_name, "longer than 253"},
        {max_name + "e", "longer than 253"},
        {"*.", "needs a domain after it"},
        {"*..", "needs a domain after it"},
        {"a.*.b", "'*' may only be the whole first label"},
        {"**", "'*' may only be"},
        {"*com", "'*' may only be"},
        {"*.*.com", "'*' may only be"},
        {"pypi.org*", "'*' may only be"},
        {"[::1", "'[' without ']'"},
        {"::1]", "stray '[' or ']'"},
        {"[::1]8080", "']' must be followed by :PORT"},
        {"[[::1]]:80", "stray"},
        {"a[b].com", "stray"},
        {"[10.0.0.1]:80", "brackets are only for IPv6"},
        {"[pypi.org]:443", "not a valid IP address"},
        {"[]:443", "no host before the port"},
        {":443", "no host before the port"},
        {"pypi org", "invalid character"},
        {"py/pi.org", "not a valid IP address"},
        {"1.2.3", "not a valid IPv4 address"},
        {"256.1.1.1", "not a valid IPv4 address"},
        {"1.2.3.4.5", "not a valid IPv4 address"},
        {"2130706433", "not a valid IPv4 address"},
        {"0x7f.1", "not a valid IPv4 address"},
        {"fe80::1::2", "not a valid IP address"},
        {"", "empty rule"},
        {"   ", "empty rule"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      std::string e = rule_error(c.text);
      CHECK(e.starts_with("network rule \"" + c.text + "\": "));
      CHECK_MESSAGE(contains(e, c.why), e);
    }
  }

  TEST_CASE("parse_rules splits on commas, drops exact duplicates and refuses empty items") {
    auto rules =
        parse_rules("pypi.org, *.github.com:443,PYPI.org.,10.1.0.0/8,10.0.0.0/8,pypi.org:443");
    std::vector<std::string> texts;
    for (const auto& r : rules) texts.push_back(canonical(r));
    CHECK(texts ==
          std::vector<std::string>{"pypi.org", "*.github.com:443", "10.0.0.0/8", "pypi.org:443"});
    CHECK(parse_rules("*").size() == 1);
    for (const char* bad : {"", ",", "a.com,", ",a.com", "a.com,,b.com", "a.com, ,b.com"}) {
      CAPTURE(bad);
      CHECK(contains(rules_error(bad), "an empty rule"));
    }
    CHECK(contains(rules_error("a.com,b..com"), "network rule \"b..com\": empty label"));
  }

  TEST_CASE("a wildcard matches names below its domain, never the domain itself") {
    Rule w = parse_rule("*.githubusercontent.com");
    CHECK(matches_name(w, "a.githubusercontent.com", 443));
    CHECK(matches_name(w, "x.y.githubusercontent.com", 1));
    CHECK_FALSE(matches_name(w, "githubusercontent.com", 443));
    CHECK_FALSE(matches_name(w, "evilgithubusercontent.com", 443));
    CHECK_FALSE(matches_name(w, "githubusercontent.com.evil.org", 443));
    CHECK_FALSE(matches_name(w, "a.githubusercontent.org", 443));

    Rule wp = parse_rule("*.example.com:443");
    CHECK(matches_name(wp, "api.example.com", 443));
    CHECK_FALSE(matches_name(wp, "api.example.com", 80));

    Rule any = parse_rule("*");
    CHECK(matches_name(any, "anything.at.all", 22));
    CHECK(matches_name(any, "localhost", 80));
    Rule any443 = parse_rule("*:443");
    CHECK(matches_name(any443, "pypi.org", 443));
    CHECK_FALSE(matches_name(any443, "pypi.org", 80));

    Rule name = parse_rule("pypi.org");
    CHECK(matches_name(name, "pypi.org", 443));
    CHECK_FALSE(matches_name(name, "www.pypi.org", 443));
    CHECK_FALSE(matches_name(name, "pypi.org.evil", 443));
    CHECK_FALSE(matches_name(parse_rule("10.0.0.0/8"), "pypi.org", 443));

    // Through a policy, the guest's host is normalised first: case and one trailing dot.
    Policy p = policy("*.githubusercontent.com");
    CHECK(p.check("Raw.GitHubUserContent.COM.", ip("185.199.108.133"), 443).allow);
    CHECK(p.check("raw.githubusercontent.com", ip("185.199.108.133"), 443).rule ==
          "*.githubusercontent.com");
    CHECK_FALSE(p.check("githubusercontent.com", ip("185.199.108.133"), 443).allow);
    CHECK_FALSE(p.precheck("GitHubUserContent.com.", 443).allow);
    CHECK_FALSE(p.precheck("raw.githubusercontent.com..", 443).allow);
  }

  TEST_CASE("normalize_host accepts names and address literals and refuses junk") {
    CHECK(normalize_host("PyPI.org.") == "pypi.org");
    CHECK(normalize_host("pypi.org") == "pypi.org");
    CHECK(normalize_host("127.0.0.1") == "127.0.0.1");
    CHECK(normalize_host("::1") == "::1");
    CHECK(normalize_host("[::1]") == "::1");
    CHECK(normalize_host("[FD00:0::1]") == "fd00::1");
    CHECK(normalize_host("::FFFF:127.0.0.1") == "::ffff:127.0.0.1");
    for (const char* bad :
         {"", ".", "pypi..org", "*.pypi.org", "*", "pypi.org:443", "[::1", "[127.0.0.1]",
          "[pypi.org]", "a b", "1.2.3", "0x7f.1", "2130706433", "127.1", "::1]"})
      CHECK_MESSAGE(!normalize_host(bad), bad);
    CHECK_FALSE(normalize_host(std::string_view("pypi.org\0.evil", 14)));
    CHECK_FALSE(normalize_host(std::string(254, 'a')));
  }

  TEST_CASE("addresses are classified, IPv4-mapped ones as their IPv4 address") {
    struct Case {
      const char* addr;
      AddressClass cls;
    };
    using C = AddressClass;
    const Case cases[] = {
        {"8.8.8.8", C::Public},
        {"1.1.1.1", C::Public},
        {"2606:4700::1111", C::Public},
        {"2a00:1450:4001::200e", C::Public},
        {"127.0.0.1", C::Loopback},
        {"127.255.255.254", C::Loopback},
        {"::1", C::Loopback},
        {"10.0.0.1", C::Private},
        {"172.16.0.1", C::Private},
        {"172.31.255.255", C::Private},
        {"192.168.1.1", C::Private},
        {"fc00::1", C::Private},
        {"fd12:3456::1", C::Private},
        {"169.254.0.1", C::LinkLocal},
        {"fe80::1", C::LinkLocal},
        {"febf::1", C::LinkLocal},
        {"169.254.169.254", C::Metadata},
        {"fd00:ec2::254", C::Metadata},
        {"168.63.129.16", C::Metadata},  // Azure's wire server
        {"fec0::1", C::Private},         // site-local (deprecated)
        {"feff:ffff::1", C::Private},
        {"100.64.0.1", C::SharedCgnat},
        {"100.127.255.255", C::SharedCgnat},
        {"0.0.0.0", C::Unspecified},
        {"0.1.2.3", C::Unspecified},
        {"::", C::Unspecified},
        {"224.0.0.1", C::Multicast},
        {"239.255.255.250", C::Multicast},
        {"ff02::1", C::Multicast},
        {"240.0.0.1", C::Reserved},
        {"255.255.255.255", C::Reserved},
        {"192.0.0.8", C::Reserved},
        {"192.0.2.1", C::Reserved},
        {"198.18.0.1", C::Reserved},
        {"198.19.255.255", C::Reserved},
        {"198.51.100.1", C::Reserved},
        {"203.0.113.1", C::Reserved},
        {"2001:db8::1", C::Reserved},
        {"64:ff9b::7f00:1", C::Reserved},
        {"2002:7f00:1::1", C::Reserved},
        {"::7f00:1", C::Reserved},  // IPv4-compatible (deprecated)
        {"2001::1", C::Reserved},   // Teredo
        {"2001:0:4136:e378:8000:63bf:3fff:fdd2", C::Reserved},
        {"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", C::Reserved},
        // Just outside the ranges.
        {"172.32.0.1", C::Public},
        {"172.15.255.255", C::Public},
        {"100.128.0.1", C::Public},
        {"100.63.255.255", C::Public},
        {"198.20.0.1", C::Public},
        {"192.0.3.1", C::Public},
        {"223.255.255.255", C::Public},
        {"fe00::1", C::Public},
        {"fbff:ffff::1", C::Public},
        {"2001:db9::1", C::Public},
        {"2001:1::1", C::Public},
        {"2001:4860:4860::8888", C::Public},
        {"168.63.129.15", C::Public},
        {"168.63.129.17", C::Public},
        {"::2:0:0:1", C::Public},
        // IPv4-mapped.
        {"::ffff:127.0.0.1", C::Loopback},
        {"::ffff:10.1.2.3", C::Private},
        {"::ffff:169.254.169.254", C::Metadata},
        {"::ffff:168.63.129.16", C::Metadata},
        {"::ffff:0.0.0.0", C::Unspecified},
        {"::ffff:8.8.8.8", C::Public},
    };
    for (const auto& c : cases) {
      CAPTURE(c.addr);
      CHECK(classify(ip(c.addr)) == c.cls);
    }
    CHECK(std::string(describe(C::Loopback)) == "a loopback address");
    CHECK(std::string(describe(C::Private)) == "a private address");
    CHECK(std::string(describe(C::Metadata)) == "a cloud metadata address");
    CHECK(std::string(describe(C::HostOwn)) == "one of this host's own addresses");
    for (C c : {C::Public, C::Loopback, C::Private, C::LinkLocal, C::Metadata, C::SharedCgnat,
                C::Unspecified, C::Multicast, C::Reserved, C::HostOwn})
      CHECK(contains(describe(c), " address"));
  }

  TEST_CASE("address rules cover their network and port, mapped addresses as IPv4") {
    Rule net = parse_rule("10.0.0.0/8:5432");
    CHECK(covers(net, ip("10.200.1.1"), 5432));
    CHECK(covers(net, ip("::ffff:10.200.1.1"), 5432));
    CHECK_FALSE(covers(net, ip("11.0.0.1"), 5432));
    CHECK_FALSE(covers(net, ip("10.0.0.1"), 5433));
    Rule one = parse_rule("127.0.0.2");
    CHECK(covers(one, ip("127.0.0.2"), 1));
    CHECK(covers(one, ip("127.0.0.2"), 65535));
    CHECK_FALSE(covers(one, ip("127.0.0.1"), 80));
    CHECK(covers(parse_rule("0.0.0.0/0"), ip("203.0.113.9"), 80));
    Rule v6 = parse_rule("[fd00::/8]:5432");
    CHECK(covers(v6, ip("fd12::1"), 5432));
    CHECK_FALSE(covers(v6, ip("fc00::1"), 5432));
    CHECK_FALSE(covers(v6, ip("fd12::1"), 80));
    // Families never mix: ::/0 is every IPv6 address, not every IPv4 one.
    CHECK(covers(parse_rule("::/0"), ip("2606:4700::1111"), 80));
    CHECK_FALSE(covers(parse_rule("::/0"), ip("127.0.0.1"), 80));
    CHECK_FALSE(covers(parse_rule("::/0"), ip("::ffff:127.0.0.1"), 80));
    CHECK_FALSE(covers(parse_rule("0.0.0.0/0"), ip("::1"), 80));
    CHECK(covers(parse_rule("::ffff:127.0.0.1"), ip("127.0.0.1"), 80));
    CHECK_FALSE(covers(parse_rule("pypi.org"), ip("127.0.0.1"), 80));
  }

  TEST_CASE("an address literal is decided by address rules alone") {
    Policy p = policy("127.0.0.2:8080,10.0.0.0/8,[::1]:9000,pypi.org,*");
    Decision d = p.precheck("127.0.0.2", 8080);
    CHECK(d.allow);
    CHECK(d.rule == "127.0.0.2:8080");
    CHECK(d.reason == "");
    CHECK(p.check("127.0.0.2", ip("127.0.0.2"), 8080).rule == "127.0.0.2:8080");
    CHECK(p.precheck("10.9.9.9", 22).rule == "10.0.0.0/8");
    CHECK(p.precheck("::ffff:10.9.9.9", 22).rule == "10.0.0.0/8");
    CHECK(p.precheck("[::1]", 9000).rule == "[::1]:9000");
    CHECK(p.precheck("::1", 9000).allow);

    d = p.precheck("127.0.0.2", 8081);
    CHECK_FALSE(d.allow);
    CHECK(d.rule == "");
    CHECK(d.reason == "no rule allows 127.0.0.2:8081");
    // "*" is every name, not every address: a public literal needs an address rule too.
    CHECK(p.precheck("8.8.8.8", 53).reason == "no rule allows 8.8.8.8:53");
    CHECK(p.precheck("[::1]", 9001).reason == "no rule allows [::1]:9001");
    CHECK(p.check("::1", ip("::1"), 9001).reason == "no rule allows [::1]:9001");
    CHECK(p.precheck("::ffff:127.0.0.2", 8081).reason == "no rule allows [::ffff:127.0.0.2]:8081");
    CHECK(p.precheck("127.0.0.2", 0).reason == "port 0 is not a valid port");
  }

  TEST_CASE("a name rule admits public addresses only, unless an address rule covers one") {
    Policy p = policy("pypi.org:443");
    Decision d = p.precheck("PyPI.org", 443);
    CHECK(d.allow);
    CHECK(d.rule == "pypi.org:443");
    d = p.check("pypi.org", ip("151.101.0.223"), 443);
    CHECK(d.allow);
    CHECK(d.rule == "pypi.org:443");
    CHECK(d.reason == "");
    CHECK(p.check("pypi.org", ip("2a04:4e42::223"), 443).allow);

    d = p.check("pypi.org", ip("127.0.0.1"), 443);
    CHECK_FALSE(d.allow);
    CHECK(d.rule == "");
    CHECK(d.reason ==
          "pypi.org resolves to 127.0.0.1, a loopback address; a name rule never admits it (add "
          "an address rule such as 127.0.0.1:443)");
    CHECK(contains(p.check("pypi.org", ip("10.1.2.3"), 443).reason,
                   "resolves to 10.1.2.3, a private address;"));
    CHECK(contains(p.check("pypi.org", ip("169.254.169.254"), 443).reason,
                   "resolves to 169.254.169.254, a cloud metadata address;"));
    CHECK(contains(p.check("pypi.org", ip("168.63.129.16"), 443).reason,
                   "resolves to 168.63.129.16, a cloud metadata address; a name rule never "
                   "admits it (add an address rule such as 168.63.129.16:443)"));
    CHECK(contains(p.check("pypi.org", ip("fec0::1"), 443).reason,
                   "resolves to fec0::1, a private address;"));
    CHECK(contains(p.check("pypi.org", ip("2001::a00:1"), 443).reason,
                   "resolves to 2001::a00:1, a reserved address;"));
    CHECK(contains(p.check("pypi.org", ip("::1"), 443).reason,
                   "resolves to ::1, a loopback address; a name rule never admits it (add an "
                   "address rule such as [::1]:443)"));
    CHECK(contains(p.check("pypi.org", ip("::ffff:127.0.0.1"), 443).reason,
                   "resolves to ::ffff:127.0.0.1, a loopback address; a name rule never admits "
                   "it (add an address rule such as 127.0.0.1:443)"));
    for (const char* a : {"0.0.0.0", "100.64.0.1", "224.0.0.1", "192.0.2.1", "fe80::1",
                          "fd00:ec2::254", "64:ff9b::a00:1", "::"})
      CHECK_MESSAGE(!p.check("pypi.org", ip(a), 443).allow, a);

    // An address rule admits what a name resolves to; the decision names that rule.
    Policy q = policy("pypi.org:443,127.0.0.0/8,[::1]:443");
    d = q.check("pypi.org", ip("127.0.0.1"), 443);
    CHECK(d.allow);
    CHECK(d.rule == "127.0.0.0/8");
    CHECK(q.check("pypi.org", ip("::ffff:127.0.0.1"), 443).rule == "127.0.0.0/8");
    CHECK(q.check("pypi.org", ip("::1"), 443).rule == "[::1]:443");
    CHECK_FALSE(q.check("pypi.org", ip("10.0.0.1"), 443).allow);
    // ... but only for a name a name rule allows: an address rule alone admits no name.
    d = q.check("db.internal", ip("127.0.0.5"), 22);
    CHECK_FALSE(d.allow);
    CHECK(contains(d.reason, "no name rule allows db.internal:22"));
    CHECK_FALSE(q.check("pypi.org", ip("127.0.0.1"), 80).allow);  // pypi.org's rule is for 443
  }

  TEST_CASE("ports must match, and precheck stops names nothing could admit") {
    Policy p = policy("pypi.org:443,*.example.com");
    CHECK_FALSE(p.precheck("pypi.org", 80).allow);
    CHECK(p.precheck("pypi.org", 80).reason == "no rule allows pypi.org:80");
    CHECK(p.check("pypi.org", ip("151.101.0.223"), 80).reason == "no rule allows pypi.org:80");
    CHECK(p.precheck("a.example.com", 8443).rule == "*.example.com");
    CHECK(p.precheck("Other.Org.", 443).reason == "no rule allows other.org:443");
    CHECK(p.precheck("bad..name", 443).reason == "invalid host name \"bad..name\"");
    CHECK(p.precheck("pypi.org", 0).reason == "port 0 is not a valid port");

    // An address rule for the port lets no name through to the resolver (DNS exfiltration):
    // the refusal says why and names the two ways through.
    Policy q = policy("10.0.0.0/8:5432");
    Decision d = q.precheck("db.corp", 5432);
    CHECK_FALSE(d.allow);
    CHECK(d.rule == "");
    CHECK(d.reason ==
          "no name rule allows db.corp:5432, and a name is resolved only for a name rule "
          "(10.0.0.0/8:5432 is an address rule): add a name rule such as db.corp:5432, or "
          "connect by address");
    CHECK(contains(q.precheck("c2VjcmV0.attacker.example", 5432).reason, "no name rule allows"));
    CHECK(q.check("db.corp", ip("10.3.3.3"), 5432).reason == d.reason);
    CHECK(q.precheck("db.corp", 5433).reason == "no rule allows db.corp:5433");
    CHECK(q.precheck("10.3.3.3", 5432).rule == "10.0.0.0/8:5432");  // by address: allowed
    // With a name rule beside it, that name is resolved and its private address admitted.
    Policy r = policy("10.0.0.0/8:5432,db.corp:5432");
    CHECK(r.precheck("db.corp", 5432).rule == "db.corp:5432");
    CHECK(r.check("db.corp", ip("10.3.3.3"), 5432).rule == "10.0.0.0/8:5432");
    CHECK(r.check("db.corp", ip("8.8.8.8"), 5432).rule == "db.corp:5432");
    CHECK_FALSE(r.precheck("other.corp", 5432).allow);

    Policy none;
    CHECK(none.empty());
    CHECK(none.precheck("pypi.org", 443).reason == "no rule allows pypi.org:443");
    CHECK_FALSE(none.check("pypi.org", ip("151.101.0.223"), 443).allow);
  }

  TEST_CASE("a lone * admits every name to public addresses, optionally on one port") {
    Policy p = policy("*");
    CHECK(p.precheck("anything.example", 22).rule == "*");
    CHECK(p.check("anything.example", ip("93.184.216.34"), 22).allow);
    CHECK_FALSE(p.check("localhost", ip("127.0.0.1"), 80).allow);
    CHECK_FALSE(p.check("metadata.google.internal", ip("169.254.169.254"), 80).allow);
    // Public-looking addresses that are not: Azure's wire server, IPv6 site-local, Teredo.
    for (const char* a : {"168.63.129.16", "::ffff:168.63.129.16", "fec0::1", "fef0::53", "2001::1",
                          "2001:0:4136:e378:8000:63bf:3fff:fdd2"}) {
      CAPTURE(a);
      Decision d = p.check("wire.example", ip(a), 80);
      CHECK_FALSE(d.allow);
      CHECK(contains(d.reason, "; a name rule never admits it (add an address rule such as "));
    }
    // An address rule naming one still admits it, as for every other non-public address.
    Policy wire = policy("*,168.63.129.16:80,[2001::/32]:443");
    CHECK(wire.check("wire.example", ip("168.63.129.16"), 80).rule == "168.63.129.16:80");
    CHECK(wire.check("t.example", ip("2001:0:4136:e378:8000:63bf:3fff:fdd2"), 443).rule ==
          "[2001::/32]:443");
    CHECK_FALSE(wire.check("wire.example", ip("168.63.129.16"), 443).allow);
    CHECK_FALSE(p.precheck("93.184.216.34", 80).allow);

    Policy q = policy("*:443");
    CHECK(q.check("pypi.org", ip("151.101.0.223"), 443).rule == "*:443");
    CHECK_FALSE(q.precheck("pypi.org", 80).allow);
  }

  TEST_CASE("check asks its classifier: the host's own addresses need an address rule") {
    int asked = 0;
    AddressClassifier ours = [&](const IpAddress& a) {
      asked++;
      return a == ip("93.184.216.34") ? AddressClass::HostOwn : classify(a);
    };
    Policy p = policy("*");
    Decision d = p.check("own.example", ip("93.184.216.34"), 443, ours);
    CHECK_FALSE(d.allow);
    CHECK(d.reason ==
          "own.example resolves to 93.184.216.34, one of this host's own addresses; a name rule "
          "never admits it (add an address rule such as 93.184.216.34:443)");
    CHECK(p.check("other.example", ip("93.184.216.35"), 443, ours).rule == "*");
    CHECK(asked == 2);
    CHECK(p.check("own.example", ip("93.184.216.34"), 443).allow);  // classify() cannot know
    // An address rule decides before the classifier is asked; a literal never asks it.
    Policy q = policy("*,93.184.216.34:443");
    CHECK(q.check("own.example", ip("93.184.216.34"), 443, ours).rule == "93.184.216.34:443");
    CHECK(q.check("93.184.216.34", ip("93.184.216.34"), 443, ours).rule == "93.184.216.34:443");
    CHECK_FALSE(q.check("own.example", ip("93.184.216.34"), 80, ours).allow);
    CHECK(asked == 3);
    // What the classifier throws (it could not tell) reaches the caller, which refuses.
    AddressClassifier broken = [](const IpAddress&) -> AddressClass {
      throw Error("the route to 93.184.216.34: netlink socket: Too many open files", EMFILE);
    };
    CHECK_THROWS_AS(p.check("own.example", ip("93.184.216.34"), 443, broken), Error);
  }

  TEST_CASE("allow adds only new rules and deny removes equal ones") {
    Policy p = policy("pypi.org,10.0.0.0/8");
    CHECK_FALSE(p.empty());
    CHECK(p.allow(parse_rules("PYPI.org.,10.1.1.1/8,*.github.com,*.github.com")) == 1);
    CHECK(to_texts(p) == std::vector<std::string>{"pypi.org", "10.0.0.0/8", "*.github.com"});
    CHECK(p.allow(parse_rules("pypi.org:443")) == 1);  // another port is another rule
    CHECK(p.deny(parse_rules("10.0.0.0/8,nothere.org")) == 1);
    CHECK(to_texts(p) == std::vector<std::string>{"pypi.org", "*.github.com", "pypi.org:443"});
    CHECK(p.deny(parse_rules("10.0.0.0/8")) == 0);
    CHECK(p.deny(parse_rules("pypi.org")) == 1);
    CHECK(p.check("pypi.org", ip("151.101.0.223"), 443).allow);
    CHECK_FALSE(p.check("pypi.org", ip("151.101.0.223"), 80).allow);
    CHECK(p.deny(p.rules()) == 2);
    CHECK(p.empty());

    Policy dup(std::vector<Rule>{parse_rule("a.com"), parse_rule("b.com"), parse_rule("A.com")});
    CHECK(to_texts(dup) == std::vector<std::string>{"a.com", "b.com"});
  }

  TEST_CASE("a policy round-trips through its canonical texts") {
    Policy p = policy("PyPI.org:443,*.Example.com,*,10.1.2.3/8:5432,[FD00::1/8]:53,::1,127.0.0.2");
    std::vector<std::string> texts = to_texts(p);
    CHECK(texts == std::vector<std::string>{"pypi.org:443", "*.example.com", "*", "10.0.0.0/8:5432",
                                            "[fd00::/8]:53", "::1", "127.0.0.2"});
    Policy back = policy_from_texts(texts);
    CHECK(back.rules() == p.rules());
    CHECK(policy_from_texts({}).empty());
    CHECK_THROWS_AS(policy_from_texts({"pypi.org", "bad..name"}), Error);
  }
}

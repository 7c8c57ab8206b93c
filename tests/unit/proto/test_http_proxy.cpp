// The guest proxy's request parser (src/proto/http_proxy.h): incremental feeding (NeedMore on
// every proper prefix, the same verdict once complete, `consumed` before the body), CONNECT and
// absolute-URI targets and their hosts and ports, the schemes and forms refused, the rewritten
// head (hop-by-hop and proxy headers dropped, Host from the URI, Connection: close, the client's
// version), the limits (431, 414, header count), strict syntax (control characters, obs-fold,
// whitespace before a colon), and the error responses' format.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "proto/http_proxy.h"

using namespace space::proto;
using Status = ProxyParse::Status;

namespace {

ProxyRequest ok(std::string_view in) {
  ProxyParse p = parse_proxy_request(in);
  INFO("input: ", in, " reason: ", p.reason);
  REQUIRE(p.status == Status::Ok);
  return p.request;
}

int refused(std::string_view in) {
  ProxyParse p = parse_proxy_request(in);
  INFO("input: ", in);
  REQUIRE(p.status == Status::Bad);
  CHECK(!p.reason.empty());
  return p.http_status;
}

// Every proper prefix of `in` (of a complete head) is NeedMore.
void check_prefixes_need_more(std::string_view in) {
  for (size_t n = 0; n < in.size(); n++) {
    ProxyParse p = parse_proxy_request(in.substr(0, n));
    INFO("prefix length ", n, " of: ", in, " reason: ", p.reason);
    CHECK(p.status == Status::NeedMore);
  }
}

// The header lines of a rewritten head, without the request line and the blank line.
std::string header_lines(const std::string& head) {
  size_t start = head.find("\r\n") + 2;
  REQUIRE(head.size() >= start + 2);
  REQUIRE(head.substr(head.size() - 4) == "\r\n\r\n");
  return head.substr(start, head.size() - 2 - start);
}

}  // namespace

TEST_SUITE("proto/http_proxy") {
  TEST_CASE(
      "a head fed byte by byte is NeedMore until its blank line; body bytes are not consumed") {
    std::string head =
        "POST http://example.com/upload?x=1 HTTP/1.1\r\nHost: example.com\r\n"
        "Content-Length: 11\r\n\r\n";
    std::string in = head + "hello world";
    check_prefixes_need_more(head);
    for (size_t n = head.size(); n <= in.size(); n++) {
      ProxyRequest r = ok(std::string_view(in).substr(0, n));
      CHECK(r.consumed == head.size());
      CHECK(r.method == "POST");
      CHECK(r.host == "example.com");
      CHECK(r.port == 80);
      CHECK(r.head ==
            "POST /upload?x=1 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\n"
            "Connection: close\r\n\r\n");
    }

    std::string tunnel = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
    check_prefixes_need_more(tunnel);
    ProxyRequest r = ok(tunnel + "\x16\x03\x01 TLS bytes");
    CHECK(r.consumed == tunnel.size());
    CHECK(r.connect);
    CHECK(r.head.empty());
  }

  TEST_CASE("bare LF line ends, mixed ones, and a few leading empty lines are accepted") {
    std::string in = "GET http://a.test/ HTTP/1.1\nAccept: */*\r\nX-A: 1\n\nBODY";
    check_prefixes_need_more(in.substr(0, in.size() - 4));
    ProxyRequest r = ok(in);
    CHECK(r.consumed == in.size() - 4);
    CHECK(r.head ==
          "GET / HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nX-A: 1\r\n"
          "Connection: close\r\n\r\n");

    std::string lead = "\r\n\n\r\nCONNECT h:1 HTTP/1.1\r\n\r\n";
    check_prefixes_need_more(lead);
    r = ok(lead);
    CHECK(r.consumed == lead.size());
    CHECK(r.host == "h");
    CHECK(r.port == 1);

    std::string many;
    for (int i = 0; i < 9; i++) many += "\r\n";
    CHECK(parse_proxy_request(many).status == Status::Bad);
    CHECK(refused(many + "CONNECT h:1 HTTP/1.1\r\n\r\n") == 400);
    CHECK(parse_proxy_request(many.substr(0, 16)).status == Status::NeedMore);
  }

  TEST_CASE("CONNECT takes host:port with a name, an IPv4 literal or a bracketed IPv6 literal") {
    ProxyRequest r = ok("CONNECT Example.COM:443 HTTP/1.1\r\n\r\n");
    CHECK(r.connect);
    CHECK(r.method == "CONNECT");
    CHECK(r.host == "Example.COM");  // as given: lower-casing is the broker's
    CHECK(r.port == 443);
    CHECK(r.head.empty());
    CHECK(r.consumed == 36);

    r = ok("CONNECT 10.0.0.1:8443 HTTP/1.0\r\nUser-Agent: x\r\n\r\n");
    CHECK(r.host == "10.0.0.1");
    CHECK(r.port == 8443);
    r = ok("CONNECT [2001:db8::1]:65535 HTTP/1.1\r\n\r\n");
    CHECK(r.host == "2001:db8::1");
    CHECK(r.port == 65535);
    r = ok("CONNECT [::ffff:127.0.0.1]:22 HTTP/1.1\r\n\r\n");
    CHECK(r.host == "::ffff:127.0.0.1");
    r = ok("CONNECT my_host-1.internal.:0022 HTTP/1.1\r\n\r\n");
    CHECK(r.host == "my_host-1.internal.");
    CHECK(r.port == 22);
  }

  TEST_CASE("CONNECT without a port, with port 0 or 65536, or with a junk host is 400") {
    const char* const targets[] = {"example.com",
                                   "example.com:",
                                   "example.com:0",
                                   "example.com:65536",
                                   "example.com:99999999999",
                                   "example.com:-1",
                                   "example.com:44 3",
                                   "example.com:443x",
                                   ":443",
                                   "[::1]",
                                   "[::1]443",
                                   "[::1",
                                   "[::g]:443",
                                   "[fe80::1%25eth0]:443",
                                   "::1:443",
                                   "2001:db8::1:443",
                                   "exa mple.com:443",
                                   "ex@mple.com:443",
                                   "user@example.com:443",
                                   "a..b:443",
                                   ".a:443",
                                   "http://example.com:443",
                                   "example.com:443/",
                                   "*:443",
                                   "1.2.3:443",
                                   "127.1:443",
                                   "0x7f000001:443",
                                   "2130706433:443",
                                   "1.2.3.256:443",
                                   "01.2.3.4:443",
                                   "a.0x1:443"};
    for (const char* target : targets) {
      std::string in = std::string("CONNECT ") + target + " HTTP/1.1\r\n\r\n";
      INFO("target: ", target);
      CHECK(refused(in) == 400);
    }
    std::string label(63, 'a');
    CHECK(ok("CONNECT " + label + ".x:1 HTTP/1.1\r\n\r\n").host.size() == 65);
    CHECK(refused("CONNECT " + label + "a.x:1 HTTP/1.1\r\n\r\n") == 400);
    std::string name;
    while (name.size() < 253) name += name.empty() ? "a" : ".a";  // 253 characters
    CHECK(ok("CONNECT " + name + ":1 HTTP/1.1\r\n\r\n").host == name);
    CHECK(refused("CONNECT a" + name + ":1 HTTP/1.1\r\n\r\n") == 400);
  }

  TEST_CASE("absolute-URI requests: default port 80, explicit port, path and query kept") {
    ProxyRequest r = ok("GET http://example.com HTTP/1.1\r\n\r\n");
    CHECK(!r.connect);
    CHECK(r.method == "GET");
    CHECK(r.host == "example.com");
    CHECK(r.port == 80);
    CHECK(r.head == "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");

    r = ok("HEAD HTTP://example.com:8080/a/b%20c;p?q=1&r=/x HTTP/1.1\r\n\r\n");
    CHECK(r.port == 8080);
    CHECK(r.method == "HEAD");
    CHECK(r.head ==
          "HEAD /a/b%20c;p?q=1&r=/x HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close"
          "\r\n\r\n");

    r = ok("OPTIONS http://h.test?only=query HTTP/1.1\r\n\r\n");
    CHECK(r.head.rfind("OPTIONS /?only=query HTTP/1.1\r\n", 0) == 0);

    r = ok("DELETE http://[::1]:81/x HTTP/1.1\r\n\r\n");
    CHECK(r.host == "::1");
    CHECK(r.port == 81);
    CHECK(r.head.find("\r\nHost: [::1]:81\r\n") != std::string::npos);

    r = ok("PATCH http://192.168.1.2/ HTTP/1.1\r\n\r\n");
    CHECK(r.host == "192.168.1.2");
    CHECK(r.port == 80);

    r = ok("X-CUSTOM_1! http://h/ HTTP/1.1\r\n\r\n");  // any token is a method
    CHECK(r.method == "X-CUSTOM_1!");
  }

  TEST_CASE("https:// is 501 (it goes through CONNECT); origin-form and other forms are refused") {
    ProxyParse p = parse_proxy_request("GET https://example.com/ HTTP/1.1\r\n\r\n");
    REQUIRE(p.status == Status::Bad);
    CHECK(p.http_status == 501);
    CHECK(p.reason.find("HTTPS goes through CONNECT") != std::string::npos);
    CHECK(refused("GET HtTpS://example.com/ HTTP/1.1\r\n") == 501);  // before the head ends
    CHECK(refused("GET ftp://example.com/ HTTP/1.1\r\n\r\n") == 501);

    p = parse_proxy_request("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n");
    REQUIRE(p.status == Status::Bad);
    CHECK(p.http_status == 400);
    CHECK(p.reason.rfind("this is a proxy", 0) == 0);
    CHECK(refused("OPTIONS * HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET example.com/x HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http:/example.com/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET ://example.com/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET 1http://example.com/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http:// HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http:///x HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n") == 400);
    p = parse_proxy_request("GET http://user@example.com/ HTTP/1.1\r\n\r\n");
    CHECK(p.http_status == 400);
    CHECK(p.reason.find("user information") != std::string::npos);
    CHECK(refused("GET http://example.com/#frag HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://example.com:0/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://example.com:65536/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://example.com:/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://exa%6dple.com/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://127.1/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://example.com/\xc3\xa9 HTTP/1.1\r\n\r\n") == 400);
  }

  TEST_CASE("the request line must be METHOD SP TARGET SP HTTP/1.0 or HTTP/1.1") {
    CHECK(refused("GET http://h/ HTTP/2.0\r\n\r\n") == 505);
    CHECK(refused("GET http://h/ HTTP/0.9\r\n\r\n") == 505);
    CHECK(refused("GET http://h/ HTTP/1.10\r\n\r\n") == 400);
    CHECK(refused("GET http://h/ http/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://h/ HTTP/1.1 \r\n\r\n") == 400);
    CHECK(refused("GET http://h/\r\n\r\n") == 400);
    CHECK(refused("GET  http://h/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused(" GET http://h/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://h/ x HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("G(T http://h/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET\thttp://h/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03") == 400);  // TLS, at once
    CHECK(refused("connect h:1 HTTP/1.1\r\n\r\n") == 400);  // methods are case-sensitive
    CHECK(ok("GET http://h/ HTTP/1.0\r\n\r\n").head.find(" HTTP/1.0\r\n") != std::string::npos);
  }

  TEST_CASE("the rewritten head drops proxy and hop-by-hop headers, and what Connection names") {
    std::string in =
        "GET http://example.com:8080/p?q HTTP/1.1\r\n"
        "Host: evil.example\r\n"
        "User-Agent: curl/8.0\r\n"
        "Proxy-Connection: keep-alive\r\n"
        "proxy-authorization: Basic Zm9vOmJhcg==\r\n"
        "X-Secret: 1\r\n"
        "Connection: keep-alive, X-Secret ,x-other\r\n"
        "Keep-Alive: timeout=5\r\n"
        "TE: trailers\r\n"
        "Trailer: X-T\r\n"
        "Upgrade: websocket\r\n"
        "X-Other: 2\r\n"
        "connection: Content-Length, Transfer-Encoding, X-Third\r\n"
        "Accept:   text/html,\t*/*  \r\n"
        "HOST: again.example\r\n"
        "X-Third: 3\r\n"
        "Content-Length: 4\r\n"
        "Transfer-Encoding: chunked\r\n"
        "X-Empty:\r\n"
        "\r\n"
        "BODY";
    ProxyRequest r = ok(in);
    CHECK(r.consumed == in.size() - 4);
    CHECK(r.head.rfind("GET /p?q HTTP/1.1\r\n", 0) == 0);
    CHECK(header_lines(r.head) ==
          "Host: example.com:8080\r\n"
          "User-Agent: curl/8.0\r\n"
          "Accept: text/html,\t*/*\r\n"
          "Content-Length: 4\r\n"
          "Transfer-Encoding: chunked\r\n"
          "X-Empty:\r\n"
          "Connection: close\r\n");

    // Each hop-by-hop or proxy header is dropped on its own, whatever its case.
    for (const char* name : {"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive",
                             "TE", "Trailer", "Upgrade", "Host", "KEEP-ALIVE", "te"}) {
      INFO("header: ", name);
      r = ok(std::string("GET http://h/ HTTP/1.1\r\n") + name + ": x\r\nX-Kept: 1\r\n\r\n");
      CHECK(header_lines(r.head) == "Host: h\r\nX-Kept: 1\r\nConnection: close\r\n");
    }

    r = ok("PUT http://h/x HTTP/1.0\r\nHost: h\r\nConnection: close\r\n\r\n");
    CHECK(r.head == "PUT /x HTTP/1.0\r\nHost: h\r\nConnection: close\r\n\r\n");
  }

  TEST_CASE("a head that does not end within kMaxProxyHead bytes is 431") {
    std::string in = "GET http://h/ HTTP/1.1\r\n";
    while (in.size() < kMaxProxyHead) in += "X-Pad: " + std::string(1000, 'p') + "\r\n";
    in.resize(kMaxProxyHead - 1);
    CHECK(parse_proxy_request(in).status == Status::NeedMore);
    in += 'p';
    CHECK(refused(in) == 431);
    CHECK(refused(in + "\r\n\r\n") == 431);

    // A head exactly kMaxProxyHead bytes long is accepted (few long headers).
    std::string exact = "GET http://h/ HTTP/1.1\r\n";
    std::string tail = "\r\n\r\n";
    std::string pad = "X: ";
    exact += pad + std::string(kMaxProxyHead - exact.size() - pad.size() - tail.size(), 'v') + tail;
    REQUIRE(exact.size() == kMaxProxyHead);
    CHECK(ok(exact + "body").consumed == kMaxProxyHead);
    exact.insert(30, "v");
    CHECK(refused(exact) == 431);
  }

  TEST_CASE("a request line longer than kMaxProxyRequestLine is 414, even before it ends") {
    std::string prefix = "GET http://h/";
    std::string suffix = " HTTP/1.1\r\n\r\n";
    std::string fits = prefix + std::string(kMaxProxyRequestLine - prefix.size() - 9, 'a') + suffix;
    CHECK(ok(fits).consumed == fits.size());
    std::string longer = prefix + std::string(kMaxProxyRequestLine - prefix.size(), 'a');
    CHECK(parse_proxy_request(longer).status == Status::NeedMore);
    CHECK(refused(longer + 'a') == 414);
    CHECK(refused(longer + suffix) == 414);
    CHECK(refused(std::string(kMaxProxyRequestLine + 1, 'G')) == 414);
    // A control character later in a long line does not change the verdict.
    CHECK(refused(std::string(kMaxProxyRequestLine + 1, 'G') + '\x01') == 414);
    CHECK(refused("\x01" + std::string(kMaxProxyRequestLine + 1, 'G')) == 400);
  }

  TEST_CASE("more than kMaxProxyHeaders header fields is 431") {
    std::string in = "GET http://h/ HTTP/1.1\r\n";
    for (size_t i = 0; i < kMaxProxyHeaders; i++) in += "X-" + std::to_string(i) + ": v\r\n";
    ProxyRequest r = ok(in + "\r\n");
    CHECK(r.head.find("X-99: v\r\n") != std::string::npos);
    CHECK(refused(in + "X-100: v\r\n") == 431);
    CHECK(refused(in + "X-100: v\r\n\r\n") == 431);
    CHECK(parse_proxy_request(in + "X-100: v").status == Status::NeedMore);
  }

  TEST_CASE("control characters, obs-fold, and malformed header lines are 400") {
    const std::string rl = "GET http://h/ HTTP/1.1\r\n";
    CHECK(refused(std::string("GET http://h/\0 HTTP/1.1\r\n\r\n", 27)) == 400);
    CHECK(refused("GET http://h/\x7f HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("GET http://h/ HTTP/1.1\r\r\n\r\n") == 400);
    CHECK(refused("GET http://h/\r HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused("\rGET http://h/ HTTP/1.1\r\n\r\n") == 400);
    CHECK(refused(rl + std::string("X-A: a\0b\r\n\r\n", 12)) == 400);
    CHECK(refused(rl + "X-A: a\x1b[31m\r\n\r\n") == 400);
    CHECK(refused(rl + "X-A: a\rb\r\n\r\n") == 400);
    CHECK(refused(rl + "X-A: a\x7f\r\n\r\n") == 400);
    CHECK(refused(rl + "X-A\x01: a\r\n\r\n") == 400);
    for (std::string in :
         {rl + "X-A: a\r\n b\r\n\r\n", rl + "X-A: a\r\n\tb\r\n\r\n", rl + " X-A: a\r\n\r\n"}) {
      ProxyParse p = parse_proxy_request(in);
      CHECK(p.http_status == 400);
      CHECK(p.reason.find("obs-fold") != std::string::npos);
    }
    for (std::string in : {rl + "X-A : a\r\n\r\n", rl + "X-A\t: a\r\n\r\n"}) {
      ProxyParse p = parse_proxy_request(in);
      CHECK(p.http_status == 400);
      CHECK(p.reason == "whitespace before the colon of a header");
    }
    CHECK(refused(rl + "X-A a\r\n\r\n") == 400);
    CHECK(refused(rl + ": a\r\n\r\n") == 400);
    CHECK(refused(rl + "X(A): a\r\n\r\n") == 400);
    CHECK(refused(rl + "\r\r\n\r\n") == 400);
    // HTAB and obs-text are allowed in values; the proxy headers are checked too on CONNECT.
    CHECK(ok(rl + "X-A: a\tb \xc3\xa9\r\n\r\n").head.find("X-A: a\tb \xc3\xa9\r\n") !=
          std::string::npos);
    CHECK(refused("CONNECT h:1 HTTP/1.1\r\nX: \x01\r\n\r\n") == 400);
    // A verdict on a header line is final before the head ends.
    CHECK(refused(rl + "X-A : a\r\n") == 400);
  }

  TEST_CASE("proxy_response: status line, plain text, exact Content-Length, Connection: close") {
    CHECK(proxy_response(403, "blocked by policy: example.com\n") ==
          "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 31\r\n"
          "Connection: close\r\n\r\nblocked by policy: example.com\n");
    CHECK(proxy_response(502, "no route") ==
          "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n"
          "Connection: close\r\n\r\nno route\n");
    CHECK(proxy_response(504, "") ==
          "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n"
          "Connection: close\r\n\r\n\n");
    CHECK(proxy_response(431, "x").rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0) ==
          0);
    CHECK(proxy_response(414, "x").rfind("HTTP/1.1 414 URI Too Long\r\n", 0) == 0);
    CHECK(proxy_response(505, "x").rfind("HTTP/1.1 505 HTTP Version Not Supported\r\n", 0) == 0);
    CHECK(proxy_response(501, "x").rfind("HTTP/1.1 501 Not Implemented\r\n", 0) == 0);
    CHECK(proxy_response(400, "x").rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK(proxy_response(0, "x").rfind("HTTP/1.1 500 Internal Server Error\r\n", 0) == 0);
    CHECK(proxy_response(499, "x").rfind("HTTP/1.1 499 Client Error\r\n", 0) == 0);

    std::string body(100000, 'b');
    std::string r = proxy_response(400, body);
    size_t end = r.find("\r\n\r\n");
    REQUIRE(end != std::string::npos);
    CHECK(r.find("\r\nContent-Length: 100001\r\n") < end);
    CHECK(r.size() - end - 4 == 100001);
  }
}

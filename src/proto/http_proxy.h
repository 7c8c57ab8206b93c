// The request side of the guest's HTTP proxy: guest-init listens on 127.0.0.1:3128, programs in
// the guest find it through HTTP_PROXY/HTTPS_PROXY, and for each client it parses the request
// head with parse_proxy_request as the bytes arrive. Two kinds of request are served: CONNECT
// host:port, a tunnel (guest-init answers 200 and splices bytes), and an absolute-URI request
// for plain HTTP (GET http://host:port/path HTTP/1.1), whose head is rewritten for the origin
// server: origin-form request line with the client's version, Host from the URI (the URI wins),
// hop-by-hop and proxy headers dropped (Connection, Keep-Alive, Proxy-*, TE, Trailer, Upgrade,
// and what Connection names, never Content-Length or Transfer-Encoding), Connection: close
// appended, one request per upstream connection. Bodies are not parsed: whatever follows the
// head is spliced as it is. The bytes are hostile: RFC 9112 syntax is checked strictly (no
// control characters but HTAB in values, no obs-fold, no whitespace before a colon, hosts that
// are names, dotted-quad IPv4 or bracketed IPv6), the head and its request line are bounded,
// the work is linear in the head, and nothing throws but std::bad_alloc. The bytes are judged
// in order, so a verdict (Ok or Bad) on a prefix of the input is the one any longer input
// starting with it gets: the caller may parse again each time more bytes arrive. Where a host
// leads and whether it may be reached is the network broker's (proto/net.h), which also
// lower-cases names; they come back here as written.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace space::proto {

constexpr size_t kMaxProxyHead = 64 * 1024;        // a longer request head is refused (431)
constexpr size_t kMaxProxyRequestLine = 8 * 1024;  // a longer request line is refused (414)
constexpr size_t kMaxProxyHeaders = 100;           // more header fields are refused (431)

struct ProxyRequest {
  bool connect = false;  // CONNECT host:port (a tunnel) rather than an absolute-URI request
  std::string method;    // "CONNECT", "GET", ... (case-sensitive, as sent)
  std::string host;      // as given: a name, an IPv4 literal, or an IPv6 literal without brackets
  uint16_t port = 0;     // 1..65535: from the authority; 80 when an http:// URI names none
  // Plain HTTP only: the head to send upstream, request line through the blank line, CRLF line
  // ends; "" for CONNECT.
  std::string head;
  // Bytes of the input that made the head: any skipped empty lines, the request line, the
  // headers and the blank line. What follows belongs to the body or the tunnel.
  size_t consumed = 0;
};

struct ProxyParse {
  enum class Status { NeedMore, Ok, Bad } status = Status::NeedMore;
  ProxyRequest request;  // when Ok
  int http_status = 0;   // when Bad: 400, 414, 431, 501 or 505
  std::string reason;    // when Bad: why, in a short sentence for the client's error body
};

// Parses the request head at the start of `buf`, which may be incomplete: NeedMore until a
// blank line ends it, Ok, or Bad with the status to answer. Reads only `buf`, at most
// kMaxProxyHead bytes of it; never throws but std::bad_alloc.
ProxyParse parse_proxy_request(std::string_view buf);

// A complete HTTP/1.1 response for the client: status line with the standard reason phrase
// (a status outside 100..599 is sent as 500), Content-Type: text/plain, Content-Length,
// Connection: close, then `body` plus a newline if it does not end in one.
std::string proxy_response(int status, std::string_view body);

}  // namespace space::proto

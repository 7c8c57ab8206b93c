// The proxy's request parser and error responses; see http_proxy.h. The head is read line by
// line, in order, and each complete line is judged as it is met (the request line even before
// its end, for control characters and length), so that a prefix's verdict is the whole's. Views
// into the caller's buffer are held only until the result is built.
#include "proto/http_proxy.h"

#include <arpa/inet.h>

#include <vector>

namespace space::proto {
namespace {

constexpr size_t kMaxLeadingEmptyLines = 8;  // RFC 9112 2.2: empty lines before a request line
constexpr size_t kMaxHostName = 253;
constexpr size_t kMaxLabel = 63;

using Status = ProxyParse::Status;

ProxyParse bad(int status, std::string reason) {
  ProxyParse p;
  p.status = Status::Bad;
  p.http_status = status;
  p.reason = std::move(reason);
  return p;
}

bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_hex(unsigned char c) {
  return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
bool is_ctl(unsigned char c) {
  return c < 0x20 || c == 0x7f;
}

// RFC 9110 5.6.2: the characters of a token (methods, header names, Connection options).
bool is_tchar(unsigned char c) {
  if (is_digit(c) || is_alpha(c)) return true;
  return c != 0 &&
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view strip_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// The verdict on (the start of) a request line, judged byte by byte so that a prefix agrees with
// the whole: a control character within the first kMaxProxyRequestLine bytes is 400, more bytes
// than that 414; 0 when neither (yet).
int judge_request_line_bytes(std::string_view line) {
  for (size_t i = 0; i < line.size(); i++) {
    if (i == kMaxProxyRequestLine) return 414;
    if (is_ctl(static_cast<unsigned char>(line[i]))) return 400;
  }
  return 0;
}

ProxyParse request_line_verdict(int status) {
  if (status == 414)
    return bad(
        414, "the request line is longer than " + std::to_string(kMaxProxyRequestLine) + " bytes");
  return bad(400, "a control character in the request line");
}

// Where the head has not ended within what the buffer holds: 431 if it cannot end within the
// limit any more, else wait.
ProxyParse unfinished(std::string_view buf) {
  if (buf.size() >= kMaxProxyHead)
    return bad(431, "the request head is longer than " + std::to_string(kMaxProxyHead) + " bytes");
  return {};
}

bool valid_ipv4(std::string_view s) {
  char text[INET_ADDRSTRLEN];
  if (s.size() >= sizeof text) return false;
  s.copy(text, s.size());
  text[s.size()] = '\0';
  in_addr a;
  return inet_pton(AF_INET, text, &a) == 1;
}

bool valid_ipv6(std::string_view s) {
  char text[INET6_ADDRSTRLEN];
  if (s.size() >= sizeof text) return false;
  s.copy(text, s.size());
  text[s.size()] = '\0';
  in6_addr a;
  return inet_pton(AF_INET6, text, &a) == 1;
}

// A host that is not bracketed: a DNS-ish name (letters, digits, '-', '_', dot-separated labels
// of 1..63, one trailing dot allowed) or a dotted-quad IPv4 literal. A name whose last label is
// numeric (decimal, or 0x hex) would be read as an address by some resolvers ("127.1",
// "0x7f000001"): it must be a dotted quad. "" when valid, else why not.
std::string check_host_name(std::string_view host) {
  std::string_view name = host;
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty()) return "an empty host";
  if (name.size() > kMaxHostName) return "a host name longer than 253 characters";
  for (unsigned char c : name)
    if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '_' && c != '.')
      return "an invalid character in the host";
  std::string_view last;
  for (std::string_view rest = name;;) {
    size_t dot = rest.find('.');
    last = rest.substr(0, dot);
    if (last.empty()) return "an empty label in the host";
    if (last.size() > kMaxLabel) return "a host label longer than 63 characters";
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  bool numeric = true;
  if (last.size() >= 2 && last[0] == '0' && lower(last[1]) == 'x') {
    for (unsigned char c : last.substr(2)) numeric = numeric && is_hex(c);
  } else {
    for (unsigned char c : last) numeric = numeric && is_digit(c);
  }
  if (numeric && !valid_ipv4(host)) return "a numeric host that is not a dotted-quad IPv4 address";
  return "";
}

bool parse_port(std::string_view s, uint16_t& port) {
  if (s.empty()) return false;
  uint32_t v = 0;
  for (unsigned char c : s) {
    if (!is_digit(c)) return false;
    v = v * 10 + (c - '0');
    if (v > 65535) return false;
  }
  if (v == 0) return false;
  port = static_cast<uint16_t>(v);
  return true;
}

// host[:port] or [v6][:port] into `req`; the port is required for CONNECT, else 80 by default.
// "" when valid, else why not.
std::string parse_authority(std::string_view a, bool port_required, ProxyRequest& req) {
  std::string_view host, port;
  bool has_port = false;
  if (!a.empty() && a[0] == '[') {
    size_t close = a.find(']');
    if (close == std::string_view::npos) return "an unclosed '[' in the host";
    host = a.substr(1, close - 1);
    if (!valid_ipv6(host)) return "an invalid IPv6 address in brackets";
    std::string_view after = a.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return "junk after the bracketed IPv6 address";
      port = after.substr(1);
      has_port = true;
    }
  } else {
    size_t colon = a.find(':');
    host = a.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = a.substr(colon + 1);
      has_port = true;
    }
    if (std::string why = check_host_name(host); !why.empty()) return why;
  }
  if (has_port) {
    if (!parse_port(port, req.port)) return "an invalid port (it must be 1..65535)";
  } else if (port_required) {
    return "no port: CONNECT needs host:port";
  } else {
    req.port = 80;
  }
  req.host = std::string(host);
  return "";
}

struct Header {
  std::string_view name, value;
};

// One header line (without its line end). "" when valid, else why not.
std::string parse_header(std::string_view line, Header& h) {
  if (line[0] == ' ' || line[0] == '\t')
    return "a header line that starts with whitespace (obs-fold is not accepted)";
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return "a header line without a colon";
  h.name = line.substr(0, colon);
  if (h.name.empty()) return "a header line with an empty name";
  for (unsigned char c : h.name) {
    if (c == ' ' || c == '\t') return "whitespace before the colon of a header";
    if (!is_tchar(c)) return "an invalid character in a header name";
  }
  h.value = trim_ows(line.substr(colon + 1));
  for (unsigned char c : h.value)
    if (is_ctl(c) && c != '\t') return "a control character in a header value";
  return "";
}

// Whether a header is not forwarded upstream: hop-by-hop and proxy headers, Host (replaced from
// the URI), and the options the Connection headers name; never the body's framing.
bool dropped(std::string_view name, const std::vector<std::string_view>& connection_options) {
  if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding")) return false;
  for (std::string_view h : {"Host", "Connection", "Proxy-Connection", "Proxy-Authorization",
                             "Keep-Alive", "TE", "Trailer", "Upgrade"})
    if (iequals(name, h)) return true;
  for (std::string_view o : connection_options)
    if (iequals(name, o)) return true;
  return false;
}

// The request line's parts, checked; Ok carries the method, host, port and (for plain HTTP) the
// origin-form target and authority.
struct RequestLine {
  std::string_view method, version, origin, authority;
};

ProxyParse parse_request_line(std::string_view line, RequestLine& rl, ProxyRequest& req) {
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == sp2)
    return bad(400, "the request line is not METHOD TARGET HTTP/1.x");
  rl.method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  rl.version = line.substr(sp2 + 1);
  if (target.empty() || target.find(' ') != std::string_view::npos)
    return bad(400, "the request line is not METHOD TARGET HTTP/1.x");
  if (!is_token(rl.method)) return bad(400, "an invalid method");
  if (rl.version != "HTTP/1.1" && rl.version != "HTTP/1.0") {
    const auto& v = rl.version;
    if (v.size() == 8 && v.substr(0, 5) == "HTTP/" && is_digit(v[5]) && v[6] == '.' &&
        is_digit(v[7]))
      return bad(505, "only HTTP/1.0 and HTTP/1.1 are supported");
    return bad(400, "an invalid HTTP version");
  }
  for (unsigned char c : target)
    if (c < 0x21 || c > 0x7e)
      return bad(400, "a character that is not visible ASCII in the target");
  req.method = std::string(rl.method);

  if (rl.method == "CONNECT") {
    req.connect = true;
    if (std::string why = parse_authority(target, true, req); !why.empty())
      return bad(400, "CONNECT target: " + why);
    return {};
  }
  if (target[0] == '/' || target == "*")
    return bad(400,
               "this is a proxy: the request target must be an absolute URI "
               "(http://host/path); HTTPS goes through CONNECT");
  size_t sep = target.find("://");
  if (sep == std::string_view::npos || sep == 0)
    return bad(400, "the request target is not an absolute URI (http://host/path)");
  std::string_view scheme = target.substr(0, sep);
  if (!is_alpha(scheme[0])) return bad(400, "an invalid URI scheme");
  for (unsigned char c : scheme)
    if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.')
      return bad(400, "an invalid URI scheme");
  if (iequals(scheme, "https"))
    return bad(501,
               "https:// URIs are not fetched by this proxy: HTTPS goes through CONNECT (use "
               "HTTPS_PROXY, or a client that tunnels)");
  if (!iequals(scheme, "http")) return bad(501, "only http:// URIs are proxied (and CONNECT)");
  std::string_view rest = target.substr(sep + 3);
  if (rest.find('#') != std::string_view::npos)
    return bad(400, "a fragment (#) in the request target");
  size_t end = rest.find_first_of("/?");
  rl.authority = rest.substr(0, end);
  rl.origin = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (rl.authority.find('@') != std::string_view::npos)
    return bad(400, "user information (user@host) in the URI is not accepted");
  if (std::string why = parse_authority(rl.authority, false, req); !why.empty())
    return bad(400, "URI host: " + why);
  return {};
}

std::string rewritten_head(const RequestLine& rl, const std::vector<Header>& headers) {
  std::vector<std::string_view> options;  // what the Connection headers name
  for (const Header& h : headers) {
    if (!iequals(h.name, "Connection")) continue;
    for (std::string_view rest = h.value;;) {
      size_t comma = rest.find(',');
      std::string_view o = trim_ows(rest.substr(0, comma));
      if (!o.empty()) options.push_back(o);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  std::string head;
  head.append(rl.method).append(" ");
  if (rl.origin.empty() || rl.origin[0] == '?') head.append("/");
  head.append(rl.origin).append(" ").append(rl.version).append("\r\n");
  head.append("Host: ").append(rl.authority).append("\r\n");
  for (const Header& h : headers) {
    if (dropped(h.name, options)) continue;
    head.append(h.name).append(":");
    if (!h.value.empty()) head.append(" ").append(h.value);
    head.append("\r\n");
  }
  head.append("Connection: close\r\n\r\n");
  return head;
}

const char* reason_phrase(int status) {
  struct Phrase {
    int status;
    const char* text;
  };
  static constexpr Phrase kPhrases[] = {
      {100, "Continue"},
      {101, "Switching Protocols"},
      {200, "OK"},
      {201, "Created"},
      {202, "Accepted"},
      {204, "No Content"},
      {301, "Moved Permanently"},
      {302, "Found"},
      {304, "Not Modified"},
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {407, "Proxy Authentication Required"},
      {408, "Request Timeout"},
      {411, "Length Required"},
      {413, "Content Too Large"},
      {414, "URI Too Long"},
      {417, "Expectation Failed"},
      {421, "Misdirected Request"},
      {429, "Too Many Requests"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {502, "Bad Gateway"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
      {505, "HTTP Version Not Supported"},
      {1, "Informational"},
      {2, "Success"},
      {3, "Redirection"},
      {4, "Client Error"},
  };
  for (const Phrase& p : kPhrases)
    if (p.status == status) return p.text;
  switch (status / 100) {
    case 1:
      return "Informational";
    case 2:
      return "Success";
    case 3:
      return "Redirection";
    case 4:
      return "Client Error";
    default:
      return "Server Error";
  }
}

}  // namespace

ProxyParse parse_proxy_request(std::string_view buf) {
  std::string_view window = buf.substr(0, kMaxProxyHead);
  size_t pos = 0;

  // The request line, after at most kMaxLeadingEmptyLines empty lines.
  std::string_view line;
  for (size_t empty = 0;;) {
    size_t lf = window.find('\n', pos);
    if (lf == std::string_view::npos) {
      if (int s = judge_request_line_bytes(strip_cr(window.substr(pos))))
        return request_line_verdict(s);
      return unfinished(buf);
    }
    line = strip_cr(window.substr(pos, lf - pos));
    pos = lf + 1;
    if (!line.empty()) break;
    if (++empty > kMaxLeadingEmptyLines) return bad(400, "too many empty lines before a request");
  }
  if (int s = judge_request_line_bytes(line)) return request_line_verdict(s);
  RequestLine rl;
  ProxyParse out;
  if (ProxyParse p = parse_request_line(line, rl, out.request); p.status == Status::Bad) return p;

  // The header lines, up to the blank line.
  std::vector<Header> headers;
  for (;;) {
    size_t lf = window.find('\n', pos);
    if (lf == std::string_view::npos) return unfinished(buf);
    line = strip_cr(window.substr(pos, lf - pos));
    pos = lf + 1;
    if (line.empty()) break;
    if (headers.size() == kMaxProxyHeaders)
      return bad(431, "more than " + std::to_string(kMaxProxyHeaders) + " header fields");
    Header h;
    if (std::string why = parse_header(line, h); !why.empty()) return bad(400, why);
    headers.push_back(h);
  }

  out.status = Status::Ok;
  out.request.consumed = pos;
  if (!out.request.connect) out.request.head = rewritten_head(rl, headers);
  return out;
}

std::string proxy_response(int status, std::string_view body) {
  if (status < 100 || status > 599) status = 500;
  bool newline = body.empty() || body.back() != '\n';
  size_t length = body.size() + (newline ? 1 : 0);
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  r += "Content-Type: text/plain\r\n";
  r += "Content-Length: " + std::to_string(length) + "\r\n";
  r += "Connection: close\r\n\r\n";
  r.append(body);
  if (newline) r += '\n';
  return r;
}

}  // namespace space::proto

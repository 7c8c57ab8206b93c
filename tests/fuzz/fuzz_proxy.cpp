// libFuzzer harness for the guest proxy's request parser (src/proto/http_proxy.h), which reads
// what any program in the guest sends to 127.0.0.1:3128. The input is parsed whole, and as
// guest-init would see it arrive: a first piece cut at a data-derived point, then the whole
// buffer. A verdict (Ok or Bad) on the first piece must be the whole's, field for field; an Ok
// head must re-parse to the same result from exactly `consumed` bytes and be NeedMore one byte
// short; Ok carries a port, a host, and a head (CRLF-terminated, with Host and Connection:
// close) only when it is not CONNECT; Bad carries a status and a reason. One input in sixteen is
// also repeated past kMaxProxyHead, to reach the 414 and 431 limits. proxy_response gets a
// slice and a data-derived status, and its Content-Length must count its body exactly. Any
// broken rule is __builtin_trap; ASan and UBSan catch the rest.
// Built with clang++ -fsanitize=fuzzer,address,undefined when clang is found (CMakeLists.txt);
// ctest runs it for a fixed number of inputs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/http_proxy.h"

using namespace space::proto;
using Status = ProxyParse::Status;

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

bool same(const ProxyParse& a, const ProxyParse& b) {
  return a.status == b.status && a.http_status == b.http_status && a.reason == b.reason &&
         a.request.connect == b.request.connect && a.request.method == b.request.method &&
         a.request.host == b.request.host && a.request.port == b.request.port &&
         a.request.head == b.request.head && a.request.consumed == b.request.consumed;
}

// The rules every result of parsing `in` obeys on its own.
void check_alone(std::string_view in, const ProxyParse& p) {
  if (p.status == Status::Bad) {
    require(p.http_status >= 400 && p.http_status <= 599 && !p.reason.empty());
    return;
  }
  require(p.http_status == 0 && p.reason.empty());
  if (p.status == Status::NeedMore) {
    require(in.size() < kMaxProxyHead);
    return;
  }
  const ProxyRequest& r = p.request;
  require(r.consumed >= 4 && r.consumed <= in.size() && r.consumed <= kMaxProxyHead);
  require(in[r.consumed - 1] == '\n');
  require(r.port != 0 && !r.host.empty() && !r.method.empty());
  require(r.head.empty() == r.connect);
  require(r.connect == (r.method == "CONNECT"));
  if (!r.connect) {
    require(r.head.compare(0, r.method.size() + 2, r.method + " /") == 0);
    require(r.head.size() >= 4 && r.head.compare(r.head.size() - 4, 4, "\r\n\r\n") == 0);
    require(r.head.find("\r\nHost: ") != std::string::npos);
    require(r.head.find("\r\nConnection: close\r\n\r\n") == r.head.size() - 23);
    for (unsigned char c : r.head) require(c >= 0x20 || c == '\t' || c == '\r' || c == '\n');
  }
  // The head alone is parsed the same; one byte short, it is not yet complete.
  require(same(parse_proxy_request(in.substr(0, r.consumed)), p));
  require(parse_proxy_request(in.substr(0, r.consumed - 1)).status == Status::NeedMore);
}

// `in` parsed whole, and first only up to `cut` as a buffer filling up would be.
void check_pieces(std::string_view in, size_t cut) {
  ProxyParse whole = parse_proxy_request(in);
  check_alone(in, whole);
  std::string buffer(in.substr(0, cut));
  ProxyParse first = parse_proxy_request(buffer);
  check_alone(buffer, first);
  if (first.status != Status::NeedMore) require(same(first, whole));
  buffer.append(in.substr(cut));
  require(same(parse_proxy_request(buffer), whole));
}

void check_response(int status, std::string_view body) {
  std::string r = proxy_response(status, body);
  require(r.compare(0, 9, "HTTP/1.1 ") == 0);
  size_t end = r.find("\r\n\r\n");
  require(end != std::string::npos);
  std::string_view key = "\r\nContent-Length: ";
  size_t at = r.find(key);
  require(at != std::string::npos && at < end);
  size_t length = std::stoul(r.substr(at + key.size(), end - at - key.size()));
  require(length == r.size() - end - 4);
  require(r.compare(end + 4, body.size(), body) == 0 && r.back() == '\n');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t seed = size >= 2 ? data[size - 1] | (size_t{data[size - 2]} << 8) : size;
  size_t cut = seed % (size + 1);
  check_pieces(in, cut);
  if (size > 0 && (seed & 0xf000) == 0x7000) {
    std::string big;
    while (big.size() <= kMaxProxyHead) big.append(in);
    check_pieces(big, kMaxProxyHead - cut % 64);
  }
  check_response(static_cast<int>(seed % 700), in.substr(cut));
  return 0;
}

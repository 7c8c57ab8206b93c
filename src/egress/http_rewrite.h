// The request side of an intercepted HTTPS connection (egress/intercept.h): the client's bytes,
// HTTP/1.1 only (the broker offers no other protocol in ALPN), cut into requests. In each
// request's head every occurrence of a placeholder bound to this host is replaced with the
// secret's value: in any header's value, and inside `Authorization: Basic` credentials (decoded
// from base64, swapped, encoded again: git's token auth). Nothing else changes: the request
// line, the header names and order, bodies (framed by Content-Length or chunked transfer coding)
// and, after a request asking to Upgrade, the rest of the stream pass as they came.
// A placeholder of this sandbox that is not bound to this host is left as it is, the meaningless
// string it is, and reported (`stray`). Heads over the bound, folded headers, a request with
// both Content-Length and Transfer-Encoding (or conflicting lengths), and anything that is not
// HTTP/1.x end the connection: RewriteError. The output holds secret values, so it is secret
// memory (SecretBytes), wiped by its owner once written.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/wipe.h"

namespace space::egress {

struct RewriteError : Error {
  using Error::Error;
};

// What the audit says of one request.
struct RequestInfo {
  std::string method;
  std::string target;  // the request target, as sent (path and query)
};

struct Placeholder {
  std::string token;   // what the guest holds, e.g. "space-placeholder-..."
  std::string name;    // the secret's name
  bool bound = false;  // bound to this connection's host: swapped; else left and reported
};

class RequestRewriter {
 public:
  // The value of `p` for request `r`: spends a use of the grant and audits it; nullopt refuses
  // it (used up, expired, revoked), which ends the connection.
  using Resolve =
      std::function<std::optional<SecretString>(const Placeholder& p, const RequestInfo& r)>;
  // A placeholder of this sandbox sent to a host it is not bound to.
  using Stray = std::function<void(const Placeholder& p, const RequestInfo& r)>;

  static constexpr size_t kMaxHead = 64 * 1024;

  RequestRewriter(std::vector<Placeholder> placeholders, Resolve resolve, Stray stray,
                  size_t max_head = kMaxHead);
  // Takes the next bytes the client sent and appends what to send on to `out`. Throws
  // RewriteError (the connection must end) on what it refuses.
  void feed(std::string_view in, SecretBytes& out);
  // Requests whose heads were seen so far, and placeholders swapped in them.
  uint64_t requests() const { return requests_; }
  uint64_t swaps() const { return swaps_; }

 private:
  enum class State { Head, Body, ChunkSize, ChunkData, ChunkDataEnd, Trailers, Opaque };
  std::vector<Placeholder> placeholders_;
  Resolve resolve_;
  Stray stray_;
  size_t max_head_;
  State state_ = State::Head;
  std::string head_;        // the head being gathered (or the chunk-size / trailer line)
  uint64_t remaining_ = 0;  // body or chunk bytes still to pass
  uint64_t requests_ = 0, swaps_ = 0;

  void on_head(SecretBytes& out);
  // What feed() does in each state: each takes what it can of `in`, advancing it, and the
  // head and chunk-line ones return false when `in` ran out before their line's end.
  void take_body(std::string_view& in, SecretBytes& out);
  bool take_head(std::string_view& in, SecretBytes& out);
  bool take_chunk_line(std::string_view& in, SecretBytes& out);
};

}  // namespace space::egress

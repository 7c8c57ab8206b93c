// The request side of an intercepted HTTPS connection; see http_rewrite.h.
#include "egress/http_rewrite.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "util/base64.h"

namespace space::egress {

namespace {

constexpr size_t kMaxLine = 4096;  // a chunk-size or trailer line

[[noreturn]] void refuse(const std::string& why) {
  throw RewriteError("refused request: " + why);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool token_char(char c) {
  static const std::string_view extra = "!#$%&'*+-.^_`|~";
  return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
}

// The placeholders' values for one request: each resolved (a use spent) at most once.
class Swapper {
 public:
  Swapper(const std::vector<Placeholder>& ps, const RequestRewriter::Resolve& resolve,
          const RequestRewriter::Stray& stray, const RequestInfo& r)
      : ps_(ps), resolve_(resolve), stray_(stray), r_(r) {}

  // Appends `text` to `out` with every placeholder bound here replaced; true if any was.
  bool replace(std::string_view text, SecretBytes& out) {
    bool any = false;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t best = std::string_view::npos, which = 0;
      for (size_t i = 0; i < ps_.size(); i++) {
        size_t at = text.find(ps_[i].token, pos);
        if (at < best) {
          best = at;
          which = i;
        }
      }
      if (best == std::string_view::npos) break;
      append_wiped(out, text.substr(pos, best - pos));
      const Placeholder& p = ps_[which];
      if (p.bound) {
        append_wiped(out, std::string_view(value_of(which).bytes));
        any = true;
      } else {
        if (strays_.insert(which).second && stray_) stray_(p, r_);
        append_wiped(out, p.token);
      }
      pos = best + p.token.size();
    }
    append_wiped(out, text.substr(pos));
    return any;
  }
  uint64_t swaps() const { return values_.size(); }

 private:
  const std::vector<Placeholder>& ps_;
  const RequestRewriter::Resolve& resolve_;
  const RequestRewriter::Stray& stray_;
  const RequestInfo& r_;
  std::map<size_t, SecretString> values_;
  std::set<size_t> strays_;

  const SecretString& value_of(size_t i) {
    auto it = values_.find(i);
    if (it != values_.end()) return it->second;
    std::optional<SecretString> v = resolve_(ps_[i], r_);
    if (!v) refuse("secret " + ps_[i].name + " may not be used now (its grant is spent or gone)");
    return values_.emplace(i, std::move(*v)).first->second;
  }
};

// `value` of an Authorization header with the placeholders inside Basic credentials swapped.
// Returns false (nothing appended) when it is not Basic or holds no bound placeholder.
bool swap_basic(std::string_view value, Swapper& sw, SecretBytes& out) {
  std::string_view v = trim(value);
  if (v.size() < 6 || lower(v.substr(0, 6)) != "basic ") return false;
  std::string_view token = trim(v.substr(6));
  SecretBytes decoded;
  decoded.reserve(kSecretMinCapacity);
  if (!base64::decode_into(decoded, token)) {
    wipe(decoded);
    return false;
  }
  SecretBytes swapped;
  swapped.reserve(kSecretMinCapacity);
  bool any = sw.replace(std::string_view(decoded), swapped);
  wipe(decoded);
  if (!any) {
    wipe(swapped);
    return false;
  }
  append_wiped(out, value.substr(0, size_t(v.data() - value.data())));  // its leading spaces
  append_wiped(out, v.substr(0, 6));
  SecretBytes encoded;
  encoded.reserve(kSecretMinCapacity);
  base64::encode_into(encoded, std::string_view(swapped));
  append_wiped(out, std::string_view(encoded));
  wipe(swapped);
  wipe(encoded);
  return true;
}

}  // namespace

RequestRewriter::RequestRewriter(std::vector<Placeholder> placeholders, Resolve resolve,
                                 Stray stray, size_t max_head)
    : placeholders_(std::move(placeholders)),
      resolve_(std::move(resolve)),
      stray_(std::move(stray)),
      max_head_(max_head) {
  for (const auto& p : placeholders_)
    if (p.token.empty()) throw Error("an empty placeholder");
}

void RequestRewriter::on_head(SecretBytes& out) {
  // head_ ends with "\r\n\r\n".
  std::string_view head(head_);
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos)
    refuse("not an HTTP/1.1 request line");
  RequestInfo r;
  r.method = std::string(line.substr(0, sp1));
  r.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  std::string_view version = line.substr(sp2 + 1);
  if (r.method.empty() || !std::all_of(r.method.begin(), r.method.end(), token_char))
    refuse("a bad method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") refuse("not HTTP/1.x");
  if (r.target.empty() || r.target.find(' ') != std::string::npos) refuse("a bad request target");

  Swapper sw(placeholders_, resolve_, stray_, r);
  append_wiped(out, head.substr(0, eol + 2));
  std::optional<uint64_t> length;
  bool chunked = false, upgrade = false;
  size_t pos = eol + 2;
  while (pos < head.size() - 2) {
    size_t end = head.find("\r\n", pos);
    std::string_view h = head.substr(pos, end - pos);
    pos = end + 2;
    if (h.empty()) break;
    if (h.front() == ' ' || h.front() == '\t') refuse("a folded header line");
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) refuse("a header line without a name");
    std::string_view name = h.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), token_char)) refuse("a bad header name");
    std::string_view value = h.substr(colon + 1);
    const std::string lname = lower(name);
    if (lname == "content-length") {
      std::string_view v = trim(value);
      if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), ::isdigit))
        refuse("a bad Content-Length");
      uint64_t n = std::stoull(std::string(v));
      if (length && *length != n) refuse("two different Content-Lengths");
      length = n;
    } else if (lname == "transfer-encoding") {
      std::string codings = lower(trim(value));
      if (codings.size() < 7 || codings.compare(codings.size() - 7, 7, "chunked") != 0)
        refuse("a transfer coding other than chunked last");
      chunked = true;
    } else if (lname == "upgrade") {
      upgrade = true;
    }
    append_wiped(out, std::string_view(h.substr(0, colon + 1)));
    if (lname == "authorization" && swap_basic(value, sw, out)) {
      append_wiped(out, "\r\n");
      continue;
    }
    sw.replace(value, out);
    append_wiped(out, "\r\n");
  }
  append_wiped(out, "\r\n");
  if (chunked && length) refuse("both Content-Length and Transfer-Encoding");
  requests_++;
  swaps_ += sw.swaps();
  head_.clear();
  if (upgrade) {
    state_ = State::Opaque;  // a 101 turns the rest into another protocol
  } else if (chunked) {
    state_ = State::ChunkSize;
  } else if (length && *length > 0) {
    remaining_ = *length;
    state_ = State::Body;
  } else {
    state_ = State::Head;
  }
}

void RequestRewriter::take_body(std::string_view& in, SecretBytes& out) {
  size_t n = size_t(std::min<uint64_t>(remaining_, in.size()));
  append_wiped(out, in.substr(0, n));
  in.remove_prefix(n);
  remaining_ -= n;
  if (remaining_ > 0) return;
  if (state_ == State::Body) {
    state_ = State::Head;
  } else {
    state_ = State::ChunkDataEnd;
    head_.clear();
  }
}

bool RequestRewriter::take_head(std::string_view& in, SecretBytes& out) {
  // Gathers up to the blank line; the bytes before a request's first are refused (a stray CRLF
  // between requests is allowed, as RFC 9112 says).
  if (head_.empty())
    while (!in.empty() && (in.front() == '\r' || in.front() == '\n')) {
      append_wiped(out, in.substr(0, 1));
      in.remove_prefix(1);
    }
  if (in.empty()) return false;
  size_t before = head_.size();
  head_.append(in);
  size_t end = head_.find("\r\n\r\n", before >= 3 ? before - 3 : 0);
  if (end == std::string::npos) {
    if (head_.size() > max_head_)
      refuse("a request head over " + std::to_string(max_head_) + " bytes");
    return false;
  }
  if (end + 4 > max_head_) refuse("a request head over " + std::to_string(max_head_) + " bytes");
  size_t used = end + 4 - before;
  head_.resize(end + 4);
  in.remove_prefix(used);
  on_head(out);
  return true;
}

bool RequestRewriter::take_chunk_line(std::string_view& in, SecretBytes& out) {
  size_t nl = in.find('\n');
  std::string_view part = in.substr(0, nl == std::string_view::npos ? in.size() : nl + 1);
  head_.append(part);
  append_wiped(out, part);
  in.remove_prefix(part.size());
  if (head_.size() > kMaxLine) refuse("a chunk line over " + std::to_string(kMaxLine) + " bytes");
  if (nl == std::string_view::npos) return false;
  std::string line = head_;
  head_.clear();
  if (line.size() < 2 || line[line.size() - 2] != '\r') refuse("a chunk line without CRLF");
  line.resize(line.size() - 2);
  if (state_ == State::ChunkDataEnd) {
    if (!line.empty()) refuse("chunk data longer than its size");
    state_ = State::ChunkSize;
  } else if (state_ == State::Trailers) {
    if (line.empty()) state_ = State::Head;  // the end of this request
  } else {
    std::string_view hex = line;
    size_t semi = hex.find(';');
    if (semi != std::string_view::npos) hex = hex.substr(0, semi);
    hex = trim(hex);
    if (hex.empty() || hex.size() > 15 || !std::all_of(hex.begin(), hex.end(), ::isxdigit))
      refuse("a bad chunk size");
    remaining_ = std::stoull(std::string(hex), nullptr, 16);
    state_ = remaining_ == 0 ? State::Trailers : State::ChunkData;
  }
  return true;
}

void RequestRewriter::feed(std::string_view in, SecretBytes& out) {
  while (!in.empty()) {
    switch (state_) {
      case State::Opaque:
        append_wiped(out, in);
        return;
      case State::Body:
      case State::ChunkData:
        take_body(in, out);
        break;
      case State::Head:
        if (!take_head(in, out)) return;
        break;
      case State::ChunkSize:
      case State::ChunkDataEnd:
      case State::Trailers:
        if (!take_chunk_line(in, out)) return;
        break;
    }
  }
}

}  // namespace space::egress

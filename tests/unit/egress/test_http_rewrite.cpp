// Unit tests for egress/http_rewrite: a bound placeholder is swapped in any header (Bearer, a
// custom header) and inside Basic credentials, once resolved per request; an unbound one is left
// and reported; request lines, bodies (Content-Length, chunked) and an upgraded stream pass as
// they came, also when fed a byte at a time; keep-alive requests are each rewritten; refusals:
// heads over the bound, folding, smuggling (both framings, two lengths), not HTTP/1.x, a spent
// grant.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "egress/http_rewrite.h"
#include "util/base64.h"

using namespace space;
using namespace space::egress;

namespace {

const std::string kTok = "space-placeholder-0123456789abcdef";
const std::string kOther = "space-placeholder-fedcba9876543210";

struct Rig {
  std::vector<std::string> resolved, strays;
  bool refuse = false;
  RequestRewriter rw;
  explicit Rig(size_t max_head = RequestRewriter::kMaxHead)
      : rw(
            {{kTok, "TOKEN", true}, {kOther, "OTHER", false}},
            [this](const Placeholder& p, const RequestInfo& r) -> std::optional<SecretString> {
              resolved.push_back(p.name + " " + r.method + " " + r.target);
              if (refuse) return std::nullopt;
              return SecretString("s3cr3t-value");
            },
            [this](const Placeholder& p, const RequestInfo& r) {
              strays.push_back(p.name + " " + r.target);
            },
            max_head) {}
  std::string run(const std::string& in, size_t step = 0) {
    SecretBytes out;
    if (step == 0) {
      rw.feed(in, out);
    } else {
      for (size_t i = 0; i < in.size(); i += step)
        rw.feed(std::string_view(in).substr(i, step), out);
    }
    return std::string(out.data(), out.size());
  }
};

}  // namespace

TEST_CASE("rewrite: Bearer and any header; unbound placeholders left and reported") {
  Rig r;
  std::string req = "GET /api/x?q=" + kTok +
                    " HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + kTok +
                    "\r\nX-Key: a" + kTok + "b\r\nX-Other: " + kOther + "\r\n\r\n";
  std::string out = r.run(req);
  CHECK(out == "GET /api/x?q=" + kTok + " HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " +
                   "s3cr3t-value\r\nX-Key: as3cr3t-valueb\r\nX-Other: " + kOther + "\r\n\r\n");
  CHECK(r.resolved == std::vector<std::string>{"TOKEN GET /api/x?q=" + kTok});  // once
  CHECK(r.strays.size() == 1);
  CHECK(r.rw.requests() == 1);
  CHECK(r.rw.swaps() == 1);
}

TEST_CASE("rewrite: Basic credentials are decoded, swapped and encoded again") {
  Rig r;
  std::string creds = base64::encode("x-access-token:" + kTok);
  std::string out =
      r.run("GET /repo.git/info/refs HTTP/1.1\r\nAuthorization: Basic " + creds + "\r\n\r\n");
  CHECK(out == "GET /repo.git/info/refs HTTP/1.1\r\nAuthorization: Basic " +
                   base64::encode("x-access-token:s3cr3t-value") + "\r\n\r\n");
  // Basic credentials without a placeholder pass unchanged.
  std::string plain =
      "GET / HTTP/1.1\r\nAuthorization: Basic " + base64::encode("u:p") + "\r\n\r\n";
  CHECK(r.run(plain) == plain);
}

TEST_CASE("rewrite: bodies, chunks and keep-alive pass as they came, byte by byte too") {
  std::string body = "{\"token\":\"" + kTok + "\"}";  // bodies are not rewritten
  std::string in = "POST /a HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
                   "\r\nAuthorization: Bearer " + kTok + "\r\n\r\n" + body +
                   "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\nX-T: " + kTok +
                   "\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: " + kTok + "\r\n\r\n" +
                   "GET /c HTTP/1.1\r\nX-T: " + kTok + "\r\n\r\n";
  std::string want = in;
  for (size_t at; (at = want.find("Bearer " + kTok)) != std::string::npos;)
    want.replace(at + 7, kTok.size(), "s3cr3t-value");
  for (size_t at; (at = want.find("X-T: " + kTok)) != std::string::npos;)
    want.replace(at + 5, kTok.size(), "s3cr3t-value");
  for (size_t step : {size_t(0), size_t(1), size_t(7)}) {
    Rig r;
    CHECK(r.run(in, step) == want);
    CHECK(r.rw.requests() == 3);
    CHECK(r.resolved.size() == 3);  // one use per request that carried it
  }
}

TEST_CASE("rewrite: after an Upgrade request the stream is opaque") {
  Rig r;
  std::string in = "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
  std::string frames = "\x81\x05" + kTok + "GET / HTTP/1.1\r\n\r\n";
  CHECK(r.run(in + frames) == in + frames);
  CHECK(r.rw.requests() == 1);
}

TEST_CASE("rewrite: refusals end the connection") {
  auto refused = [](const std::string& in, size_t max_head = RequestRewriter::kMaxHead) {
    Rig r(max_head);
    SecretBytes out;
    try {
      r.rw.feed(in, out);
    } catch (const RewriteError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(
      refused("GET / HTTP/1.1\r\nX: " + std::string(200, 'a') + "\r\n\r\n", 64).find("head over") !=
      std::string::npos);
  CHECK(refused("GET / HTTP/1.1\r\nX: " + std::string(200, 'a'), 64).find("head over") !=
        std::string::npos);  // no end in sight
  CHECK(refused("GET / HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n").find("folded") != std::string::npos);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
            .find("both") != std::string::npos);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n")
            .find("two different") != std::string::npos);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n").find("Content-Length") !=
        std::string::npos);
  CHECK(refused("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").find("HTTP/1.x") != std::string::npos);
  CHECK(refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").find("chunk size") !=
        std::string::npos);
  CHECK(refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").find("chunked last") !=
        std::string::npos);
  Rig spent;
  spent.refuse = true;
  SecretBytes out;
  CHECK_THROWS_AS(
      spent.rw.feed("GET / HTTP/1.1\r\nAuthorization: Bearer " + kTok + "\r\n\r\n", out),
      RewriteError);
}

// Unit tests for mcp/jsonrpc: what each kind of line decodes to (request, notification,
// response) and which error object the rest get (-32700 for text that is not JSON; -32600 for a
// batch, a wrong version, a bad id, method or params), the replies' encoding, and LineReader:
// lines split across reads, CRLF, a last line without a newline, and lines past the bound
// dropped without being held (the next line still read).
#include <doctest/doctest.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "mcp/jsonrpc.h"
#include "util/fd.h"
#include "util/json.h"

using namespace space;
using namespace space::mcp;

TEST_CASE("jsonrpc decode: requests, notifications and responses") {
  Decoded d = decode(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"x"}})");
  REQUIRE(d.message);
  CHECK(d.message->kind == Message::Kind::Request);
  CHECK(d.message->id.as_int() == 7);
  CHECK(d.message->method == "tools/list");
  CHECK(d.message->params.at("cursor").as_string() == "x");

  d = decode(R"({"jsonrpc":"2.0","id":"a-1","method":"ping"})");
  REQUIRE(d.message);
  CHECK(d.message->id.as_string() == "a-1");
  CHECK(d.message->params.is_null());

  d = decode(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  REQUIRE(d.message);
  CHECK(d.message->kind == Message::Kind::Notification);

  d = decode(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  REQUIRE(d.message);
  CHECK(d.message->kind == Message::Kind::Response);
}

TEST_CASE("jsonrpc decode: the spec's error for each malformed line") {
  auto code_of = [](const char* line) {
    Decoded d = decode(line);
    REQUIRE(d.error);
    CHECK_FALSE(d.message);
    return d.error->code;
  };
  CHECK(code_of("{") == kParseError);
  CHECK(code_of("hello") == kParseError);
  CHECK(code_of(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])") == kInvalidRequest);
  CHECK(code_of("42") == kInvalidRequest);
  CHECK(code_of(R"({"id":1,"method":"ping"})") == kInvalidRequest);
  CHECK(code_of(R"({"jsonrpc":"1.0","id":1,"method":"ping"})") == kInvalidRequest);
  CHECK(code_of(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})") == kInvalidRequest);
  CHECK(code_of(R"({"jsonrpc":"2.0","id":{},"method":"ping"})") == kInvalidRequest);
  CHECK(code_of(R"({"jsonrpc":"2.0","id":1,"method":""})") == kInvalidRequest);
  CHECK(code_of(R"({"jsonrpc":"2.0","id":1,"method":5})") == kInvalidRequest);
  CHECK(code_of(R"({"jsonrpc":"2.0","id":1,"method":"x","params":"s"})") == kInvalidRequest);
  CHECK(code_of(R"({"jsonrpc":"2.0","id":1})") == kInvalidRequest);
  // The reply goes to the request's id when it could be read.
  Decoded d = decode(R"({"jsonrpc":"2.0","id":9,"method":"x","params":3})");
  REQUIRE(d.error);
  CHECK(d.error->id.as_int() == 9);
  CHECK(decode(R"({"jsonrpc":"2.0","id":[1],"method":"x"})").error->id.is_null());
  // Nesting past the bound is a parse error, not a stack overflow.
  std::string deep(100000, '[');
  CHECK(code_of(deep.c_str()) == kParseError);
}

TEST_CASE("jsonrpc encoders") {
  CHECK(encode_result(1, json::Value::object()) == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK(encode_error(nullptr, kParseError, "bad") ==
        R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}})");
  CHECK(encode_error("x", kInvalidParams, "m", json::Value("d")) ==
        R"({"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"m","data":"d"}})");
}

namespace {
// Writes `text` into a pipe from a thread, in pieces of `chunk` bytes, and closes it.
struct Feed {
  Pipe p = Pipe::make();
  std::thread t;
  Feed(std::string text, size_t chunk) {
    t = std::thread([this, text = std::move(text), chunk] {
      Fd w = std::move(p.write);
      for (size_t i = 0; i < text.size(); i += chunk)
        write_all(w.get(), text.data() + i, std::min(chunk, text.size() - i));
    });
  }
  ~Feed() { t.join(); }
};
}  // namespace

TEST_CASE("LineReader: lines across reads, CRLF, and a last line without a newline") {
  Feed f("one\r\ntwo\n\nthree", 2);
  LineReader r(f.p.read.get(), 100);
  std::string line;
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line == "one");
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line == "two");
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line.empty());
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line == "three");
  CHECK(r.next(line) == LineReader::Status::End);
}

TEST_CASE("LineReader: a line past the bound is dropped whole, and reading goes on") {
  std::string big(1 << 20, 'x');
  Feed f("short\n" + big + "\nafter\n" + std::string(20, 'y') + "\n" + big, 4096);
  LineReader r(f.p.read.get(), 16);
  std::string line;
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line == "short");
  CHECK_FALSE(r.has_line());
  CHECK(r.next(line) == LineReader::Status::TooLong);
  CHECK(line.empty());
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line == "after");
  CHECK(r.next(line) == LineReader::Status::TooLong);  // 20 > 16, newline in the same read
  CHECK(r.next(line) == LineReader::Status::TooLong);  // the endless last line
  CHECK(r.next(line) == LineReader::Status::End);
}

TEST_CASE("LineReader: exactly at the bound is a line; has_line sees buffered lines") {
  Feed f("0123456789abcdef\na\nb\n", 64);
  LineReader r(f.p.read.get(), 16);
  std::string line;
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line == "0123456789abcdef");
  CHECK(r.has_line());  // "a\nb\n" came in the same read
  CHECK(r.next(line) == LineReader::Status::Line);
  CHECK(line == "a");
}

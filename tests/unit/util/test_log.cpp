// Unit tests for util/log: the level names (one list: what parse_level takes, what each line
// shows, what a bad level's hint offers), the level filter, and the text and JSON line forms.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "util/error.h"
#include "util/fd.h"
#include "util/log.h"

using namespace space;

namespace {

// Configures the sink to a pipe for one case and reads what it got; back to the default after.
struct Captured {
  Fd rd, wr;
  Captured(log::Level level, log::Format format) {
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
    rd = Fd(p[0]);
    wr = Fd(p[1]);
    log::configure(level, format, wr.get());
  }
  ~Captured() { log::configure(log::Level::Warn, log::Format::Text, 2); }
  std::string text() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(rd.get(), buf, sizeof buf)) > 0) out.append(buf, size_t(n));
    return out;
  }
};

}  // namespace

TEST_CASE("log: each level name parses to its level, and lines show it") {
  const auto& names = log::level_names();
  REQUIRE(names.size() == 4);
  CHECK(names[0] == "debug");
  CHECK(names[3] == "error");
  Captured c(log::Level::Debug, log::Format::Text);
  for (size_t i = 0; i < names.size(); i++) {
    const log::Level l = log::parse_level(names[i]);
    CHECK(static_cast<size_t>(l) == i);
    log::write(l, "message " + names[i]);
  }
  const std::string out = c.text();
  for (const auto& n : names)
    CHECK(out.find(" " + n + " message " + n + "\n") != std::string::npos);
}

TEST_CASE("log: a bad level is refused, and the hint lists the names") {
  CHECK_THROWS_WITH_AS(log::parse_level("verbose"),
                       doctest::Contains("invalid log level 'verbose'"), Error);
  try {
    log::parse_level("INFO");
    FAIL("parse_level took INFO");
  } catch (const Error& e) {
    CHECK(e.hint() == "use one of debug, info, warn, error");
  }
}

TEST_CASE("log: lines below the level are dropped; JSON lines carry the level's name") {
  Captured c(log::Level::Warn, log::Format::Json);
  CHECK_FALSE(log::enabled(log::Level::Info));
  CHECK(log::enabled(log::Level::Error));
  log::info("not shown");
  log::warn("a \"quoted\" warning");
  const std::string out = c.text();
  CHECK(out.find("not shown") == std::string::npos);
  CHECK(out.find("\"level\":\"warn\",\"msg\":\"a \\\"quoted\\\" warning\"") != std::string::npos);
}

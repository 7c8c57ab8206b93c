// Unit tests for util/capped_writer (files a guest can make us write: restarted with a marker
// at the limit, the newest bytes kept, pipes dropping what is over) and log::Throttle (the rate
// limit on warnings a guest can provoke).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "support/temp_dir.h"
#include "util/capped_writer.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"

using namespace space;

namespace {

// The restart count a capped file's marker line shows; 0 without a marker.
uint64_t restart_of(const std::string& text) {
  const std::string key = " bytes (restart ";
  if (text.rfind("[space: ", 0) != 0) return 0;
  size_t at = text.find(key);
  REQUIRE(at != std::string::npos);
  return std::stoull(text.substr(at + key.size()));
}

}  // namespace

TEST_CASE("a capped file restarts with a marker and keeps the newest bytes") {
  test::TempDir dir("capped");
  std::string path = dir.path + "/log";
  fs::write_file_atomic(path, std::string(100, 'o'));  // what an earlier run left counts
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  REQUIRE(fd);
  CappedWriter w(fd.get(), 1000);
  CHECK(w.size() == 100);
  w.write(std::string(800, 'a'));
  CHECK(fs::read_file(path).size() == 900);
  CHECK(restart_of(fs::read_file(path)) == 0);
  w.write(std::string(200, 'b'));  // over: restart
  std::string text = fs::read_file(path);
  CHECK(restart_of(text) == 1);
  CHECK(text.rfind("[space: this log reached its limit of 1000 bytes (restart 1);", 0) == 0);
  CHECK(text.size() == w.size());
  CHECK(text.substr(text.size() - 200) == std::string(200, 'b'));
  CHECK(text.find("aaa") == std::string::npos);  // the older output is gone
  SUBCASE("one write larger than the limit keeps its tail") {
    std::string big = std::string(5000, 'x') + "the end";
    w.write(big);
    text = fs::read_file(path);
    CHECK(text.size() == 1000);
    CHECK(text.substr(text.size() - 7) == "the end");
  }
  SUBCASE("small writes never pass the limit, however many restarts they cause") {
    const uint64_t before = restart_of(fs::read_file(path));
    for (int i = 0; i < 50000; i++) {
      w.write("z");
      if (i % 997 == 0) REQUIRE(fs::read_file(path).size() <= 1000);
    }
    CHECK(fs::read_file(path).size() <= 1000);
    CHECK(restart_of(fs::read_file(path)) - before >=
          40);  // each restart frees the room for fewer than 1000 more
  }
}

TEST_CASE("a capped pipe drops what is over the limit") {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
  Fd r(p[0]), wfd(p[1]);
  CappedWriter w(wfd.get(), 10);
  w.write("12345");
  w.write("678901");  // would pass 10: dropped
  w.write("ab");
  char buf[64];
  ssize_t n = ::read(r.get(), buf, sizeof buf);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<size_t>(n)) == "12345ab");
}

TEST_CASE("log::Throttle lets a burst through, then one line per period, and counts the rest") {
  log::Throttle t(3, 1000);
  uint64_t before = 99;
  CHECK(t.admit(5000, before));
  CHECK(before == 0);
  CHECK(t.admit(5000, before));
  CHECK(t.admit(5001, before));
  for (int i = 0; i < 1000; i++) CHECK_FALSE(t.admit(5500, before));
  CHECK(t.admit(6000, before));  // one period later: one token
  CHECK(before == 1000);
  CHECK_FALSE(t.admit(6100, before));
  CHECK(t.admit(60000, before));  // a long quiet time refills at most the burst
  CHECK(before == 1);
  CHECK(t.admit(60000, before));
  CHECK(t.admit(60000, before));
  CHECK_FALSE(t.admit(60000, before));
}

// util/json_lines: times in RFC 3339 with milliseconds, appended lines read back in order, a
// missing file read as empty, a broken line named with its file and number, and mode 0600; a
// bounded log rotated to one older generation, never past its bound, whose marker counts the
// lines it dropped, and read back oldest first.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_lines.h"

using namespace space;

TEST_CASE("rfc3339_ms") {
  CHECK(jsonl::rfc3339_ms(0) == "1970-01-01T00:00:00.000Z");
  CHECK(jsonl::rfc3339_ms(1'764'619'200'123) == "2025-12-01T20:00:00.123Z");
}

TEST_CASE("append and read back") {
  test::TempDir d("jsonl");
  std::string path = d.path + "/a.log";
  CHECK(jsonl::read(path).empty());
  for (int i = 0; i < 3; i++) {
    json::Value o = json::Value::object();
    o.set("n", i);
    o.set("text", std::string("line\n") + std::to_string(i));
    jsonl::append(path, o);
  }
  auto all = jsonl::read(path);
  REQUIRE(all.size() == 3);
  CHECK(all[2].at("n").as_int() == 2);
  CHECK(all[1].at("text").as_string() == "line\n1");
  CHECK(fs::read_file(path).find("\n\n") == std::string::npos);  // one object per line
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  fs::write_file_atomic(path, fs::read_file(path) + "{broken\n", 0600);
  try {
    jsonl::read(path);
    FAIL("a broken line was read");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(path + " line 4") != std::string::npos);
  }
}

TEST_CASE("a bounded log: rotated to <path>.1 at its bound, the lines dropped counted") {
  test::TempDir d("jsonl");
  std::string path = d.path + "/b.log";
  const std::string prev = jsonl::previous(path);
  CHECK(prev == path + ".1");
  auto count_lines = [](const std::string& p) {
    uint64_t n = 0;
    if (fs::exists(p))
      for (char c : fs::read_file(p)) n += c == '\n';
    return n;
  };
  jsonl::Bound bound{1024, [](uint64_t dropped) {
                       json::Value m = json::Value::object();
                       m.set("rotated", true);
                       m.set("dropped", dropped);
                       return m;
                     }};
  int rotations = 0;
  for (int i = 0; i < 500; i++) {
    json::Value o = json::Value::object();
    o.set("n", i);
    o.set("pad", std::string(size_t(i % 40), 'x'));
    const uint64_t in_prev = count_lines(prev);  // what a rotation now would drop
    if (jsonl::append(path, o, bound)) {
      rotations++;
      auto cur = jsonl::read(path);
      REQUIRE(cur.size() == 2);  // the marker, then the line
      CHECK(cur[0].at("rotated").as_bool());
      CHECK(uint64_t(cur[0].at("dropped").as_int()) == in_prev);
    }
    CHECK(fs::read_file(path).size() <= 1024);
    if (fs::exists(prev)) CHECK(fs::read_file(prev).size() <= 1024);
  }
  CHECK(rotations > 10);
  // Oldest first and in order, across the two generations; the newest line is last.
  auto all = jsonl::read_generations(path);
  int64_t last = -1;
  for (const auto& v : all) {
    if (v.find("rotated")) continue;
    const int64_t n = v.at("n").as_int();
    if (last >= 0) CHECK(n == last + 1);
    last = n;
  }
  CHECK(last == 499);
  struct stat st {};
  REQUIRE(::stat(prev.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  // A line that cannot fit even a new generation is refused, not written past the bound.
  json::Value huge = json::Value::object();
  huge.set("pad", std::string(2000, 'y'));
  CHECK_THROWS_AS(jsonl::append(path, huge, bound), Error);
  CHECK(fs::read_file(path).size() <= 1024);
  // Without a bound: a plain append.
  CHECK_FALSE(jsonl::append(d.path + "/c.log", huge, jsonl::Bound{}));
}

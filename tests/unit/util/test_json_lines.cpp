// util/json_lines: times in RFC 3339 with milliseconds, appended lines read back in order, a
// missing file read as empty, a broken line named with its file and number, and mode 0600.
#include <doctest/doctest.h>
#include <sys/stat.h>

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

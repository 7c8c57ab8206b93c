// Unit tests for store/toml_fields: the strict readers shared by config.toml and template.toml.
// Each error is "<source>: <key>: <why>" and carries the file's hint.
#include <doctest/doctest.h>
#include <toml++/toml.h>

#include <string>

#include "store/toml_fields.h"
#include "util/error.h"

using namespace space;
using space::store::TomlFields;

namespace {

const TomlFields kFields{"f.toml", "fix f.toml"};

// The node for `key` in `text` (kept alive with the table).
struct Doc {
  toml::table t;
  explicit Doc(std::string_view text) : t(toml::parse(text)) {}
  const toml::node& at(const char* key) const { return *t.get(key); }
};

// What `read` throws: the message, after checking the hint.
template <class F>
std::string error_of(F read) {
  try {
    read();
  } catch (const Error& e) {
    CHECK(e.hint() == "fix f.toml");
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("TomlFields::uint: an integer within its range") {
  Doc d("a = 1\nb = 64\nc = 0\nd = 65\ne = -3\nf = 1.0\ng = \"2\"\nh = 99999999999\n");
  CHECK(kFields.uint(d.at("a"), "a", 1, 64) == 1u);
  CHECK(kFields.uint(d.at("b"), "b", 1, 64) == 64u);
  CHECK(error_of([&] { kFields.uint(d.at("c"), "c", 1, 64); }) ==
        "f.toml: c: 0 is out of range 1..64");
  CHECK(error_of([&] { kFields.uint(d.at("d"), "d", 1, 64); }) ==
        "f.toml: d: 65 is out of range 1..64");
  CHECK(error_of([&] { kFields.uint(d.at("e"), "e", 1, 64); }) ==
        "f.toml: e: -3 is out of range 1..64");
  CHECK(error_of([&] { kFields.uint(d.at("f"), "f", 1, 64); }) == "f.toml: f: expected an integer");
  CHECK(error_of([&] { kFields.uint(d.at("g"), "g", 1, 64); }) == "f.toml: g: expected an integer");
  CHECK(error_of([&] { kFields.uint(d.at("h"), "h", 0, 0xffffffffu); }) ==
        "f.toml: h: 99999999999 is out of range 0..4294967295");
}

TEST_CASE("TomlFields::str and path: non-empty strings, absolute paths") {
  Doc d("s = \"x y\"\nempty = \"\"\nn = 3\nabs = \"/k/vmlinux\"\nrel = \"k/vmlinux\"\n");
  CHECK(kFields.str(d.at("s"), "s") == "x y");
  CHECK(error_of([&] { kFields.str(d.at("empty"), "empty"); }) ==
        "f.toml: empty: expected a non-empty string");
  CHECK(error_of([&] { kFields.str(d.at("n"), "n"); }) == "f.toml: n: expected a non-empty string");
  CHECK(kFields.path(d.at("abs"), "abs") == "/k/vmlinux");
  CHECK(error_of([&] { kFields.path(d.at("rel"), "rel"); }) ==
        "f.toml: rel: expected an absolute path");
  CHECK(error_of([&] { kFields.path(d.at("empty"), "empty"); }) ==
        "f.toml: empty: expected an absolute path");
  CHECK(error_of([&] { kFields.path(d.at("n"), "n"); }) == "f.toml: n: expected a string");
}

TEST_CASE("TomlFields::bad names the source and the key") {
  CHECK(error_of([] { kFields.bad("defaults.cpus", "no good"); }) ==
        "f.toml: defaults.cpus: no good");
}

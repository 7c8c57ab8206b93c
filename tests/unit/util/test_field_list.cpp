// Unit tests for util/field_list.h: SPACE_FIELDS visits every entry in order, by its member's
// name, passes a parenthesised entry's options on, and works on a const struct.
#include <doctest/doctest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "util/field_list.h"

namespace {

struct Opt {
  int n;
};

struct Sample {
  int first = 1;
  std::string second = "two";
  int third = 3;
  SPACE_FIELDS(first, (second, Opt{7}), third);
};

struct Seen {
  std::vector<std::string> names;
  std::vector<int> options;  // the Opt's n, or -1 for an entry without one
  std::string text;
  void operator()(const char* name, const int& v) {
    names.push_back(name);
    options.push_back(-1);
    text += std::to_string(v) + ";";
  }
  void operator()(const char* name, const std::string& v, Opt o) {
    names.push_back(name);
    options.push_back(o.n);
    text += v + ";";
  }
};

}  // namespace

TEST_CASE("SPACE_FIELDS visits each member in order, with its own name and options") {
  const Sample s;
  Seen seen;
  Sample::fields(s, seen);
  CHECK(seen.names == std::vector<std::string>{"first", "second", "third"});
  CHECK(seen.options == std::vector<int>{-1, 7, -1});
  CHECK(seen.text == "1;two;3;");
}

TEST_CASE("SPACE_FIELDS hands a non-const struct's members out by reference") {
  Sample s;
  auto bump = [](const char*, auto& v, auto...) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, int>) v += 10;
  };
  Sample::fields(s, bump);
  CHECK(s.first == 11);
  CHECK(s.third == 13);
  CHECK(s.second == "two");
}

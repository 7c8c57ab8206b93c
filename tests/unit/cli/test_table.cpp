// Unit tests for cli/table: columns padded to their widest cell plus three spaces, no padding
// after the last cell of a row, rows of different lengths, and empty input; print_pairs' padded
// keys; print_list's table or JSON array.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cli/table.h"

using space::cli::format_table;

namespace {

// What `print` writes on stdout (fd 1 redirected to a temporary file meanwhile).
std::string stdout_of(const std::function<void()>& print) {
  std::fflush(stdout);
  char path[] = "/tmp/space-table-XXXXXX";
  int file = ::mkstemp(path);
  REQUIRE(file >= 0);
  ::unlink(path);
  int saved = ::dup(1);
  ::dup2(file, 1);
  print();
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  std::string out;
  char buf[4096];
  ssize_t n;
  ::lseek(file, 0, SEEK_SET);
  while ((n = ::read(file, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  ::close(file);
  return out;
}

struct Item {
  std::string name;
  int size;
};

}  // namespace

TEST_CASE("format_table aligns columns to the widest cell, three spaces apart") {
  CHECK(format_table({{"ID", "STATUS", "CREATED"},
                      {"sandbox-1", "running", "2025-01-31T12:00:00Z"},
                      {"b", "stopped", "x"}}) ==
        "ID          STATUS    CREATED\n"
        "sandbox-1   running   2025-01-31T12:00:00Z\n"
        "b           stopped   x\n");
  // The last cell is never padded, even when a longer one sits above it.
  CHECK(format_table({{"a", "long cell"}, {"bb", "c"}}) == "a    long cell\nbb   c\n");
}

TEST_CASE("format_table: short rows, empty cells and no rows") {
  CHECK(format_table({}) == "");
  CHECK(format_table({{}}) == "\n");
  CHECK(format_table({{"only"}}) == "only\n");
  CHECK(format_table({{"NAME", "SIZE", "NOTE"}, {"x"}, {"yy", ""}}) ==
        "NAME   SIZE   NOTE\n"
        "x\n"
        "yy     \n");
  CHECK(format_table({{"", "b"}, {"aaa", ""}}) == "      b\naaa   \n");
}

TEST_CASE("print_pairs pads each key and its colon to the width") {
  CHECK(stdout_of([] {
          space::cli::print_pairs({{"name", "t1"}, {"snapshot format", "3"}}, 12);
        }) ==
        "name:        t1\n"
        "snapshot format: 3\n");
}

TEST_CASE("print_list: a table of the header and one row per item, or a JSON array") {
  std::vector<Item> items = {{"a", 1}, {"bbb", 22}};
  auto to_json = [](const Item& i) {
    space::json::Value v = space::json::Value::object();
    v.set("name", i.name);
    v.set("size", i.size);
    return v;
  };
  auto row = [](const Item& i) -> std::vector<std::string> {
    return {i.name, std::to_string(i.size)};
  };
  CHECK(stdout_of([&] {
          space::cli::print_list(false, items, to_json, {"NAME", "SIZE"}, row);
        }) ==
        "NAME   SIZE\n"
        "a      1\n"
        "bbb    22\n");
  CHECK(stdout_of([&] { space::cli::print_list(true, items, to_json, {"NAME"}, row, 0); }) ==
        "[{\"name\":\"a\",\"size\":1},{\"name\":\"bbb\",\"size\":22}]\n");
  // No items: the header alone, or an empty array.
  CHECK(stdout_of([&] {
          space::cli::print_list(false, std::vector<Item>{}, to_json, {"NAME"}, row);
        }) == "NAME\n");
  CHECK(stdout_of([&] {
          space::cli::print_list(true, std::vector<Item>{}, to_json, {"NAME"}, row, 0);
        }) == "[]\n");
}

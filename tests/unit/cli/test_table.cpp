// Unit tests for cli/table: columns padded to their widest cell plus three spaces, no padding
// after the last cell of a row, rows of different lengths, and empty input.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/table.h"

using space::cli::format_table;

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

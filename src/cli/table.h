// How list-style and inspect-style commands print: plain-text tables (left-aligned columns
// separated by three spaces, the first row being the header), "key: value" lines, and the one
// JSON-or-table choice every list command makes (print_list).
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli/app.h"
#include "util/json.h"

namespace space::cli {

// The rows as aligned lines, each ending in a newline.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

// Prints "key:" padded to `width`, a space and the value, one line per pair (inspect's text).
void print_pairs(const std::vector<std::pair<std::string, std::string>>& pairs, int width);

// A list command's output: with `json`, an array of to_json(item) (pretty with `indent` spaces,
// or one line with 0); otherwise a table of `header`, then row(item) for each item.
template <class T, class ToJson, class Row>
void print_list(bool json, const std::vector<T>& items, ToJson to_json,
                std::vector<std::string> header, Row row, int indent = 2) {
  if (json) {
    json::Value arr = json::Value::array();
    for (const auto& item : items) arr.push_back(to_json(item));
    print_json(arr, indent);
    return;
  }
  std::vector<std::vector<std::string>> rows{std::move(header)};
  for (const auto& item : items) rows.push_back(row(item));
  std::printf("%s", format_table(rows).c_str());
}

}  // namespace space::cli

// Table formatting; see table.h.
#include "cli/table.h"

#include <algorithm>
#include <cstdio>

namespace space::cli {

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (size_t i = 0; i < r.size(); i++) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); i++) {
      out += r[i];
      if (i + 1 < r.size()) out.append(width[i] - r[i].size() + 3, ' ');
    }
    out += '\n';
  }
  return out;
}

void print_pairs(const std::vector<std::pair<std::string, std::string>>& pairs, int width) {
  for (const auto& [k, v] : pairs) std::printf("%-*s %s\n", width, (k + ":").c_str(), v.c_str());
}

}  // namespace space::cli

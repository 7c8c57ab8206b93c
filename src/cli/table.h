// Plain-text tables for list-style commands: left-aligned columns separated by three spaces,
// the first row being the header.
#pragma once
#include <string>
#include <vector>

namespace space::cli {

// The rows as aligned lines, each ending in a newline.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace space::cli

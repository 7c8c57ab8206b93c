// The CLI's error printer; see errors.h.
#include "cli/errors.h"

#include <cstdio>

#include "util/error.h"

namespace space::cli {

void print_error(const std::exception& e) {
  std::fprintf(stderr, "space: error: %s\n", e.what());
  if (const auto* se = dynamic_cast<const Error*>(&e); se && !se->hint().empty())
    std::fprintf(stderr, "hint: %s\n", se->hint().c_str());
}

void print_usage_error(const std::string& what) {
  std::fprintf(stderr, "space: error: %s\n", what.c_str());
  std::fprintf(stderr, "hint: run 'space --help' or 'space <command> --help'\n");
}

}  // namespace space::cli

// The CLI's error printer; see errors.h.
#include "cli/errors.h"

#include <cstdio>

#include "util/error.h"
#include "util/utf8.h"

namespace space::cli {

void print_error(const std::exception& e) {
  std::fprintf(stderr, "space: error: %s\n", utf8::printable(e.what()).c_str());
  if (const auto* se = dynamic_cast<const Error*>(&e); se && !se->hint().empty())
    std::fprintf(stderr, "hint: %s\n", utf8::printable(se->hint()).c_str());
}

void print_usage_error(const std::string& what) {
  std::fprintf(stderr, "space: error: %s\n", utf8::printable(what).c_str());
  std::fprintf(stderr, "hint: run 'space --help' or 'space <command> --help'\n");
}

}  // namespace space::cli

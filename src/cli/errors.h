// How the CLI reports errors: one printer for every error message ("space: error: <what>", then
// "hint: <fix>" when there is one) and exit code 125 for errors of space itself. main() catches
// once and uses it; commands that act on several items (destroy, template rm) use each_item() so
// that one failure neither hides the others nor stops them.
#pragma once
#include <exception>
#include <string>
#include <vector>

#include "cli/app.h"

namespace space::cli {

// The exit code of an error of space itself (as opposed to the guest command's own code).
constexpr int kExitSpaceError = 125;

// Prints `e` to stderr in the CLI's error format, with its hint when it is a space::Error.
void print_error(const std::exception& e);
// Prints a command-line parse error (`what`) and the hint to run --help.
void print_usage_error(const std::string& what);

// Runs `fn(item)` for each item. With one item, its error propagates (main prints it). With
// several, each failure is printed at once, the rest still run, and the command exits 125.
template <class F>
void each_item(const std::vector<std::string>& items, GlobalOptions& g, F&& fn) {
  if (items.size() == 1) return fn(items[0]);
  for (const auto& item : items) {
    try {
      fn(item);
    } catch (const std::exception& e) {
      print_error(e);
      g.exit_code = kExitSpaceError;
    }
  }
}

}  // namespace space::cli

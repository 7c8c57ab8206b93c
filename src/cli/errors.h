// How the CLI reports errors: one printer for every error message ("space: error: <what>", then
// "hint: <fix>" when there is one) and exit code 125 for errors of space itself. main() catches
// once and uses it; commands that act on several items (destroy, template rm) use each_item() so
// that one failure neither hides the others nor stops them.
#pragma once
#include <CLI/CLI.hpp>
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

// Runs `parse` (which builds and parses `app` and returns the exit code) as main does: --help
// and --version print and exit 0 through CLI11, a command-line error goes to `usage_error` and
// any other to `error`, each returning the exit code.
template <class Parse, class UsageError, class OtherError>
int parse_and_run(CLI::App& app, Parse&& parse, UsageError&& usage_error, OtherError&& error) {
  try {
    return parse();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(std::string(e.what()));
  } catch (const std::exception& e) {
    return error(e);
  }
}

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

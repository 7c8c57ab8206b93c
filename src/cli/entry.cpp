// The whole program behind main(): parses the command line (space's own, or runc's for container
// engines), runs one command, and is the single place that catches errors: they are printed as
// "space: error: <what>: <why>" (plus a hint line) and turned into exit code 125. Commands that
// run a guest process return its exit code instead. src/main.cpp calls it, and so does
// jail-bench for the `__vmm` processes its launches start (tests/programs/jail_bench.cpp).
#include "cli/entry.h"

#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.h"
#include "cli/errors.h"
#include "cli/oci_app.h"
#include "util/log.h"

namespace space::cli {

int main_entry(int argc, char** argv) {
  // runc's grammar, for container engines: only as space-oci or after --oci (cli/oci_app.h).
  if (oci_invocation(argc, argv)) return run_oci(argc, argv);
  CLI::App app{"space: run untrusted code in KVM microVMs", "space"};
  GlobalOptions g;
  return parse_and_run(
      app,
      [&] {
        build_app_for(app, g, argc, argv);
        app.parse_complete_callback([&] {
          log::configure(log::parse_level(g.log_level), log::parse_format(g.log_format));
        });
        app.parse(argc, argv);
        return g.exit_code;
      },
      [](const std::string& what) {
        print_usage_error(what);
        return kExitSpaceError;
      },
      [](const std::exception& e) {
        print_error(e);
        return kExitSpaceError;
      });
}

}  // namespace space::cli

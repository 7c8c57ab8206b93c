// space: entry point. Parses the command line (space's own, or runc's for container engines), runs
// one command, and is the single place that catches errors: they are printed as "space: error:
// <what>: <why>" (plus a hint line) and turned into exit code 125. Commands that run a guest
// process return its exit code instead.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/app.h"
#include "cli/errors.h"
#include "cli/oci_app.h"
#include "util/log.h"

int main(int argc, char** argv) {
  // runc's grammar, for container engines: only as space-oci or after --oci (cli/oci_app.h).
  if (space::cli::oci_invocation(argc, argv)) return space::cli::run_oci(argc, argv);
  CLI::App app{"space: run untrusted code in KVM microVMs", "space"};
  space::cli::GlobalOptions g;
  try {
    space::cli::build_app_for(app, g, argc, argv);
    app.parse_complete_callback([&] {
      space::log::configure(space::log::parse_level(g.log_level),
                            space::log::parse_format(g.log_format));
    });
    app.parse(argc, argv);
    return g.exit_code;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    space::cli::print_usage_error(e.what());
    return space::cli::kExitSpaceError;
  } catch (const std::exception& e) {
    space::cli::print_error(e);
    return space::cli::kExitSpaceError;
  }
}

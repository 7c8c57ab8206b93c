// `space check`: reports whether this host can run sandboxes and what to fix; exit 0 if it can,
// 125 otherwise.
#include <cstdio>

#include "cli/app.h"
#include "report/host_check.h"
#include "util/error.h"

namespace space::cli {

void register_check(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "check", "Check that this host can run sandboxes");
  cmd->callback([&g] {
    auto r = report::check_host(g.context());
    if (g.json())
      print_json(report::host_report_json(r), 2);
    else
      std::printf("%s", report::host_report_text(r).c_str());
    std::fflush(stdout);
    if (!r.usable())
      fail("this host cannot run sandboxes yet (" + std::to_string(r.problems.size()) + " problem" +
               (r.problems.size() == 1 ? "" : "s") + ")",
           "fix the problems listed above");
  });
}

}  // namespace space::cli

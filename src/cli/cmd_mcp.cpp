// `space mcp [--sandbox ID] [--allow TOOL,...] [--max-output BYTES]`: a Model Context Protocol
// server on stdin/stdout (mcp/server.h), for an agent host to launch as a stdio server.
#include "cli/app.h"
#include "mcp/server.h"
#include "util/size.h"

namespace space::cli {

namespace {
struct McpFlags {
  std::string sandbox;
  std::vector<std::string> allow;
  std::string max_output = "256K";
};
}  // namespace

void register_mcp(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(
      app, "mcp", "Serve the Model Context Protocol on stdin/stdout, for AI agents (space-mcp(1))");
  auto* f = g.hold<McpFlags>();
  cmd->add_option("--sandbox", f->sandbox,
                  "Expose only this existing sandbox: exec, write_file and read_file in it, and "
                  "no tool that creates, lists, pauses, branches or destroys sandboxes");
  cmd->add_option("--allow", f->allow,
                  "Offer only these tools (comma-separated): create, exec, write_file, "
                  "read_file, list, pause, resume, branch, destroy")
      ->delimiter(',');
  cmd->add_option("--max-output", f->max_output,
                  "Most bytes of stdout (and of stderr) an exec returns, and the largest file "
                  "write_file and read_file move, e.g. 64K, 1M (default 256K; a reply holds it "
                  "twice, and many clients refuse messages past 10 MiB)")
      ->capture_default_str();
  cmd->callback([&g, f] {
    mcp::ServerOptions o;
    o.tools.sandbox = f->sandbox;
    o.tools.allow = f->allow;
    o.tools.max_output = parse_size(f->max_output);
    if (o.tools.max_output == 0) fail("--max-output must be more than 0", "e.g. --max-output 1M");
    g.exit_code = mcp::serve(g.context(), o);
  });
}

}  // namespace space::cli

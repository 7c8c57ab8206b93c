// `space forward ID [ADDR:]HOST_PORT:GUEST_PORT... [--unix PATH:GUEST_PORT]...`: forwards host
// ports or Unix sockets into a sandbox in the foreground (ops/forward.h). Prints one "ADDR:PORT ->
// GUEST_PORT" line per forward on stdout once it listens (JSON objects with --format json), so that
// a script can read the port it got for HOST_PORT 0; a connection it could not carry is one line on
// stderr. Exits 0 on Ctrl-C or when the sandbox stops.
#include <cstdio>
#include <mutex>

#include "cli/app.h"
#include "ops/forward.h"
#include "util/json.h"
#include "util/utf8.h"

namespace space::cli {

namespace {
struct ForwardFlags {
  std::string id;
  std::vector<std::string> specs;
  std::vector<std::string> unix_specs;
  int max_connections = 256;
};
}  // namespace

void register_forward(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "forward",
                          "Forward host ports to ports in a sandbox (foreground; Ctrl-C ends it)");
  auto* f = g.hold<ForwardFlags>();  // freed with GlobalOptions
  cmd->add_option("id", f->id, "Sandbox id")->required();
  cmd->add_option("ports", f->specs,
                  "[ADDR:]HOST_PORT:GUEST_PORT: listen on ADDR (default 127.0.0.1; [IPV6] in "
                  "brackets) port HOST_PORT (0: any free one) and carry each connection to "
                  "127.0.0.1:GUEST_PORT in the guest (a port on 127.0.0.1 is open to every "
                  "local user: see --unix)");
  cmd->add_option("--unix", f->unix_specs,
                  "PATH:GUEST_PORT: listen on a Unix socket at PATH, mode 0600 (only its owner "
                  "and root can connect), instead of a TCP port; repeatable");
  cmd->add_option("--max-connections", f->max_connections,
                  "Connections carried at once, over all ports; more are closed (default 256)")
      ->check(CLI::Range(1, 4096));
  cmd->callback([&g, f] {
    store::Context ctx = g.context();
    ops::ForwardOptions o;
    for (const auto& s : f->specs) o.specs.push_back(ops::parse_forward_spec(s));
    for (const auto& s : f->unix_specs) o.specs.push_back(ops::parse_unix_forward_spec(s));
    o.max_connections = f->max_connections;
    static std::mutex out;
    o.on_listening = [&g](const std::string& line) {
      std::lock_guard<std::mutex> l(out);
      if (g.json()) {
        json::Value v = json::Value::object();
        v.set("forward", line);
        print_json(v);
      } else {
        std::printf("%s\n", line.c_str());
      }
      std::fflush(stdout);
    };
    o.on_error = [](const std::string& line) {
      std::lock_guard<std::mutex> l(out);
      std::fprintf(stderr, "space: forward %s\n", utf8::printable(line).c_str());
    };
    std::string why = ops::forward_ports(ctx, f->id, o);
    std::fprintf(stderr, "space: forward: %s\n", utf8::printable(why).c_str());
  });
}

}  // namespace space::cli

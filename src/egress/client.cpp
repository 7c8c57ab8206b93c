// Starting and nudging the network broker; see client.h.
#include "egress/client.h"

#include <cerrno>

#include "egress/paths.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/socket.h"

namespace space::egress {

proc::Child start_broker(const store::Context& ctx, int timeout_ms) {
  EgressPaths p = egress_paths(ctx.root);
  make_egress_dirs(p);
  std::vector<std::string> argv = {"/proc/self/exe",       "--root",
                                   fs::absolute(ctx.root), "--log-level",
                                   ctx.log_level,          "--log-format",
                                   ctx.log_format,         "__egress",
                                   "--ready-fd",           "3"};
  return daemon::start(argv, p.log, "the network broker", timeout_ms);
}

bool broker_running(const store::Context& ctx) {
  return daemon::running(egress_paths(ctx.root).lock);
}

void ensure_broker(const store::Context& ctx, int timeout_ms) {
  EgressPaths p = egress_paths(ctx.root);
  auto dl = net::Deadline::after_ms(timeout_ms);
  try {
    Fd fd = net::unix_connect(p.sock, dl);
    net::send_all(fd.get(), "sync\n", dl);
    auto line = net::read_line(fd.get(), dl, 256);
    if (line && *line == "ok") return;
    fail("the network broker answered \"" + line.value_or("") + "\" to sync");
  } catch (const Error& e) {
    if (e.err() != ENOENT && e.err() != ECONNREFUSED) throw;
  }
  start_broker(ctx, timeout_ms).release();
}

}  // namespace space::egress

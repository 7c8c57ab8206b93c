// Credential helper client and launcher; see client.h.
#include "cred/client.h"

#include <cerrno>

#include "cred/paths.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/socket.h"

namespace space::cred {

namespace {
constexpr int kStartTimeoutMs = 10'000;
constexpr int kCallTimeoutMs = 30'000;

bool nobody_there(const Error& e) {
  return e.err() == ENOENT || e.err() == ECONNREFUSED;
}
}  // namespace

proc::Child start_helper(const store::Context& ctx, const std::string& cred_dir, int timeout_ms) {
  CredPaths p = cred_paths_in(cred_dir);
  check_socket_paths(p.dir);
  make_cred_dir(p);
  std::vector<std::string> argv = {
      "/proc/self/exe", "--root",       fs::absolute(ctx.root), "--log-level",
      ctx.log_level,    "--log-format", ctx.log_format,         "__credd",
      "--cred-dir",     p.dir,          "--ready-fd",           "3"};
  return daemon::start(argv, p.log, "the credential helper", timeout_ms);
}

std::string cred_exchange(const store::Context& ctx, const proto::credd::Request& req) {
  CredPaths p = cred_paths(ctx.root);
  std::string what = "credential helper request " + std::string(proto::credd::op_name(req));
  try {
    Fd fd;
    for (int attempt = 0;; attempt++) {
      try {
        fd = net::unix_connect(p.sock, net::Deadline::after_ms(kCallTimeoutMs));
        break;
      } catch (const Error& e) {
        if (!nobody_there(e) || attempt >= 3) throw;
      }
      if (attempt == 0) {
        log::debug("starting the credential helper for " + p.dir);
        start_helper(ctx, p.dir, kStartTimeoutMs).release();
      } else {
        net::sleep_ms(200 * attempt, net::Deadline::never());  // one on its way out or in
      }
    }
    auto dl = net::Deadline::after_ms(kCallTimeoutMs);
    net::send_all(fd.get(), proto::credd::encode_request(req).bytes, dl);
    auto line = net::read_line(fd.get(), dl, 64u << 20);
    if (!line) fail("the credential helper closed the connection without replying");
    return *line;
  } catch (Error& e) {
    e.add_context(what);
    throw;
  }
}

}  // namespace space::cred

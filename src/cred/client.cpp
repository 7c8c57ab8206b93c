// Credential helper client and launcher; see client.h.
#include "cred/client.h"

#include <poll.h>
#include <sys/socket.h>

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

namespace {

// A connection to the helper's operator socket, starting the helper when nobody is there.
Fd connect_helper(const store::Context& ctx) {
  CredPaths p = cred_paths(ctx.root);
  for (int attempt = 0;; attempt++) {
    try {
      return net::unix_connect(p.sock, net::Deadline::after_ms(kCallTimeoutMs));
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
}

}  // namespace

SecretString cred_swap(const store::Context& ctx, const proto::credd::SwapRequest& req) {
  try {
    Fd fd = connect_helper(ctx);
    auto dl = net::Deadline::after_ms(kCallTimeoutMs);
    net::send_all(fd.get(), proto::credd::encode_request(req).bytes, dl);
    SecretString line = SecretString::reserved(256);
    char buf[512];
    for (;;) {
      size_t nl = line.bytes.find('\n');
      if (nl != std::string::npos) break;
      if (line.bytes.size() > (1u << 20)) fail("the credential helper's reply is too long");
      pollfd pf{fd.get(), POLLIN, 0};
      int ready = ::poll(&pf, 1, dl.remaining_ms());
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) fail("the credential helper did not reply in time");
      ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        wipe(buf, sizeof buf);
        fail("the credential helper closed the connection without replying");
      }
      append_wiped(line.bytes, std::string_view(buf, size_t(n)));
    }
    wipe(buf, sizeof buf);
    return proto::credd::decode_swap_reply(line.view()).value;
  } catch (Error& e) {
    e.add_context("credential helper request swap");
    throw;
  }
}

std::string cred_exchange(const store::Context& ctx, const proto::credd::Request& req) {
  std::string what = "credential helper request " + std::string(proto::credd::op_name(req));
  try {
    Fd fd = connect_helper(ctx);
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

// Control socket client; see control_client.h.
#include "core/control_client.h"

#include "util/error.h"
#include "util/socket.h"

namespace space::core {

std::string control_exchange(const std::string& sock, const proto::control::Request& req,
                             int timeout_ms, std::span<const int> fds) {
  try {
    auto dl = net::Deadline::after_ms(timeout_ms);
    Fd fd = net::unix_connect(sock, dl);
    net::send_with_fds(fd.get(), proto::control::encode_request(req), fds, dl);
    auto line = net::read_line(fd.get(), dl);
    if (!line) fail("the VMM closed the connection without replying");
    return *line;
  } catch (Error& e) {
    e.add_context("control request " + std::string(proto::control::op_name(req)));
    throw;
  }
}

}  // namespace space::core

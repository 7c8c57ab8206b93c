// Control socket client; see control_client.h.
#include "launch/control_client.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/process.h"
#include "util/procfs.h"
#include "util/socket.h"

namespace space::launch {
namespace {

constexpr int kStoppedCheckMs = 500;

// Waits until the reply can be read or `dl` passes. Every half second without one, it looks at
// the VMM (the process that listens on the socket): a stopped one (SIGSTOP, a debugger) cannot
// answer, so the call fails at once, saying so, instead of running out its whole timeout.
void wait_for_reply(int fd, const net::Deadline& dl) {
  const long pid = net::peer_pid(fd);
  std::vector<pollfd> fds{{fd, POLLIN, 0}};
  for (int c : dl.cancel_fds()) fds.push_back({c, POLLIN, 0});
  for (;;) {
    const int left = dl.remaining_ms();
    if (left == 0) return;  // read_line reports the timeout
    const int slice = left < 0 ? kStoppedCheckMs : std::min(left, kStoppedCheckMs);
    int n = ::poll(fds.data(), fds.size(), slice);
    if (n < 0 && errno == EINTR) continue;
    if (n != 0) return;  // readable, hung up, cancelled or an error: read_line says which
    if (pid > 0 && proc::is_stopped(static_cast<pid_t>(pid)))
      throw Error("the VMM (pid " + std::to_string(pid) +
                      ") is stopped (SIGSTOP or a debugger) and cannot answer",
                  EAGAIN,
                  "'kill -CONT " + std::to_string(pid) +
                      "' lets it go on; 'space destroy --force' removes the sandbox");
  }
}

}  // namespace

std::string control_exchange(const std::string& sock, const proto::control::Request& req,
                             int timeout_ms, std::span<const int> fds) {
  try {
    auto dl = net::Deadline::after_ms(timeout_ms);
    Fd fd = net::unix_connect(sock, dl);
    net::send_with_fds(fd.get(), proto::control::encode_request(req), fds, dl);
    wait_for_reply(fd.get(), dl);
    auto line = net::read_line(fd.get(), dl);
    if (!line) fail("the VMM closed the connection without replying");
    return *line;
  } catch (Error& e) {
    e.add_context("control request " + std::string(proto::control::op_name(req)));
    throw;
  }
}

}  // namespace space::launch

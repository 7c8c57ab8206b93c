// AgentPool: pairing host clients with guest-init's idle connections; see agent_pool.h.
#include "monitor/agent_pool.h"

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <string>

#include "proto/agent.h"
#include "util/log.h"
#include "util/relay.h"
#include "util/socket.h"

namespace space::monitor {
namespace {

// guest-init never writes first on an idle connection: readable or hung up means it is gone.
bool still_idle(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace

void AgentPool::add_guest(Fd conn) {
  std::lock_guard lock(mu_);
  if (closed_) return;  // conn closes: guest-init dials again, and is refused until reopen()
  idle_.push_back(std::move(conn));
  cv_.notify_one();
}

size_t AgentPool::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

bool close_confirmed(Fd fd, const net::Deadline& dl) {
  ::shutdown(fd.get(), SHUT_WR);
  char buf[256];
  for (;;) {
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n > 0) continue;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return errno == ECONNRESET;
    pollfd p{fd.get(), POLLIN, 0};
    int left = dl.remaining_ms();
    if (left <= 0 || ::poll(&p, 1, left) <= 0) return false;
  }
}

bool AgentPool::close_idle(int wait_ms) {
  std::deque<Fd> idle;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    idle.swap(idle_);
  }
  auto dl = net::Deadline::after_ms(wait_ms);
  for (Fd& fd : idle)
    if (!close_confirmed(std::move(fd), dl)) log::debug("an idle agent connection did not close");
  return active_.load() == 0;
}

void AgentPool::reopen() {
  std::lock_guard lock(mu_);
  closed_ = false;
}

Fd AgentPool::take(int wait_ms) {
  std::unique_lock lock(mu_);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    while (!idle_.empty()) {
      Fd fd = std::move(idle_.front());
      idle_.pop_front();
      if (still_idle(fd.get())) return fd;
    }
    if (cv_.wait_until(lock, until) == std::cv_status::timeout && idle_.empty()) return Fd();
  }
}

void AgentPool::serve_host(Fd client, int wait_ms) noexcept {
  try {
    auto dl = net::Deadline::after_ms(wait_ms);
    auto line = net::read_line(client.get(), dl, 64);
    const std::string want = "CONNECT " + std::to_string(proto::kAgentPort);
    if (!line || *line != want) return;  // only guest-init's port is served
    Fd guest = take(dl.remaining_ms());
    if (!guest) return;
    net::send_all(client.get(), "OK " + std::to_string(proto::kAgentPort) + "\n", dl);
    active_++;
    relay(client.get(), guest.get(), -1, -1);
    active_--;
  } catch (const std::exception& e) {
    log::debug(std::string("agent client: ") + e.what());
  }
}

}  // namespace space::monitor

// EventLoop over epoll plus an eventfd for cross-thread wake-ups.
#include "util/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.h"

namespace space {

EventLoop::EventLoop() {
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) throw_errno("epoll_create1");
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_) throw_errno("eventfd");
  add(wake_.get(), EPOLLIN, [this](uint32_t) {
    uint64_t v;
    ssize_t n = ::read(wake_.get(), &v, sizeof v);
    (void)n;
  });
}

void EventLoop::add(int fd, uint32_t events, Handler handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) throw_errno("epoll_ctl(ADD)");
  handlers_[fd] = std::make_shared<Handler>(std::move(handler));
}

void EventLoop::modify(int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) throw_errno("epoll_ctl(MOD)");
}

void EventLoop::remove(int fd) {
  if (handlers_.erase(fd) == 0) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

int EventLoop::run_once(int timeout_ms) {
  epoll_event evs[32];
  int n = ::epoll_wait(epoll_.get(), evs, 32, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return 0;
    throw_errno("epoll_wait");
  }
  for (int i = 0; i < n; i++) {
    auto it = handlers_.find(evs[i].data.fd);
    if (it == handlers_.end()) continue;  // removed by an earlier handler this round
    auto h = it->second;                  // keep alive while it runs, even if it removes itself
    (*h)(evs[i].events);
  }
  return n;
}

void EventLoop::run(int timeout_ms) {
  while (!stop_) run_once(timeout_ms);
}

void EventLoop::stop() {
  stop_ = true;
  uint64_t one = 1;
  ssize_t n = ::write(wake_.get(), &one, sizeof one);
  (void)n;
}

}  // namespace space

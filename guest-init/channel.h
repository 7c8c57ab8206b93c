// Channel: one host connection's socket, shared by whoever answers on it. send() encodes a frame
// and writes it whole under a mutex, so several threads (e.g. an exec's stdout and stderr pumps)
// can send on one connection without interleaving frames. Sends use MSG_NOSIGNAL: a vanished
// peer is an error result, never a SIGPIPE.
#pragma once
#include <mutex>
#include <span>
#include <string>

#include "proto/agent.h"
#include "util/fd.h"

namespace space::guest {

class Channel {
 public:
  explicit Channel(Fd fd) : fd_(std::move(fd)) {}
  // Sends one frame. False if the peer is gone or the payload is too large; never throws.
  bool send(proto::Type type, std::span<const uint8_t> payload = {}) noexcept;
  // Sends ErrorMsg{message}. False on failure; never throws.
  bool send_error(const std::string& message) noexcept;
  int fd() const { return fd_.get(); }

 private:
  std::mutex mu_;
  Fd fd_;
};

}  // namespace space::guest

// Client of a VMM's control socket (control.sock): one connection per request, typed by
// proto/control.h. control_call(sock, proto::control::PauseRequest{}, ms) returns a PauseReply.
#pragma once
#include <span>
#include <string>

#include "proto/control.h"
#include "util/error.h"

namespace space::launch {

// Sends one request line, with the descriptors `fds` attached, and returns the reply line. Throws
// Error on connect, timeout or a closed connection, naming the operation.
std::string control_exchange(const std::string& sock, const proto::control::Request& req,
                             int timeout_ms, std::span<const int> fds = {});

// Sends `req` (with `fds`) and returns its typed reply. Throws Error with the VMM's message (and
// hint) when it refuses, or naming what failed.
template <class Req>
proto::control::ReplyOf<Req> control_call(const std::string& sock, const Req& req, int timeout_ms,
                                          std::span<const int> fds = {}) {
  std::string line = control_exchange(sock, req, timeout_ms, fds);
  try {
    return proto::control::decode_reply<proto::control::ReplyOf<Req>>(line);
  } catch (Error& e) {
    e.add_context("control request " + std::string(proto::control::op_name(req)));
    throw;
  }
}

}  // namespace space::launch

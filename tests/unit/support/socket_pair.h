// SocketPair: a connected pair of Unix stream sockets (close-on-exec), each end an Fd, for the
// tests that stand in for a peer on the other end of a connection (a guest, a host, a broker).
#pragma once
#include <doctest/doctest.h>
#include <sys/socket.h>

#include "util/fd.h"

namespace space::test {

struct SocketPair {
  Fd a, b;
  SocketPair() {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    a = Fd(sv[0]);
    b = Fd(sv[1]);
  }
};

}  // namespace space::test

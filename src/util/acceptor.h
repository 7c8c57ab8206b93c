// Acceptor: accept() for listeners served by a level-triggered loop, safe when the process is
// out of file descriptors. accept4 then fails with EMFILE and leaves the client queued, so the
// listener stays readable and the loop would spin on it for as long as the shortage lasts. An
// Acceptor keeps one spare descriptor: on EMFILE or ENFILE it gives the spare up, accepts the
// waiting client, closes it at once (turning it away) and takes the spare back.
#pragma once
#include <cstdint>

#include "util/fd.h"

namespace space {

class Acceptor {
 public:
  Acceptor();  // throws space::Error if the spare cannot be opened
  // One client of `listener` (accept4 `flags`), retrying EINTR and ECONNABORTED. Invalid with
  // errno set when none waits (EAGAIN) or on failure; after turning a client away for want of
  // descriptors it is invalid with errno EMFILE.
  Fd accept(int listener, int flags);
  // Clients turned away so far.
  uint64_t turned_away() const { return turned_away_; }

 private:
  Fd spare_;
  uint64_t turned_away_ = 0;
};

}  // namespace space

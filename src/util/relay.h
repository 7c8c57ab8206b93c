// Copying a connection's bytes both ways between two stream sockets, on the calling thread:
// the network broker (guest <-> remote host) and guest-init's proxy (client <-> broker) both
// relay this way. Flow control: each direction holds at most one 64 KiB chunk and reads again
// only once that chunk is written, so a slow reader slows only its own writer. A side's EOF is
// passed on as shutdown(SHUT_WR) once its bytes are out; the relay ends when both directions
// are done, on an error, after `idle_ms` with no byte either way, or when `stop_fd` is readable.
// Both sockets are switched to non-blocking.
#pragma once
#include <cstdint>
#include <string>

namespace space {

struct RelayResult {
  uint64_t a_to_b = 0;  // bytes written to b
  uint64_t b_to_a = 0;  // bytes written to a
  std::string ended;    // why it ended early ("" when both sides finished)
};

// Relays between `a` and `b` as described above. `stop_fd` -1 = none; `idle_ms` -1 = no limit.
RelayResult relay(int a, int b, int idle_ms, int stop_fd);

}  // namespace space

// GuestSync: right after a restore, a branch or a resume, the VMM itself says Hello to guest-init
// (vsock port 1024, through its own vsock.sock, like any host client). Every Hello carries fresh
// host entropy, the host's clock and the sandbox id (proto/agent.h), so the guest reseeds its RNG,
// steps its clock and takes its id as hostname at once, not only at the next exec: processes
// already running in two branches of one sandbox stop sharing RNG state as soon as the guest
// runs. It is asynchronous, on the event loop: the VMM never waits for the guest. A Hello that
// fails (no guest-init listening yet) is logged at debug level; the next exec's Hello does the
// same work. One Hello is in flight at a time; a new kick() drops the previous one.
#pragma once
#include <string>
#include <vector>

#include "util/event_loop.h"
#include "util/fd.h"

namespace space::monitor {

class GuestSync {
 public:
  // `hello_flags`: the proto::Hello flags every Hello carries (kImage for a sandbox with an
  // image, which guest-init then mounts as soon as it runs).
  GuestSync(EventLoop& loop, std::string vsock_uds, std::string sandbox_id, uint32_t hello_flags);
  ~GuestSync();
  GuestSync(const GuestSync&) = delete;
  GuestSync& operator=(const GuestSync&) = delete;

  // Starts one Hello to guest-init. Never throws.
  void kick() noexcept;
  // Hellos answered by guest-init so far (for tests and logs).
  int answered() const { return answered_; }

 private:
  void drop();
  void on_readable();

  EventLoop& loop_;
  std::string uds_, id_;
  uint32_t flags_;
  Fd conn_;
  std::vector<uint8_t> in_;
  int answered_ = 0;
};

}  // namespace space::monitor

// HostSync: two ioctls per Hello, plus a clock_settime only when the clock is off; see host_sync.h.
#include "host_sync.h"

#include <fcntl.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace space::guest {

void HostSync::add_entropy(const proto::Hello& hello, const Console& con) noexcept {
  std::lock_guard lock(mu_);
  if (!urandom_) urandom_ = Fd(::open("/dev/urandom", O_WRONLY | O_CLOEXEC));
  alignas(rand_pool_info) uint8_t buf[sizeof(rand_pool_info) + proto::kEntropySize];
  rand_pool_info info{};
  info.entropy_count = static_cast<int>(proto::kEntropySize * 8);  // in bits
  info.buf_size = static_cast<int>(proto::kEntropySize);
  std::memcpy(buf, &info, sizeof info);
  std::memcpy(buf + sizeof info, hello.entropy.data(), proto::kEntropySize);
  if (urandom_ && ::ioctl(urandom_.get(), RNDADDENTROPY, buf) == 0 &&
      ::ioctl(urandom_.get(), RNDRESEEDCRNG) == 0)
    return;
  if (!warned_) con.log(std::string("cannot mix in host entropy: ") + std::strerror(errno));
  warned_ = true;
}

void HostSync::apply(const proto::Hello& hello, const Console& con) noexcept {
  add_entropy(hello, con);
  if (hello.time_ns == 0) return;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  int64_t guest_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  int64_t skew = static_cast<int64_t>(hello.time_ns) - guest_ns;
  if (skew <= kMaxLagNs && skew >= -kMaxLeadNs) return;
  timespec t{static_cast<time_t>(hello.time_ns / 1'000'000'000),
             static_cast<long>(hello.time_ns % 1'000'000'000)};
  if (::clock_settime(CLOCK_REALTIME, &t) != 0)
    con.log(std::string("cannot set the clock: ") + std::strerror(errno));
  else
    con.log("clock stepped by " + std::to_string(skew / 1'000'000) + " ms to the host's time");
}

}  // namespace space::guest

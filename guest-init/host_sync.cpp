// HostSync: two ioctls per Hello, plus a clock_settime only when the clock is off; see host_sync.h.
#include "host_sync.h"

#include <fcntl.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

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

namespace {
// Sandbox ids are [a-z0-9][a-z0-9_.-]{0,63} (core/paths.h); anything else is ignored.
bool valid_hostname(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (size_t i = 0; i < n.size(); i++) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (i > 0 && (c == '_' || c == '.' || c == '-'));
    if (!ok) return false;
  }
  return true;
}
}  // namespace

void HostSync::set_hostname(const std::string& name, const Console& con) noexcept {
  std::lock_guard lock(mu_);
  if (name == hostname_) return;
  if (!valid_hostname(name)) {
    con.log("ignoring an invalid sandbox id in Hello");
    return;
  }
  if (::sethostname(name.data(), name.size()) != 0) {
    con.log(std::string("cannot set the hostname: ") + std::strerror(errno));
    return;
  }
  hostname_ = name;
  con.log("hostname " + name + " (from the host)");
}

std::string HostSync::hostname(const std::string& fallback) const {
  std::lock_guard lock(mu_);
  return hostname_.empty() ? fallback : hostname_;
}

void HostSync::apply_hostname(const proto::Hello& hello, const Console& con) noexcept {
  if (!hello.sandbox.empty()) set_hostname(hello.sandbox, con);
}

void HostSync::apply(const proto::Hello& hello, const Console& con) noexcept {
  add_entropy(hello, con);
  if (!hello.sandbox.empty()) set_hostname(hello.sandbox, con);
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

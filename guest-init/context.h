// Context: everything guest-init's parts share, created once in main() and passed by reference
// (no globals). It lives in main()'s frame, which as PID 1 never returns, so detached connection
// threads may keep a reference to it.
#pragma once
#include <time.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "console.h"
#include "host_sync.h"
#include "image_root.h"
#include "net_proxy.h"
#include "reaper.h"

namespace space::guest {

constexpr const char* kAgentVersion = "0.1.0";

struct Context {
  Console console;
  Reaper reaper;
  HostSync host_sync;    // entropy and clock from each Hello (PID 1 only)
  ImageRoot image;       // the user's image, once a Hello asked for it (PID 1 only)
  bool pid1 = false;     // false in the --serve-unix test mode: no mounts, no reboot
  bool gvisor = false;   // PID 1 of a gVisor sandbox (--gvisor): no mounts, no vsock, exit to stop
  std::string hostname;  // the sandbox id, reported in HelloReply
  std::string agent = std::string("guest-init ") + kAgentVersion;
  // Asks the event loop to power the guest off (test mode: to exit). Thread-safe, idempotent.
  std::function<void()> request_poweroff;
  std::atomic<int> sessions{0};  // connections being served
  int max_sessions = 64;         // more are refused with an Error frame
  std::string cred_unix;         // test mode: the credential helper's Unix socket ("" = vsock)
  NetProxy proxy;                // the HTTP proxy, started by the first Hello that asks for it
  ProxyOptions proxy_options;    // test mode: its port and the broker's Unix socket
};

// Milliseconds since the guest kernel booted (CLOCK_BOOTTIME).
inline uint64_t uptime_ms() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace space::guest

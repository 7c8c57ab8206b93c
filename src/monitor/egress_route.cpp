// The VMM's network route; see egress_route.h.
#include "monitor/egress_route.h"

#include <memory>

#include "egress/client.h"
#include "egress/paths.h"
#include "proto/agent.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/timing.h"

namespace space::monitor {

namespace {

constexpr int kStartWaitMs = 5000;
constexpr int64_t kRetryAfterFailureMs = 1000;

struct Starter {
  std::string root, id;
  int64_t failed_at = -1;

  bool start() {
    if (!fs::exists(egress::policy_file(egress::egress_paths(root), id))) return false;
    if (failed_at >= 0 && timing::mono_ms() - failed_at < kRetryAfterFailureMs) return false;
    try {
      egress::ensure_broker({root, "info", "text"}, kStartWaitMs);
      failed_at = -1;
      return true;
    } catch (const std::exception& e) {
      log::warn(std::string("could not reach the network broker: ") + e.what());
      failed_at = timing::mono_ms();
      return false;
    }
  }
};

}  // namespace

std::map<uint32_t, devices::VsockHostRoute> egress_routes(const std::string& root,
                                                          const std::string& id) {
  std::map<uint32_t, devices::VsockHostRoute> routes;
  try {
    auto starter = std::make_shared<Starter>();
    starter->root = root;
    starter->id = id;
    routes[proto::kEgressPort] =
        devices::VsockHostRoute{egress::sandbox_socket(id), [starter] { return starter->start(); }};
  } catch (const Error& e) {
    log::warn(std::string("no network route: ") + e.what());
  }
  return routes;
}

}  // namespace space::monitor

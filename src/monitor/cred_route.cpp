// The VMM's credential route; see vmm_route.h.
#include "monitor/cred_route.h"

#include <memory>
#include <optional>

#include "cred/client.h"
#include "cred/helper.h"
#include "cred/paths.h"
#include "proto/agent.h"
#include "util/error.h"
#include "util/log.h"
#include "util/process.h"
#include "util/timing.h"

namespace space::monitor {

namespace {

constexpr int kStartWaitMs = 5000;  // the guest waits 10 s (cred_fetch.h)
constexpr int64_t kRetryAfterFailureMs = 1000;

// The helpers this VMM started: reaped once they exit (they stop when idle), let go at the end.
struct Starter {
  std::string root, cred_dir;
  std::optional<proc::Child> last;
  int64_t failed_at = -1;

  ~Starter() {
    if (last && !last->exited()) last->release();  // it runs on; init reaps it
  }

  bool start() {
    if (last && last->exited()) last.reset();
    // A helper that is running listens for every sandbox it holds a grant for: this sandbox has
    // none, so refuse now rather than start a second helper that would wait for the lock.
    if (cred::helper_running(cred::cred_paths_in(cred_dir))) return false;
    if (failed_at >= 0 && timing::mono_ms() - failed_at < kRetryAfterFailureMs) return false;
    try {
      if (last) last->release();  // still running (it may be on its way out): not ours to kill
      last = cred::start_helper({root, "info", "text"}, cred_dir, kStartWaitMs);
      failed_at = -1;
      return true;
    } catch (const std::exception& e) {
      log::warn(std::string("could not start the credential helper: ") + e.what());
      failed_at = timing::mono_ms();
      last.reset();
      return false;
    }
  }
};

}  // namespace

std::map<uint32_t, devices::VsockHostRoute> cred_routes(const std::string& root,
                                                        const std::string& cred_dir,
                                                        const std::string& id) {
  std::map<uint32_t, devices::VsockHostRoute> routes;
  if (cred_dir.empty()) return routes;
  try {
    auto starter = std::make_shared<Starter>();
    starter->root = root;
    starter->cred_dir = cred_dir;
    routes[proto::kCredentialPort] = devices::VsockHostRoute{
        cred::sandbox_socket(cred_dir, id), [starter] { return starter->start(); }};
  } catch (const Error& e) {
    log::warn(std::string("no credential route: ") + e.what());
  }
  return routes;
}

}  // namespace space::monitor

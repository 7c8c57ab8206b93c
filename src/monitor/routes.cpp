// A sandbox's vsock routes; see routes.h.
#include "monitor/routes.h"

#include "proto/agent.h"

namespace space::monitor {

std::map<uint32_t, devices::VsockHostRoute> sandbox_routes() {
  std::map<uint32_t, devices::VsockHostRoute> routes;
  routes[proto::kCredentialPort] = devices::VsockHostRoute{kCredSocket};
  routes[proto::kEgressPort] = devices::VsockHostRoute{kEgressSocket};
  return routes;
}

}  // namespace space::monitor

// Unit tests for oci/shim.h without a VM: the network policy a container's sandbox gets. The
// shim's whole life (create, start, signals, exit codes, a pty) runs with a real sandbox in
// tests/integration/86_oci_runtime.sh and 87_oci_podman.sh.
#include <doctest/doctest.h>

#include "oci/shim.h"
#include "oci/spec.h"

using namespace space;

TEST_CASE("oci shim: without a network namespace the container has no network, whatever asks") {
  oci::Spec s;
  CHECK(oci::net_policy_for(s) == "none");
  s.annotations["space.net"] = "allow=127.0.0.2:8080";
  CHECK(oci::net_policy_for(s) == "none");  // would leave from the host's own namespace
  s.netns_path = "/run/netns/engine-1";
  CHECK(oci::net_policy_for(s) == "allow=127.0.0.2:8080");
  s.annotations.clear();
  CHECK(oci::net_policy_for(s) == "");  // config.toml's default, from the engine's namespace
}

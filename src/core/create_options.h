// What `create` is asked (CreateOptions: template or cold boot, engine, image, disk, network,
// expiry, and the secrets and files it hands over), apart from the lifecycle functions
// (core/sandbox.h), so that an engine's create (core/create_gvisor.h) takes it without them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/idle.h"
#include "cred/grants.h"

namespace space::core {

// create/run --copy HOST_PATH:GUEST_PATH, split at the last ":/" (the guest path is absolute).
struct CopySpec {
  std::string host, guest;
  bool archive = false;  // keep owners, modes and times (cp -a): the OCI shim's bind mounts
};

struct CreateOptions {
  std::string id;             // "" = generate one
  std::string engine;         // --engine: "vm" or "gvisor"; "" = launch/engine.h's choice
  std::string template_name;  // "" = config.toml [defaults] template, else "default"
  bool cold = false;          // boot from the kernel instead of a template
  // Cold-boot settings; any of them without template_name implies a cold boot.
  std::optional<uint32_t> vcpus;       // unset = config.toml, else 1
  std::optional<uint32_t> memory_mib;  // unset = config.toml, else 256
  std::string kernel;                  // "" = config.toml, else the cached default
  std::string rootfs;                  // "" = config.toml, else the cached default
  // A user image (core/image_use.h): the sandbox gets a copy of its disk as /dev/vdb and runs
  // every exec inside it. "" = none (or the template's own, for a template built with one).
  std::string image;
  uint64_t disk_bytes = 0;  // grow the image's disk copy to this many bytes (0 = as imported)
  // --net: "none" or "allow=RULE[,RULE...]" (core/net.h); "" = config.toml [net] allow.
  std::string net;
  uint64_t ttl_ms = 0;                // --ttl: the sandbox ends this long after it starts
  std::string on_expiry = "destroy";  // --on-expiry: destroy or checkpoint (core/expiry.h)
  IdleOptions idle;                   // --idle-pause, --idle-checkpoint (core/idle.h)
  // What the sandbox is handed before create returns (the create transaction): these secrets
  // granted (--secret), then these host files copied in (--copy). If either fails, or a signal
  // comes, the sandbox is destroyed and create throws.
  std::vector<cred::GrantSpec> secrets;
  std::vector<CopySpec> copies;
  // The OCI shim's, from the bundle (oci/shim.h), applied in the same transaction before the
  // secrets: the network namespace the sandbox's connections leave from (core/net.h set_netns;
  // "" = none named), its cgroup's CPU quota (linux.resources.cpu), and a memory limit its
  // memory must fit under (linux.resources.memory.limit: refused, naming the template, if not).
  std::string netns_path;
  std::optional<uint64_t> cpu_quota_us, cpu_period_us;
  std::optional<uint64_t> memory_limit_bytes;
};

}  // namespace space::core

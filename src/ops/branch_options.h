// What `branch` is asked (BranchOptions: how many, their names, network, expiry, secrets), apart
// from branch_sandbox (ops/branch.h), so that the gvisor engine's branch takes it without it.
#pragma once
#include <cstdint>
#include <string>

namespace space::ops {

struct BranchOptions {
  uint32_t count = 1;   // how many branches
  std::string name;     // "" = generated ids; else the id (count 1) or <name>-1 .. <name>-N
  std::string net;      // --net for every branch (core/net.h); "" = the source's policy
  uint64_t ttl_ms = 0;  // --ttl for every branch; 0 = the source's expiry, if any
  std::string on_expiry = "destroy";
  bool keep_secrets = false;  // --keep-secrets: each branch gets the source's grants
};

}  // namespace space::ops

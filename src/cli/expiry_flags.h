// --ttl DURATION and --on-expiry destroy|checkpoint, shared by create, branch and resume
// (core/expiry.h); --idle-pause and --idle-checkpoint, shared by create and run (core/idle.h).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/idle.h"

namespace space::cli {

struct ExpiryFlags {
  std::string ttl;
  std::string on_expiry = "destroy";
  // Adds both flags to `cmd`; `what` names what ends ("the sandbox", "each branch").
  void add(CLI::App* cmd, const std::string& what);
  // The ttl in milliseconds (0 when --ttl was not given). Throws with a hint for a bad value, or
  // for --on-expiry without --ttl.
  uint64_t ttl_ms() const;
};

struct IdleFlags {
  std::string pause, checkpoint;
  void add(CLI::App* cmd);
  // The flags given (unset ones left to config.toml). Throws with a hint for a bad value.
  core::IdleOptions options() const;
};

}  // namespace space::cli

// --disk-size, --secret, --inject and --copy: what `create` and `run` put into a new sandbox
// (its image disk's size, the secrets granted, the files copied in), parsed into
// core::CreateOptions for core's create transaction.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/sandbox.h"

namespace space::cli {

struct ContentFlags {
  std::string disk_size;
  std::vector<std::string> secrets, inject, copies;
  // Adds the four flags to `cmd`; `copied_when` says when --copy's files land ("before the
  // command runs").
  void add(CLI::App* cmd, const std::string& copied_when);
  // Parses them into `opts` (disk_bytes, secrets, copies). Throws with a hint for a bad value.
  void apply(core::CreateOptions& opts) const;
};

}  // namespace space::cli

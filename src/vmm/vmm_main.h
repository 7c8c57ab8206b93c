// Entry point of the per-sandbox VMM process (`space __vmm ID`).
#pragma once
#include <string>

namespace space::vmm {

struct VmmOptions {
  std::string root;   // run directory
  std::string id;     // sandbox id
  int ready_fd = -1;  // pipe to `create`: "ok\n" once running, or "error: <msg>\n"
};

// Runs the VMM until the guest stops or a stop request arrives; returns the process exit code.
int vmm_main(const VmmOptions& opts);

}  // namespace space::vmm

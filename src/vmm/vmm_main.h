// Entry point of the per-sandbox VMM process (`space __vmm ID [--restore DIR]`).
#pragma once
#include <string>

namespace space::vmm {

struct VmmOptions {
  std::string root;   // run directory
  std::string id;     // sandbox id
  int ready_fd = -1;  // pipe to `create`: "ok\n" once running, or "error: <msg>\n"
  std::string dir;      // files (config.json, logs, disk) here instead of store/sandboxes/<id>:
  std::string run_dir;  // and sockets here; both set or both empty (a template build)
  std::string restore_dir;  // if set: resume the snapshot in this dir (vmstate + memory), no boot
  std::string shared_memory_dir;  // map its memory instead when its vmstate is the same snapshot
};

// Runs the VMM until the guest stops or a stop request arrives; returns the process exit code.
int vmm_main(const VmmOptions& opts);

}  // namespace space::vmm

// `list` and `state`: read state.json files without locking (writers replace them atomically)
// and report the observed status rather than the recorded one.
#include <algorithm>

#include "core/sandbox.h"
#include "core/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::core {

std::vector<SandboxState> list_sandboxes(const Context& ctx) {
  std::string dir = ensure_store(ctx, StoreUse::Existing).sandboxes;
  std::vector<SandboxState> out;
  for (const std::string& name : fs::list_dir(dir)) {
    try {
      SandboxPaths p = sandbox_paths(ctx.root, name);
      if (!fs::exists(p.state)) continue;  // being created, or remains of a crash
      SandboxState s = read_state(p.state);
      s.status = observed_status(s);
      out.push_back(std::move(s));
    } catch (const Error& e) {
      log::warn("list: skipping " + dir + "/" + name + ": " + e.what());
    }
  }
  std::sort(out.begin(), out.end(), [](const SandboxState& a, const SandboxState& b) {
    return a.created != b.created ? a.created < b.created : a.id < b.id;
  });
  return out;
}

SandboxState sandbox_state(const Context& ctx, const std::string& id) {
  SandboxPaths p = sandbox_paths(ctx.root, id);
  ensure_store(ctx, StoreUse::Existing);
  require_sandbox(p, id);
  SandboxState s = read_state(p.state);
  s.status = observed_status(s);
  return s;
}

}  // namespace space::core

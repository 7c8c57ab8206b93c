// `list` and `state`: read state.json files without locking (writers replace them atomically)
// and report the observed status rather than the recorded one.
#include <algorithm>
#include <cerrno>

#include "core/sandbox.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::core {

std::vector<store::SandboxState> list_sandboxes(const store::Context& ctx) {
  std::string dir = store::ensure_store(ctx, store::StoreUse::Existing).sandboxes;
  std::vector<store::SandboxState> out;
  for (const std::string& name : fs::list_dir(dir)) {
    try {
      store::SandboxPaths p = store::sandbox_paths(ctx.root, name);
      if (!fs::exists(p.state)) continue;  // being created, or remains of a crash
      store::SandboxState s = store::read_state(p.state);
      if (s.id != name)
        throw Error("its record names sandbox " + s.id, EINVAL,
                    "'space destroy --force " + name + "' removes it");
      s.status = store::observed_status(s);
      out.push_back(std::move(s));
    } catch (const Error& e) {
      log::warn("list: skipping " + dir + "/" + name + ": " + e.what());
    }
  }
  std::sort(out.begin(), out.end(), [](const store::SandboxState& a, const store::SandboxState& b) {
    return a.created != b.created ? a.created < b.created : a.id < b.id;
  });
  return out;
}

store::SandboxState sandbox_state(const store::Context& ctx, const std::string& id) {
  store::SandboxPaths p = store::sandbox_paths(ctx.root, id);
  store::ensure_store(ctx, store::StoreUse::Existing);
  require_sandbox(p, id);
  store::SandboxState s = store::read_state(p.state);
  if (s.id != id)
    throw Error("the record of sandbox " + id + " names sandbox " + s.id, EINVAL,
                "'space destroy --force " + id + "' removes it");
  s.status = store::observed_status(s);
  return s;
}

}  // namespace space::core

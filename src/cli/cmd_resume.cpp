// `space resume ID [--ttl D [--on-expiry destroy|checkpoint]]`: continues a paused sandbox, or
// restores a checkpointed one (or one whose VMM died after a checkpoint) in a new VMM.
#include <cstdio>

#include "cli/app.h"
#include "cli/expiry_flags.h"
#include "core/session.h"
#include "util/json.h"

namespace space::cli {

void register_resume(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "resume", "Resume a paused or checkpointed sandbox");
  auto* id = g.hold<std::string>();  // freed with GlobalOptions
  auto* expiry = g.hold<ExpiryFlags>();
  expiry->add(cmd, "the sandbox");
  cmd->add_option("id", *id, "Sandbox id")->required();
  cmd->callback([&g, id, expiry] {
    int64_t resume_us = -1;
    auto st =
        core::resume_sandbox(g.context(), *id, &resume_us, expiry->ttl_ms(), expiry->on_expiry);
    if (g.json()) {
      json::Value v = json::Object{{"id", st.id},
                                   {"status", store::status_name(st.status)},
                                   {"pid", static_cast<int64_t>(st.pid)}};
      if (resume_us >= 0) v.set("resume_us", resume_us);  // in-memory resume, inside the VMM
      print_json(v);
    }
  });
}

}  // namespace space::cli

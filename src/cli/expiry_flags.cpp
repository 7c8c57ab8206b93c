// The expiry flags; see expiry_flags.h.
#include "cli/expiry_flags.h"

#include "util/duration.h"
#include "util/error.h"

namespace space::cli {

void ExpiryFlags::add(CLI::App* cmd, const std::string& what) {
  cmd->add_option("--ttl", ttl,
                  "End " + what + " this long from now: 30s, 10m, 2h, 1d (see --on-expiry)");
  cmd->add_option("--on-expiry", on_expiry,
                  "What ending means: destroy (the default) or checkpoint (resume continues it)")
      ->check(CLI::IsMember({"destroy", "checkpoint"}));
}

uint64_t ExpiryFlags::ttl_ms() const {
  if (ttl.empty()) {
    if (on_expiry != "destroy") fail("--on-expiry needs --ttl", "pass --ttl DURATION with it");
    return 0;
  }
  return parse_duration_ms(ttl, "--ttl ");
}

}  // namespace space::cli

// A sandbox's network policy on disk: <root>/egress/policy/<id>.json, {"rules": [TEXT...]}, the
// rules in their canonical text form, replaced atomically. No file means the sandbox has no
// network (`--net none`); a file with no rules means a proxy that refuses everything. The broker
// reads the file for every new connection, so a change applies to the next connection at once
// and needs no message to the broker.
#pragma once
#include <optional>
#include <string>

#include "egress/paths.h"
#include "egress/policy.h"

namespace space::egress {

// The policy of sandbox `id`, or nullopt when it has none. Throws on a malformed file.
std::optional<Policy> load_policy(const EgressPaths& p, const std::string& id);
// Writes the policy of `id` (making the directories).
void save_policy(const EgressPaths& p, const std::string& id, const Policy& policy);
// Removes the policy of `id`; true if it had one.
bool remove_policy(const EgressPaths& p, const std::string& id);

}  // namespace space::egress

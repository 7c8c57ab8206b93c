// The network namespace a sandbox's connections leave from. By default the broker connects from
// its own (the host's) namespace; a sandbox can instead name one, such as the namespace a
// container engine made for the container (an OCI bundle's linux.namespaces network path). The
// name is a file, <root>/egress/netns/<id>, holding the namespace's path; the broker's thread for
// each of that sandbox's connections enters it (setns affects that thread only) before it
// resolves and connects, so the policy still decides what is reached and the engine's network
// decides how. A namespace that cannot be entered refuses the connection: it never falls back to
// the host's.
#pragma once
#include <optional>
#include <string>

#include "egress/paths.h"

namespace space::egress {

// <dir>/netns/<id>. Validates id.
std::string netns_file(const EgressPaths& p, const std::string& id);
// Records that sandbox `id`'s connections leave from the network namespace at `path` (absolute).
// Throws unless `path` is a network namespace (an nsfs file of that type).
void save_netns(const EgressPaths& p, const std::string& id, const std::string& path);
// The recorded namespace path of `id`, or nullopt.
std::optional<std::string> load_netns(const EgressPaths& p, const std::string& id);
// Forgets it; true if there was one.
bool remove_netns(const EgressPaths& p, const std::string& id);
// Moves the calling thread into the network namespace at `path`. Throws naming the path.
void enter_netns(const std::string& path);

}  // namespace space::egress

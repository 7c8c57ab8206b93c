// Sandbox network policy operations for the CLI: the --net flag of create, run and branch, the
// config.toml default, `space net allow|deny|show|log`, and what an exec of a sandbox with a
// network gets (the Hello flag that starts guest-init's proxy, the proxy variables). Policies
// live outside the sandbox (egress/policy_store.h) and the broker reads them per connection,
// so every change here applies to the sandbox's next connection.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "egress/policy.h"
#include "store/config.h"
#include "store/context.h"
#include "util/json.h"

namespace space::core {

constexpr const char* kProxyUrl = "http://127.0.0.1:3128";

// Parses a --net value: "none" (nullopt) or "allow=RULE[,RULE...]". Throws with a hint.
std::optional<egress::Policy> parse_net_flag(const std::string& value);
// The policy of a new sandbox: the --net value if given (non-empty), else config.toml's
// [net] allow (none when it is empty). Throws naming config.toml for a bad configured rule.
std::optional<egress::Policy> initial_policy(const store::HostConfig& hc, const std::string& flag);
// Gives sandbox `id` `policy` (nullopt: takes its network away, and forgets its namespace).
void set_policy(const store::Context& ctx, const std::string& id,
                const std::optional<egress::Policy>& policy);
// Makes the connections of sandbox `id` leave from the network namespace at `path` (an
// engine's, egress/netns.h) instead of the host's. Throws unless it is a network namespace.
void set_netns(const store::Context& ctx, const std::string& id, const std::string& path);
// Makes sure the network broker serves sandbox `id` when it has a policy and runs (a sync of the
// running broker, or a start): jailed VMMs cannot start it, so create, branch, resume and
// `net allow` do, once the sandbox's run directory exists. Throws when the broker cannot start.
void ensure_network(const store::Context& ctx, const std::string& id);
// The policy of `id`, nullopt when it has no network.
std::optional<egress::Policy> sandbox_policy(const store::Context& ctx, const std::string& id);
// Adds rules to `id`'s policy (giving it a network if it had none); returns the new policy.
// Throws if the sandbox does not exist.
egress::Policy net_allow(const store::Context& ctx, const std::string& id,
                         const std::vector<std::string>& rules);
// Removes rules from `id`'s policy; a rule it does not have is an error naming the ones it has.
// The network stays (refusing everything) when the last rule goes; `none` removes it.
egress::Policy net_deny(const store::Context& ctx, const std::string& id,
                        const std::vector<std::string>& rules, bool none);
// {"sandbox", "network": bool, "rules": [...], "proxy": URL or null, "netns": the namespace its
// connections leave from (egress/netns.h) or null for the host's}.
json::Value net_show(const store::Context& ctx, const std::string& id);
// The audit lines of `id`, oldest first: its previous generation (<id>.log.1), then <id>.log.
// The log stays after destroy, so `id` need not exist.
std::vector<json::Value> net_log(const store::Context& ctx, const std::string& id);
// <root>/egress/audit/<id>.log.
std::string net_log_path(const store::Context& ctx, const std::string& id);
// The variables each exec of a sandbox with a network gets (HTTP_PROXY, https_proxy, NO_PROXY...).
std::vector<std::string> proxy_env();

}  // namespace space::core

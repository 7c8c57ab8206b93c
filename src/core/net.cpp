// Sandbox network policy operations; see net.h.
#include "core/net.h"

#include "core/sandbox.h"
#include "egress/client.h"
#include "egress/netns.h"
#include "egress/paths.h"
#include "egress/policy_store.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_lines.h"

namespace space::core {

namespace {
constexpr int kBrokerStartMs = 10'000;

egress::EgressPaths paths_of(const store::Context& ctx) {
  return egress::egress_paths(ctx.root);
}

std::vector<egress::Rule> parse_all(const std::vector<std::string>& rules) {
  std::vector<egress::Rule> out;
  for (const auto& r : rules)
    for (auto& x : egress::parse_rules(r)) out.push_back(std::move(x));
  return out;
}
}  // namespace

std::optional<egress::Policy> parse_net_flag(const std::string& value) {
  if (value == "none") return std::nullopt;
  if (value.rfind("allow=", 0) == 0) return egress::Policy(egress::parse_rules(value.substr(6)));
  throw Error("--net " + value + ": expected none or allow=RULE[,RULE...]", 0,
              "for example --net allow=pypi.org:443,*.githubusercontent.com:443");
}

std::optional<egress::Policy> initial_policy(const store::HostConfig& hc, const std::string& flag) {
  if (!flag.empty()) return parse_net_flag(flag);
  if (hc.net_allow.empty()) return std::nullopt;
  try {
    return egress::policy_from_texts(hc.net_allow);
  } catch (Error& e) {
    e.add_context("config.toml [net] allow");
    throw;
  }
}

void set_policy(const store::Context& ctx, const std::string& id,
                const std::optional<egress::Policy>& policy) {
  if (policy) {
    egress::save_policy(paths_of(ctx), id, *policy);
  } else {
    egress::remove_policy(paths_of(ctx), id);
    egress::remove_netns(paths_of(ctx), id);
  }
}

void set_netns(const store::Context& ctx, const std::string& id, const std::string& path) {
  require_sandbox(store::sandbox_paths(ctx.root, id), id);
  egress::save_netns(paths_of(ctx), id, path);
}

void ensure_network(const store::Context& ctx, const std::string& id) {
  if (!fs::exists(egress::policy_file(paths_of(ctx), id))) return;
  if (!fs::is_dir(store::sandbox_paths(ctx.root, id).run_dir)) return;
  try {
    egress::ensure_broker(ctx, kBrokerStartMs);
  } catch (Error& e) {
    e.add_context("the network of sandbox " + id);
    throw;
  }
}

std::optional<egress::Policy> sandbox_policy(const store::Context& ctx, const std::string& id) {
  return egress::load_policy(paths_of(ctx), id);
}

egress::Policy net_allow(const store::Context& ctx, const std::string& id,
                         const std::vector<std::string>& rules) {
  require_sandbox(store::sandbox_paths(ctx.root, id), id);
  std::vector<egress::Rule> add = parse_all(rules);
  egress::Policy p = sandbox_policy(ctx, id).value_or(egress::Policy());
  p.allow(add);
  egress::save_policy(paths_of(ctx), id, p);
  ensure_network(ctx, id);
  return p;
}

egress::Policy net_deny(const store::Context& ctx, const std::string& id,
                        const std::vector<std::string>& rules, bool none) {
  require_sandbox(store::sandbox_paths(ctx.root, id), id);
  if (none) {
    egress::remove_policy(paths_of(ctx), id);
    return egress::Policy();
  }
  std::optional<egress::Policy> p = sandbox_policy(ctx, id);
  std::vector<egress::Rule> drop = parse_all(rules);
  if (!p) fail("sandbox " + id + " has no network", "space net allow " + id + " RULE gives it one");
  for (const auto& r : drop) {
    if (p->deny({r}) == 0) {
      std::string have;
      for (const auto& t : egress::to_texts(*p)) have += (have.empty() ? "" : ", ") + t;
      fail("sandbox " + id + " has no rule " + egress::to_texts(egress::Policy({r}))[0],
           have.empty() ? "it has no rules" : "its rules: " + have);
    }
  }
  egress::save_policy(paths_of(ctx), id, *p);
  return *p;
}

json::Value net_show(const store::Context& ctx, const std::string& id) {
  require_sandbox(store::sandbox_paths(ctx.root, id), id);
  std::optional<egress::Policy> p = sandbox_policy(ctx, id);
  json::Value v = json::Value::object();
  v.set("sandbox", id);
  v.set("network", p.has_value());
  json::Value rules = json::Value::array();
  if (p)
    for (const auto& t : egress::to_texts(*p)) rules.push_back(t);
  v.set("rules", std::move(rules));
  v.set("proxy", p ? json::Value(kProxyUrl) : json::Value());
  auto ns = egress::load_netns(paths_of(ctx), id);
  v.set("netns", ns ? json::Value(*ns) : json::Value());
  return v;
}

std::string net_log_path(const store::Context& ctx, const std::string& id) {
  return egress::audit_file(paths_of(ctx), id);
}

std::vector<json::Value> net_log(const store::Context& ctx, const std::string& id) {
  return jsonl::read_generations(net_log_path(ctx, id));
}

std::vector<std::string> proxy_env() {
  std::string url = kProxyUrl;
  std::string no = "localhost,127.0.0.1,::1";
  return {"HTTP_PROXY=" + url,  "HTTPS_PROXY=" + url, "http_proxy=" + url,
          "https_proxy=" + url, "NO_PROXY=" + no,     "no_proxy=" + no};
}

}  // namespace space::core

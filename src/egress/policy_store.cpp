// A sandbox's policy file; see policy_store.h.
#include "egress/policy_store.h"

#include <unistd.h>

#include <cerrno>

#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace space::egress {

std::optional<Policy> load_policy(const EgressPaths& p, const std::string& id) {
  std::string path = policy_file(p, id);
  if (!fs::exists(path)) return std::nullopt;
  return json::load_file(path, "network policy", [](const json::Value& v) {
    std::vector<std::string> texts;
    for (const auto& r : v.at("rules").as_array()) texts.push_back(r.as_string());
    return policy_from_texts(texts);
  });
}

void save_policy(const EgressPaths& p, const std::string& id, const Policy& policy) {
  make_egress_dirs(p);
  json::Value rules = json::Value::array();
  for (const auto& t : to_texts(policy)) rules.push_back(t);
  json::Value v = json::Value::object();
  v.set("rules", std::move(rules));
  fs::write_file_atomic(policy_file(p, id), json::serialize(v, 2) + "\n", 0600);
}

bool remove_policy(const EgressPaths& p, const std::string& id) {
  std::string path = policy_file(p, id);
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  throw_errno("remove " + path);
}

}  // namespace space::egress

// Strict TOML field readers; see toml_fields.h.
#include "store/toml_fields.h"

#include "util/error.h"

namespace space::store {

void TomlFields::bad(const std::string& key, const std::string& why) const {
  fail(source + ": " + key + ": " + why, hint);
}

uint32_t TomlFields::uint(const toml::node& n, const std::string& key, uint32_t lo,
                          uint32_t hi) const {
  auto v = n.value_exact<int64_t>();
  if (!v) bad(key, "expected an integer");
  if (*v < lo || *v > hi)
    bad(key,
        std::to_string(*v) + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<uint32_t>(*v);
}

bool TomlFields::boolean(const toml::node& n, const std::string& key) const {
  auto v = n.value_exact<bool>();
  if (!v) bad(key, "expected true or false");
  return *v;
}

std::string TomlFields::str(const toml::node& n, const std::string& key) const {
  auto v = n.value_exact<std::string>();
  if (!v || v->empty()) bad(key, "expected a non-empty string");
  return *v;
}

std::string TomlFields::path(const toml::node& n, const std::string& key) const {
  auto v = n.value_exact<std::string>();
  if (!v) bad(key, "expected a string");
  if (v->empty() || (*v)[0] != '/') bad(key, "expected an absolute path");
  return *v;
}

}  // namespace space::store

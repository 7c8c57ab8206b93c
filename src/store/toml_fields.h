// TomlFields: strict readers for the fields of our TOML files (config.toml, template.toml).
// Every error names the file and the key and carries the file's own hint, so both files report
// mistakes the same way without repeating the checks.
#pragma once
#include <toml++/toml.h>

#include <cstdint>
#include <string>

namespace space::store {

struct TomlFields {
  std::string source;  // the file, for messages
  std::string hint;    // how to fix a bad file

  // Throws Error("<source>: <key>: <why>") with the hint.
  [[noreturn]] void bad(const std::string& key, const std::string& why) const;
  // An integer in [lo, hi].
  uint32_t uint(const toml::node& n, const std::string& key, uint32_t lo, uint32_t hi) const;
  // true or false.
  bool boolean(const toml::node& n, const std::string& key) const;
  // A non-empty string.
  std::string str(const toml::node& n, const std::string& key) const;
  // An absolute path.
  std::string path(const toml::node& n, const std::string& key) const;
};

}  // namespace space::store

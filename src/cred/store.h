// SecretStore: the secrets, as secrets.json in the credential directory (mode 0600, replaced
// atomically and durably on every change). Only the credential helper opens it. Each secret has
// a name (proto::valid_secret_name), a value of 0..64 KiB arbitrary bytes (base64 in the file),
// and its creation and update times. list() gives names and metadata only. Values read from the
// file live in SecretString, wiped when dropped.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proto/credd.h"
#include "util/wipe.h"

namespace space::cred {

// A secret's name and metadata, never its value: what `space secret list` shows.
using SecretMeta = proto::credd::SecretInfo;

class SecretStore {
 public:
  // Loads `path` (a missing file is an empty store). Throws Error naming the file on bad content.
  explicit SecretStore(std::string path);
  // Names and metadata, sorted by name.
  std::vector<SecretMeta> list() const;
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  // The value of `name`, or nullopt.
  std::optional<SecretString> get(const std::string& name) const;
  // Adds or replaces `name` (validated) with `value` (at most proto::kMaxSecretSize) and saves.
  // `now` is an RFC 3339 time. Returns true if it replaced an existing secret.
  bool set(const std::string& name, std::string_view value, const std::string& now);
  // Removes `name` and saves; false if there was none.
  bool remove(const std::string& name);

 private:
  struct Entry {
    SecretString b64;  // the value, base64
    uint64_t size = 0;
    std::string created, updated;
  };
  void save() const;
  std::string path_;
  std::map<std::string, Entry> entries_;
};

// Throws Error with a hint unless `name` is a valid secret name.
void check_secret_name(const std::string& name);

}  // namespace space::cred

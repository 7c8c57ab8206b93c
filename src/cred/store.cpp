// secrets.json; see store.h. Layout: {"secrets":[{"name","value_base64","size","created",
// "updated"}]}. The reader is strict (unknown fields, bad names, bad base64 are errors).
#include "cred/store.h"

#include <cerrno>

#include "proto/cred.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace space::cred {

void check_secret_name(const std::string& name) {
  if (!proto::valid_secret_name(name)) {
    std::string shown = name.size() > 80 ? name.substr(0, 80) + "..." : name;
    fail("invalid secret name \"" + shown + "\"",
         "use 1-128 characters of A-Z a-z 0-9 _ . -, not starting with '.' or '-'");
  }
}

SecretStore::SecretStore(std::string path) : path_(std::move(path)) {
  if (!fs::exists(path_)) return;
  try {
    SecretString text(fs::read_file(path_, 256u << 20));
    json::SecretMembers values{{"value_base64"}, {}};  // kept out of the tree, wiped when done
    json::Value v = json::parse(text.bytes, {.secrets = &values});
    if (!v.is_object()) fail("not a JSON object");
    for (auto& [k, _] : v.as_object())
      if (k != "secrets") fail("unknown field \"" + k + "\"");
    const json::Value* list = v.find("secrets");
    if (!list) return;
    for (const auto& e : list->as_array()) {
      for (auto& [k, _] : e.as_object())
        if (k != "name" && k != "value_base64" && k != "size" && k != "created" && k != "updated")
          fail("unknown field \"" + k + "\"");
      std::string name = json::string_field(e, "name");
      check_secret_name(name);
      Entry en;
      uint64_t at = json::uint_field(e, "value_base64");  // the parser's index into `values`
      if (at >= values.found.size()) fail("secret " + name + ": value_base64 is missing");
      en.b64 = std::move(values.found[at]);
      SecretString raw = SecretString::reserved(en.b64.bytes.size() / 4 * 3);
      if (!base64::decode_into(raw.bytes, en.b64.view()))
        fail("secret " + name + ": value_base64 is not base64");
      en.size = raw.bytes.size();
      en.created = json::string_field(e, "created");
      en.updated = json::string_field(e, "updated");
      if (!entries_.emplace(name, std::move(en)).second) fail("secret " + name + " appears twice");
    }
  } catch (Error& e) {
    e.add_context("read secrets " + path_);
    throw;
  }
}

std::vector<SecretMeta> SecretStore::list() const {
  std::vector<SecretMeta> out;
  for (const auto& [name, e] : entries_) out.push_back({name, e.size, e.created, e.updated});
  return out;
}

std::optional<SecretString> SecretStore::get(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  const SecretString& b64 = it->second.b64;
  SecretString raw = SecretString::reserved(b64.bytes.size() / 4 * 3);
  if (!base64::decode_into(raw.bytes, b64.view())) return std::nullopt;  // checked at load
  return raw;
}

bool SecretStore::set(const std::string& name, std::string_view value, const std::string& now) {
  check_secret_name(name);
  if (value.size() > proto::kMaxSecretSize)
    fail("secret " + name + " is " + std::to_string(value.size()) + " bytes; the limit is " +
         std::to_string(proto::kMaxSecretSize));
  auto it = entries_.find(name);
  bool replaced = it != entries_.end();
  Entry en;
  en.b64 = SecretString::reserved(base64::encoded_size(value.size()));
  base64::encode_into(en.b64.bytes, value);
  en.size = value.size();
  en.created = replaced ? it->second.created : now;
  en.updated = now;
  entries_[name] = std::move(en);
  save();
  return replaced;
}

bool SecretStore::remove(const std::string& name) {
  if (!entries_.erase(name)) return false;
  save();
  return true;
}

// The file is written straight into a wiped buffer (the values never enter a json::Value), in
// the layout json::save_file would give it.
void SecretStore::save() const {
  SecretString text;
  append_wiped(text.bytes, "{\n  \"secrets\": [");
  bool first = true;
  for (const auto& [name, e] : entries_) {
    append_wiped(text.bytes, first ? "\n    {\n      \"name\": " : ",\n    {\n      \"name\": ");
    first = false;
    append_wiped(text.bytes, json::quote(name));
    append_wiped(text.bytes, ",\n      \"value_base64\": \"");
    append_wiped(text.bytes, e.b64.bytes);
    append_wiped(text.bytes, "\",\n      \"size\": " + std::to_string(e.size) +
                                 ",\n      \"created\": " + json::quote(e.created) +
                                 ",\n      \"updated\": " + json::quote(e.updated) + "\n    }");
  }
  append_wiped(text.bytes, first ? "]\n}\n" : "\n  ]\n}\n");
  fs::write_file_atomic(path_, text.bytes, 0600);
}

}  // namespace space::cred

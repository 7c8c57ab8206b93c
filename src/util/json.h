// JSON: a small value type (null, bool, integer, double, string, array, object with keys kept in
// insertion order), a strict RFC 8259 parser and a serializer. The parser accepts exactly one value
// surrounded by whitespace, rejects duplicate keys, invalid UTF-8, lone surrogates and nesting
// deeper than a limit, and reports errors with line and column. Integers that fit int64 stay
// integers; everything else numeric is a double. The serializer writes compact or indented text
// and replaces invalid UTF-8 in strings with U+FFFD, so its output always parses.
#pragma once
#include <sys/types.h>

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "util/error.h"
#include "util/fs.h"
#include "util/wipe.h"

namespace space::json {

class Value;
using Array = std::vector<Value>;
using Member = std::pair<std::string, Value>;
using Object = std::vector<Member>;

enum class Kind { Null, Bool, Int, Double, String, Array, Object };

// Name of a kind for error messages ("null", "boolean", "integer", "number", ...).
const char* kind_name(Kind k);

class Value {
 public:
  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  // Any integer type; unsigned values above INT64_MAX become doubles.
  template <std::integral T>
  requires(!std::same_as<T, bool>) Value(T i) {
    if constexpr (std::is_unsigned_v<T>) {
      if (static_cast<uint64_t>(i) > static_cast<uint64_t>(INT64_MAX)) {
        v_ = static_cast<double>(i);
        return;
      }
    }
    v_ = static_cast<int64_t>(i);
  }
  Value(double d) : v_(d) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(Array a) : v_(std::move(a)) {}
  Value(Object o) : v_(std::move(o)) {}

  // An empty object / array.
  static Value object() { return Value(Object{}); }
  static Value array() { return Value(Array{}); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_null() const { return kind() == Kind::Null; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  // Int or Double.
  bool is_number() const { return kind() == Kind::Int || kind() == Kind::Double; }
  bool is_string() const { return kind() == Kind::String; }
  bool is_array() const { return kind() == Kind::Array; }
  bool is_object() const { return kind() == Kind::Object; }

  // Typed accessors; each throws space::Error naming the expected and actual kind on mismatch.
  bool as_bool() const;
  int64_t as_int() const;
  // Int or Double, as a double.
  double as_double() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // Object lookup: the member's value, or nullptr when absent (or when this is not an object).
  const Value* find(std::string_view key) const;
  // Object member that must exist; throws space::Error naming the key otherwise.
  const Value& at(std::string_view key) const;
  // Sets (replacing) or appends a member; a null value first becomes an empty object.
  Value& set(std::string key, Value v);
  // Appends to an array; a null value first becomes an empty array.
  Value& push_back(Value v);

  // Deep equality; Int 1 and Double 1.0 are different values.
  friend bool operator==(const Value& a, const Value& b) { return a.v_ == b.v_; }

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v_;
};

// Members whose string values are secrets: the parser decodes each such string straight into a
// buffer that wipes itself (`found`, in document order) and puts its index in `found` in the tree
// instead, so the value never sits in a json::Value or in a freed, unwiped heap block. A value of
// another kind under such a key is an error.
struct SecretMembers {
  std::vector<std::string> keys;
  std::vector<SecretString> found;
};

struct ParseOptions {
  int max_depth = 128;               // arrays + objects nested deeper than this are rejected
  SecretMembers* secrets = nullptr;  // optional: members kept out of the tree
};

// Parses exactly one JSON text. Throws space::Error "invalid JSON at line L, column C: <why>".
Value parse(std::string_view text, const ParseOptions& opts = {});

// Record readers: a member of object `obj`, checked; errors name the key (`field "vcpus": ...`).
// Required string member.
std::string string_field(const Value& obj, std::string_view key);
// Optional string member: `dflt` when absent or null.
std::string string_field_or(const Value& obj, std::string_view key, std::string dflt);
// Required integer member in [0, max].
uint64_t uint_field(const Value& obj, std::string_view key, uint64_t max = INT64_MAX);
// Optional integer member in [0, max]: `dflt` when absent or null.
uint64_t uint_field_or(const Value& obj, std::string_view key, uint64_t max, uint64_t dflt);

// `s` as a JSON string literal, quotes included (invalid UTF-8 becomes U+FFFD).
std::string quote(std::string_view s);

// Serializes `v`. indent 0 = compact on one line; otherwise pretty with that many spaces.
// Non-finite doubles are written as null.
std::string serialize(const Value& v, int indent = 0);

// Parses the JSON file `path` (at most 1 MiB) and converts it with `convert`; an error from
// either step is prefixed with "read <what> <path>".
template <class F>
auto load_file(const std::string& path, const std::string& what, F&& convert) {
  try {
    return convert(parse(fs::read_file(path, 1u << 20)));
  } catch (Error& e) {
    e.add_context("read " + what + " " + path);
    throw;
  }
}

// Writes `v` indented, with a final newline, to `path` atomically (fs::write_file_atomic).
void save_file(const std::string& path, const Value& v, mode_t mode,
               fs::Sync sync = fs::Sync::Durable);

}  // namespace space::json

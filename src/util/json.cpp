// The JSON value type and the record readers; see json.h. The parser is in json_parse.cpp, the
// serializer in json_write.cpp.
#include "util/json.h"

#include <utility>

#include "util/enum_names.h"
#include "util/error.h"

namespace space::json {

namespace {
constexpr EnumName<Kind> kKindNames[] = {
    {Kind::Null, "null"},        {Kind::Bool, "a boolean"},  {Kind::Int, "an integer"},
    {Kind::Double, "a number"},  {Kind::String, "a string"}, {Kind::Array, "an array"},
    {Kind::Object, "an object"},
};
}  // namespace

const char* kind_name(Kind k) {
  return name_in(kKindNames, k, "a value");
}

namespace {
[[noreturn]] void wrong_kind(Kind want, Kind got) {
  fail(std::string("JSON value is ") + kind_name(got) + ", expected " + kind_name(want));
}
}  // namespace

bool Value::as_bool() const {
  if (!is_bool()) wrong_kind(Kind::Bool, kind());
  return std::get<bool>(v_);
}

int64_t Value::as_int() const {
  if (!is_int()) wrong_kind(Kind::Int, kind());
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  if (kind() != Kind::Double) wrong_kind(Kind::Double, kind());
  return std::get<double>(v_);
}

const std::string& Value::as_string() const {
  if (!is_string()) wrong_kind(Kind::String, kind());
  return std::get<std::string>(v_);
}

const Array& Value::as_array() const {
  if (!is_array()) wrong_kind(Kind::Array, kind());
  return std::get<Array>(v_);
}

// The mutable accessors are the const ones' (same check, same error) on a value that is not const.
Array& Value::as_array() {
  return const_cast<Array&>(std::as_const(*this).as_array());
}

const Object& Value::as_object() const {
  if (!is_object()) wrong_kind(Kind::Object, kind());
  return std::get<Object>(v_);
}

Object& Value::as_object() {
  return const_cast<Object&>(std::as_const(*this).as_object());
}

const Value* Value::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (auto& m : std::get<Object>(v_))
    if (m.first == key) return &m.second;
  return nullptr;
}

const Value& Value::at(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail("JSON object has no member \"" + std::string(key) + "\"");
  return *v;
}

Value& Value::set(std::string key, Value v) {
  if (is_null()) v_ = Object{};
  auto& obj = as_object();
  for (auto& m : obj) {
    if (m.first == key) {
      m.second = std::move(v);
      return m.second;
    }
  }
  obj.emplace_back(std::move(key), std::move(v));
  return obj.back().second;
}

Value& Value::push_back(Value v) {
  if (is_null()) v_ = Array{};
  auto& arr = as_array();
  arr.push_back(std::move(v));
  return arr.back();
}

namespace {

const Value* member(const Value& obj, std::string_view key, bool required) {
  if (!obj.is_object()) fail(std::string("expected a JSON object, found ") + kind_name(obj.kind()));
  const Value* v = obj.find(key);
  if (v && v->is_null()) v = nullptr;
  if (!v && required) fail("field \"" + std::string(key) + "\" is missing");
  return v;
}

[[noreturn]] void bad_field(std::string_view key, const std::string& why) {
  fail("field \"" + std::string(key) + "\": " + why);
}

std::string as_string_field(const Value& v, std::string_view key) {
  if (!v.is_string())
    bad_field(key, std::string("expected a string, found ") + kind_name(v.kind()));
  return v.as_string();
}

uint64_t as_uint_field(const Value& v, std::string_view key, uint64_t max) {
  if (!v.is_int()) bad_field(key, std::string("expected an integer, found ") + kind_name(v.kind()));
  int64_t i = v.as_int();
  if (i < 0 || static_cast<uint64_t>(i) > max)
    bad_field(key, std::to_string(i) + " is out of range 0.." + std::to_string(max));
  return static_cast<uint64_t>(i);
}

}  // namespace

std::string string_field(const Value& obj, std::string_view key) {
  return as_string_field(*member(obj, key, true), key);
}

std::string string_field_or(const Value& obj, std::string_view key, std::string dflt) {
  const Value* v = member(obj, key, false);
  return v ? as_string_field(*v, key) : dflt;
}

uint64_t uint_field(const Value& obj, std::string_view key, uint64_t max) {
  return as_uint_field(*member(obj, key, true), key, max);
}

uint64_t uint_field_or(const Value& obj, std::string_view key, uint64_t max, uint64_t dflt) {
  const Value* v = member(obj, key, false);
  return v ? as_uint_field(*v, key, max) : dflt;
}

}  // namespace space::json

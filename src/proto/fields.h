// Field lists: the one place a message or a saved state names its fields. A struct lists them,
// in wire order, once:
//     SPACE_FIELDS(rows, cols, (name, Max{64}));
// (util/field_list.h), which is its static member template
//     template <class S, class F>
//     static void fields(S& s, F&& f) {
//       f("rows", s.rows);
//       f("cols", s.cols);
//       f("name", s.name, Max{64});
//     }
// (S is the struct, const or not; each field is named as its member is; a field given as
// (member, options...) passes its options on). A list that computes something between fields
// (ExecRequest's flag word) writes that template out by hand. From the list alone come
//   - its bytes: put_fields(Writer&, const T&) and encode_fields(const T&), and a message's
//     encode() and decode() through FieldMessage<T> (below);
//   - the same bytes read back: get_fields(Reader&, T&) and decode_fields<T>(bytes), every length
//     and count checked, then T::check() where the struct has one (ranges, cross-field rules);
//   - its JSON: fields_json(const T&), one member per field, named as listed, and back:
//     fields_from_json(object, T&) for the types a JSON file holds (unsigned integers, strings,
//     string lists, nested lists), a missing list being empty and any other missing member an
//     error; members it does not list are left for a newer reader.
// Field types and their bytes (little-endian, wire.h): an integer as its own size, two's
// complement (uint32_t as u32, int64_t as u64); bool as u8 0 or 1 (anything else is refused); an
// enum as its underlying type (its range is the struct's check()); std::string as str;
// std::vector<uint8_t> as bytes; std::array<uint8_t, N> as N raw bytes; std::vector<std::string>
// as strs; a pair of strings as two strs; a struct with a field list as its fields, inline; a
// vector of anything else as a u32 count, then each.
// A third argument bounds a field: Max{n} refuses a string longer than n bytes or a list of more
// than n entries when decoding; Cut{n} also cuts a longer string to n bytes when encoding (the
// peer's limit on a message we compose, such as an error's text). Lists without a bound are
// refused above kMaxListEntries. Blob{} sends a fixed-layout C struct (KVM's kvm_regs and the
// like) as bytes of exactly sizeof(T), so that state of another layout is refused, not misread.
// When{c} makes a field present only where c holds, c computed from fields listed before it (a
// flag word): when c is false the field has no bytes, no JSON member, and keeps its default when
// decoded.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "proto/wire.h"
#include "util/base64.h"
#include "util/field_list.h"
#include "util/json.h"

namespace space::proto {

// A field's options (see above); each sets what it is about.
struct FieldOption {
  size_t bound = SIZE_MAX;  // longest string or list decoded
  size_t cut = SIZE_MAX;    // longest string encoded
  bool on = true;           // the field is present
};
struct Max : FieldOption {
  explicit Max(size_t n) { bound = n; }
};
struct Cut : FieldOption {
  explicit Cut(size_t n) { bound = cut = n; }
};
struct When : FieldOption {
  explicit When(bool c) { on = c; }
};
struct Blob : FieldOption {};
constexpr uint32_t kMaxListEntries = 1u << 16;

namespace fields_detail {

struct Probe {
  template <class T, class... B>
  void operator()(const char*, T&, B...) {}
};

}  // namespace fields_detail

// The field list of a type that cannot hold its own (it lives in a lower layer, such as
// util/tree.h's TreeEntry): specialise with the same static fields() and, where wanted, a static
// check(const T&).
template <class T>
struct FieldList {};

template <class T>
concept OwnList = requires(T& t, fields_detail::Probe& p) {
  T::fields(t, p);
};
template <class T>
concept Listed = OwnList<T> || requires(T& t, fields_detail::Probe& p) {
  FieldList<T>::fields(t, p);
};

namespace fields_detail {

// Calls the field list of `s` (a T or a const T) with `f`.
template <class S, class F>
void visit(S& s, F& f) {
  using T = std::remove_const_t<S>;
  if constexpr (OwnList<T>)
    T::fields(s, f);
  else
    FieldList<T>::fields(s, f);
}

// Runs the check of a decoded `t`, where its type has one.
template <class T>
void run_check(const T& t) {
  if constexpr (requires { t.check(); })
    t.check();
  else if constexpr (requires { FieldList<T>::check(t); })
    FieldList<T>::check(t);
}

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

using StrPair = std::pair<std::string, std::string>;

// The tightest bound and cut among a field's options, whether it is present, and whether it is
// a Blob.
template <class... B>
size_t bound(B... b) {
  return std::min<size_t>({SIZE_MAX, b.bound...});
}
template <class... B>
size_t cut(B... b) {
  return std::min<size_t>({SIZE_MAX, b.cut...});
}
template <class... B>
bool present(B... b) {
  return (b.on && ...);
}
template <class... B>
constexpr bool blob = (std::is_same_v<B, Blob> || ...);

class Put {
 public:
  explicit Put(Writer& w) : w_(w) {}
  template <class T, class... B>
  void operator()(const char*, const T& v, B... b) {
    if (!present(b...)) return;
    if constexpr (blob<B...>) {
      static_assert(std::is_trivially_copyable_v<T>);
      w_.bytes({reinterpret_cast<const uint8_t*>(&v), sizeof(T)});
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (size_t n = cut(b...); v.size() > n)
        w_.str(v.substr(0, n));
      else
        w_.str(v);
    } else {
      put(v);
    }
  }

 private:
  template <class T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      w_.u8(v ? 1 : 0);
    } else if constexpr (std::is_enum_v<T>) {
      put(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (std::is_integral_v<T>) {  // any integer: its size, two's complement
      if constexpr (sizeof(T) == 1)
        w_.u8(static_cast<uint8_t>(v));
      else if constexpr (sizeof(T) == 2)
        w_.u16(static_cast<uint16_t>(v));
      else if constexpr (sizeof(T) == 4)
        w_.u32(static_cast<uint32_t>(v));
      else
        w_.u64(static_cast<uint64_t>(v));
    } else if constexpr (std::is_same_v<T, std::string>) {
      w_.str(v);
    } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
      w_.bytes(v);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      w_.strs(v);
    } else if constexpr (std::is_same_v<T, StrPair>) {
      w_.str(v.first);
      w_.str(v.second);
    } else if constexpr (IsVector<T>::value) {
      w_.u32(static_cast<uint32_t>(v.size()));
      for (const auto& x : v) put(x);
    } else if constexpr (Listed<T>) {
      visit(v, *this);
    } else {
      static_assert(sizeof(T) == 0, "a field type the field lists do not know");
    }
  }
  template <size_t N>
  void put(const std::array<uint8_t, N>& a) {
    w_.raw(a);
  }
  Writer& w_;
};

class Get {
 public:
  explicit Get(Reader& r) : r_(r) {}
  template <class T, class... B>
  void operator()(const char* name, T& v, B... b) {
    if (!present(b...)) return;
    name_ = name;
    if constexpr (blob<B...>) {
      static_assert(std::is_trivially_copyable_v<T>);
      auto bytes = r_.bytes();
      if (bytes.size() != sizeof(T))
        refuse(std::to_string(bytes.size()) + " bytes, expected " + std::to_string(sizeof(T)));
      std::memcpy(&v, bytes.data(), sizeof(T));
    } else {
      get(v, bound(b...));
    }
  }

 private:
  [[noreturn]] void refuse(const std::string& what) const {
    throw ProtoError(std::string("field ") + name_ + ": " + what);
  }
  template <class T>
  void get(T& v, size_t max) {
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t b = r_.u8();
      if (b > 1) refuse("not 0 or 1");
      v = b == 1;
    } else if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> u;
      get(u, max);
      v = static_cast<T>(u);
    } else if constexpr (std::is_integral_v<T>) {
      if constexpr (sizeof(T) == 1)
        v = static_cast<T>(r_.u8());
      else if constexpr (sizeof(T) == 2)
        v = static_cast<T>(r_.u16());
      else if constexpr (sizeof(T) == 4)
        v = static_cast<T>(r_.u32());
      else
        v = static_cast<T>(r_.u64());
    } else if constexpr (std::is_same_v<T, std::string>) {
      v = r_.str();
      if (v.size() > max) refuse("longer than " + std::to_string(max) + " bytes");
    } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
      auto b = r_.bytes();
      if (b.size() > max) refuse("longer than " + std::to_string(max) + " bytes");
      v.assign(b.begin(), b.end());
    } else if constexpr (std::is_same_v<T, StrPair>) {
      v.first = r_.str();
      v.second = r_.str();
    } else if constexpr (IsVector<T>::value) {
      uint32_t n = r_.u32();
      if (n > std::min<size_t>(max, kMaxListEntries))
        refuse("more than " + std::to_string(std::min<size_t>(max, kMaxListEntries)) + " entries");
      v.clear();
      v.reserve(n);
      const char* list = name_;
      for (uint32_t i = 0; i < n; i++) {
        get(v.emplace_back(), SIZE_MAX);
        name_ = list;
      }
    } else if constexpr (Listed<T>) {
      visit(v, *this);
      run_check(v);
    } else {
      static_assert(sizeof(T) == 0, "a field type the field lists do not know");
    }
  }
  template <size_t N>
  void get(std::array<uint8_t, N>& a, size_t) {
    auto b = r_.raw(N);
    std::copy(b.begin(), b.end(), a.begin());
  }
  Reader& r_;
  const char* name_ = "";
};

class Json {
 public:
  explicit Json(json::Value& out) : out_(out) {}
  template <class T, class... B>
  void operator()(const char* name, const T& v, B... b) {
    if (!present(b...)) return;
    if constexpr (blob<B...>)
      out_.set(name, base64::encode({reinterpret_cast<const char*>(&v), sizeof(T)}));
    else
      out_.set(name, value(v));
  }

 private:
  template <class T>
  static json::Value value(const T& v) {
    if constexpr (std::is_same_v<T, bool> || std::is_arithmetic_v<T> ||
                  std::is_same_v<T, std::string>) {
      return json::Value(v);
    } else if constexpr (std::is_enum_v<T>) {
      return json::Value(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
      return json::Value(base64::encode({reinterpret_cast<const char*>(v.data()), v.size()}));
    } else if constexpr (std::is_same_v<T, StrPair>) {
      json::Value a = json::Value::array();
      a.push_back(v.first);
      a.push_back(v.second);
      return a;
    } else if constexpr (IsVector<T>::value) {
      json::Value a = json::Value::array();
      for (const auto& x : v) a.push_back(value(x));
      return a;
    } else if constexpr (Listed<T>) {
      json::Value o = json::Value::object();
      Json j(o);
      visit(v, j);
      return o;
    } else {
      static_assert(sizeof(T) == 0, "a field type the field lists do not know");
    }
  }
  template <size_t N>
  static json::Value value(const std::array<uint8_t, N>& a) {
    return json::Value(base64::encode({reinterpret_cast<const char*>(a.data()), N}));
  }
  json::Value& out_;
};

class FromJson {
 public:
  explicit FromJson(const json::Value& obj) : obj_(obj) {}
  template <class T, class... B>
  void operator()(const char* name, T& v, B... b) {
    if (!present(b...)) return;
    if constexpr (std::is_same_v<T, std::string>) {
      v = json::string_field(obj_, name);
    } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> &&
                         !std::is_same_v<T, bool>) {
      // JSON integers stop at INT64_MAX (json.h), as json::uint_field's own default does.
      v = static_cast<T>(json::uint_field(
          obj_, name, std::min<uint64_t>(std::numeric_limits<T>::max(), INT64_MAX)));
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      v.clear();
      const json::Value* a = obj_.find(name);
      if (!a) return;
      if (!a->is_array()) fail("\"" + std::string(name) + "\" is not an array");
      for (const auto& x : a->as_array()) {
        if (!x.is_string()) fail("\"" + std::string(name) + "\" holds a non-string");
        v.push_back(x.as_string());
      }
    } else if constexpr (Listed<T>) {
      const json::Value* o = obj_.find(name);
      if (!o || !o->is_object()) fail("\"" + std::string(name) + "\" is missing or not an object");
      FromJson inner(*o);
      visit(v, inner);
      run_check(v);
    } else {
      static_assert(sizeof(T) == 0, "a field type fields_from_json does not read");
    }
  }

 private:
  const json::Value& obj_;
};

}  // namespace fields_detail

// Appends t's fields to `w`, in the order listed.
template <Listed T>
void put_fields(Writer& w, const T& t) {
  fields_detail::Put p(w);
  fields_detail::visit(t, p);
}

template <Listed T>
std::vector<uint8_t> encode_fields(const T& t) {
  Writer w;
  put_fields(w, t);
  return std::move(w.buffer());
}

// Reads t's fields from `r`, then runs t.check() where T has one; throws ProtoError.
template <Listed T>
void get_fields(Reader& r, T& t) {
  fields_detail::Get g(r);
  g("", t);
}

// A T from exactly `bytes` (trailing bytes are refused).
template <Listed T>
T decode_fields(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  T t;
  get_fields(r, t);
  r.finish();
  return t;
}

// A message whose wire form is its field list derives from FieldMessage<itself>
//     struct WindowSize : FieldMessage<WindowSize> { ...; fields(...) };
// for its encode() (encode_fields) and static decode(bytes) (decode_fields: trailing bytes
// refused, then its check()). The base holds no data: the struct's size, layout and field list
// are its own. A message that decodes otherwise (Hello, which reads its version first) declares
// its own decode, which hides this one.
template <class T>
struct FieldMessage {
  std::vector<uint8_t> encode() const { return encode_fields(static_cast<const T&>(*this)); }
  static T decode(std::span<const uint8_t> bytes) { return decode_fields<T>(bytes); }
};

// Reads t's fields from JSON object `obj`, then runs t's check; throws space::Error naming the
// field.
template <Listed T>
void fields_from_json(const json::Value& obj, T& t) {
  if (!obj.is_object()) fail("not a JSON object");
  fields_detail::FromJson j(obj);
  fields_detail::visit(t, j);
  fields_detail::run_check(t);
}

// t as a JSON object: one member per field (byte strings in base64).
template <Listed T>
json::Value fields_json(const T& t) {
  json::Value o = json::Value::object();
  fields_detail::Json j(o);
  fields_detail::visit(t, j);
  return o;
}

}  // namespace space::proto

// The SPACE_FIELDS macro: how a struct lists its fields once. proto/fields.h says what a field
// list is and derives bytes, checked decoding and JSON from it; this header holds only the macro
// (no types), so that a struct in any layer (store/oci.h's image config) can list its fields
// without depending on proto.
#pragma once

// SPACE_FIELDS(entries...) is the struct's static fields(s, f), calling f("member", s.member) or
// f("member", s.member, options...) for each entry in turn. An entry is `member` or
// `(member, options...)`; the helpers below walk the entries one by one (a list of up to 256),
// and take a parenthesised entry apart while leaving a bare one as it is.
#define SPACE_FIELDS(...)                               \
  template <class S, class F>                           \
  static void fields(S& s, F&& f) {                     \
    SPACE_FIELDS_EXPAND(SPACE_FIELDS_EACH(__VA_ARGS__)) \
  }                                                     \
  static_assert(true)
#define SPACE_FIELDS_EACH(entry, ...) \
  SPACE_FIELDS_ONE(entry) __VA_OPT__(SPACE_FIELDS_AGAIN SPACE_FIELDS_PARENS(__VA_ARGS__))
#define SPACE_FIELDS_AGAIN() SPACE_FIELDS_EACH
#define SPACE_FIELDS_PARENS ()
#define SPACE_FIELDS_EXPAND(...) \
  SPACE_FIELDS_EXPAND3(          \
      SPACE_FIELDS_EXPAND3(SPACE_FIELDS_EXPAND3(SPACE_FIELDS_EXPAND3(__VA_ARGS__))))
#define SPACE_FIELDS_EXPAND3(...) \
  SPACE_FIELDS_EXPAND2(           \
      SPACE_FIELDS_EXPAND2(SPACE_FIELDS_EXPAND2(SPACE_FIELDS_EXPAND2(__VA_ARGS__))))
#define SPACE_FIELDS_EXPAND2(...) \
  SPACE_FIELDS_EXPAND1(           \
      SPACE_FIELDS_EXPAND1(SPACE_FIELDS_EXPAND1(SPACE_FIELDS_EXPAND1(__VA_ARGS__))))
#define SPACE_FIELDS_EXPAND1(...) __VA_ARGS__
#define SPACE_FIELDS_ONE(entry) SPACE_FIELDS_CALL(SPACE_FIELDS_STRIP(SPACE_FIELDS_OPEN entry))
#define SPACE_FIELDS_OPEN(...) SPACE_FIELDS_OPEN __VA_ARGS__
#define SPACE_FIELDS_STRIP(...) SPACE_FIELDS_STRIP_(__VA_ARGS__)
#define SPACE_FIELDS_STRIP_(...) SPACE_FIELDS_GONE_##__VA_ARGS__
#define SPACE_FIELDS_GONE_SPACE_FIELDS_OPEN
#define SPACE_FIELDS_CALL(...) SPACE_FIELDS_CALL_(__VA_ARGS__)
#define SPACE_FIELDS_CALL_(member, ...) f(#member, s.member __VA_OPT__(, ) __VA_ARGS__);

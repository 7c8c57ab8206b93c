// An enum's names, written once: a constexpr table of {value, name} pairs, and the two lookups
// every such table is read with (value to name, for messages, JSON and logs; name to value, for
// what a user or a file wrote). The table is the one place a name is spelled, so a name that is
// printed is also the name that parses.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace space {

template <class E>
using EnumName = std::pair<E, const char*>;

// The name `table` gives `v`, or `otherwise` for a value it does not list.
template <class E, size_t N>
constexpr const char* name_in(const EnumName<E> (&table)[N], E v, const char* otherwise) {
  for (const auto& [value, name] : table)
    if (value == v) return name;
  return otherwise;
}

// The value `table` names `name`; nullopt for a name it does not list.
template <class E, size_t N>
constexpr std::optional<E> value_in(const EnumName<E> (&table)[N], std::string_view name) {
  for (const auto& [value, n] : table)
    if (name == n) return value;
  return std::nullopt;
}

}  // namespace space

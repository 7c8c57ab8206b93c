// Durations as users type them: a whole number with a unit, s, m, h or d ("30s", "10m", "2h",
// "1d"), from one second up to ten years; used by grants (ttl=10m) and sandboxes (--ttl 2h).
#pragma once
#include <cstdint>
#include <string>

namespace space {

// Milliseconds for `text`; throws space::Error whose hint shows the form with `example_prefix`
// in front of each example ("ttl=" or "--ttl ").
uint64_t parse_duration_ms(const std::string& text, const std::string& example_prefix);
// "45s", "1h30m", "2d": whole seconds, rounded up.
std::string format_duration_ms(uint64_t ms);

}  // namespace space

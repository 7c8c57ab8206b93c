// Durations; see duration.h.
#include "util/duration.h"

#include "util/error.h"

namespace space {
namespace {
constexpr uint64_t kMaxDurationMs = 10ull * 366 * 24 * 3600 * 1000;
}  // namespace

uint64_t parse_duration_ms(const std::string& text, const std::string& p) {
  const std::string hint = "use a whole number with s, m, h or d, e.g. " + p + "30s, " + p +
                           "10m, " + p + "2h, " + p + "1d";
  if (text.size() < 2) fail("invalid duration \"" + text + "\"", hint);
  uint64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1000;
      break;
    case 'm':
      unit = 60'000;
      break;
    case 'h':
      unit = 3'600'000;
      break;
    case 'd':
      unit = 86'400'000;
      break;
    default:
      fail("invalid duration \"" + text + "\"", hint);
  }
  std::string digits = text.substr(0, text.size() - 1);
  if (digits.empty() || digits.size() > 12 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    fail("invalid duration \"" + text + "\": not a whole number from 1 up to 10 years", hint);
  uint64_t n = std::stoull(digits);
  if (n == 0 || n > kMaxDurationMs / unit)
    fail("invalid duration \"" + text + "\": not a whole number from 1 up to 10 years", hint);
  return n * unit;
}

std::string format_duration_ms(uint64_t ms) {
  uint64_t s = (ms + 999) / 1000;
  if (s < 60) return std::to_string(s) + "s";
  std::string out;
  uint64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, r = s % 60;
  if (d) out += std::to_string(d) + "d";
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (r) out += std::to_string(r) + "s";
  return out;
}

}  // namespace space

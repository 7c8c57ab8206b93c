// UTC calendar arithmetic without libc's time zone code: the first gmtime_r() or timegm() in a
// process runs tzset(), which opens /etc/localtime, and the jailed VMM's seccomp filter kills it
// for any open. Log lines, state files and audit logs format their times with these instead.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace space::utc {

struct Civil {
  int64_t year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  int hour = 0, minute = 0, second = 0;
};

// The UTC calendar time of `unix_s` seconds since the epoch (proleptic Gregorian calendar).
Civil from_unix(int64_t unix_s);
// The inverse; fields out of their range are refused by parse(), not here.
int64_t to_unix(const Civil& c);
// "2026-11-29T20:00:00Z", and with milliseconds "2026-11-29T20:00:00.123Z".
std::string rfc3339(int64_t unix_s);
std::string rfc3339_ms(uint64_t ms);
// Seconds since the epoch of exactly "YYYY-MM-DDTHH:MM:SSZ" (a valid date and time), else nullopt.
std::optional<int64_t> parse(std::string_view text);

}  // namespace space::utc

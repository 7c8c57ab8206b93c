// UTC calendar arithmetic; see utc.h. Days are counted from 0000-03-01 in 400-year eras of
// 146097 days, so that the leap day ends each year.
#include "util/utc.h"

#include <cstdio>

namespace space::utc {
namespace {

constexpr int64_t kSecondsPerDay = 86400;
constexpr int64_t kDaysPerEra = 146097;
// Days from 0000-03-01 to 1970-01-01.
constexpr int64_t kEpochDays = 719468;

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int days_in_month(int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

}  // namespace

Civil from_unix(int64_t unix_s) {
  int64_t days = floor_div(unix_s, kSecondsPerDay);
  int64_t secs = unix_s - days * kSecondsPerDay;
  int64_t z = days + kEpochDays;
  int64_t era = floor_div(z, kDaysPerEra);
  int64_t doe = z - era * kDaysPerEra;                                  // [0, 146096]
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365], from March
  int64_t mp = (5 * doy + 2) / 153;                                     // [0, 11], March = 0
  Civil c;
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  c.year = yoe + era * 400 + (c.month <= 2 ? 1 : 0);
  c.hour = static_cast<int>(secs / 3600);
  c.minute = static_cast<int>(secs / 60 % 60);
  c.second = static_cast<int>(secs % 60);
  return c;
}

int64_t to_unix(const Civil& c) {
  int64_t y = c.year - (c.month <= 2 ? 1 : 0);
  int64_t era = floor_div(y, 400);
  int64_t yoe = y - era * 400;
  int64_t mp = c.month > 2 ? c.month - 3 : c.month + 9;
  int64_t doy = (153 * mp + 2) / 5 + c.day - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = era * kDaysPerEra + doe - kEpochDays;
  return days * kSecondsPerDay + c.hour * 3600 + c.minute * 60 + c.second;
}

std::string rfc3339(int64_t unix_s) {
  Civil c = from_unix(unix_s);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02dZ", static_cast<long long>(c.year),
                c.month, c.day, c.hour, c.minute, c.second);
  return buf;
}

std::string rfc3339_ms(uint64_t ms) {
  Civil c = from_unix(static_cast<int64_t>(ms / 1000));
  char buf[56];
  std::snprintf(buf, sizeof buf, "%04lld-%02d-%02dT%02d:%02d:%02d.%03uZ",
                static_cast<long long>(c.year), c.month, c.day, c.hour, c.minute, c.second,
                static_cast<unsigned>(ms % 1000));
  return buf;
}

std::optional<int64_t> parse(std::string_view text) {
  // Exactly YYYY-MM-DDTHH:MM:SSZ: 20 characters, digits where digits go.
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:ddZ";
  if (text.size() != kShape.size()) return std::nullopt;
  for (size_t i = 0; i < text.size(); i++) {
    bool digit = text[i] >= '0' && text[i] <= '9';
    if (kShape[i] == 'd' ? !digit : text[i] != kShape[i]) return std::nullopt;
  }
  auto num = [&](size_t at, size_t len) {
    int v = 0;
    for (size_t i = at; i < at + len; i++) v = v * 10 + (text[i] - '0');
    return v;
  };
  Civil c;
  c.year = num(0, 4);
  c.month = num(5, 2);
  c.day = num(8, 2);
  c.hour = num(11, 2);
  c.minute = num(14, 2);
  c.second = num(17, 2);
  if (c.month < 1 || c.month > 12 || c.day < 1 || c.day > days_in_month(c.year, c.month) ||
      c.hour > 23 || c.minute > 59 || c.second > 59)
    return std::nullopt;
  return to_unix(c);
}

}  // namespace space::utc

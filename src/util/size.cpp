// parse_size: see size.h.
#include "util/size.h"

#include <cctype>

#include "util/error.h"

namespace space {

uint64_t parse_size(const std::string& s) {
  auto bad = [&] {
    fail("invalid size '" + s + "'", "give bytes or a number with K, M, G or T (for example 8G)");
  };
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) bad();
  size_t pos = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(s, &pos);
  } catch (...) {
    bad();
  }
  std::string unit = s.substr(pos);
  int shift = 0;
  if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M" || unit == "m")
    shift = 20;
  else if (unit == "G" || unit == "g")
    shift = 30;
  else if (unit == "T" || unit == "t")
    shift = 40;
  else if (!unit.empty())
    bad();
  if (n > (UINT64_MAX >> shift)) bad();
  return uint64_t(n) << shift;
}

}  // namespace space

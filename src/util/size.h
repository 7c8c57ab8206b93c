// Sizes as users type them on the command line: "1073741824", "512K", "64M", "8G", "1T"
// (binary units, either case).
#pragma once
#include <cstdint>
#include <string>

namespace space {

// Bytes for `s`; throws space::Error naming the accepted forms on anything else or an overflow.
uint64_t parse_size(const std::string& s);

}  // namespace space

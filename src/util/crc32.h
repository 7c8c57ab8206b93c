// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, the zlib/PNG checksum), used to detect
// corrupted snapshot files. The lookup table is built at compile time; crc32() can be fed in
// pieces by passing the previous result as `seed`.
#pragma once
#include <cstdint>
#include <span>

namespace space {

// CRC-32 of `data`, continuing from `seed` (the CRC of the bytes before it; 0 to start).
uint32_t crc32(std::span<const uint8_t> data, uint32_t seed = 0);

}  // namespace space

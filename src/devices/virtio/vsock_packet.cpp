// Header encoding (fixed little-endian offsets, no packed structs) and the handshake parser.
#include "devices/virtio/vsock_packet.h"

#include <bit>
#include <cstring>

namespace space::devices::vsock {
namespace {
static_assert(std::endian::native == std::endian::little, "vsock headers are little-endian");

template <class T>
void put(uint8_t* p, size_t off, T v) {
  std::memcpy(p + off, &v, sizeof v);
}
template <class T>
T get(const uint8_t* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}
}  // namespace

bool decode_header(std::span<const uint8_t> in, Header& h) {
  if (in.size() < kHeaderSize) return false;
  const uint8_t* p = in.data();
  h.src_cid = get<uint64_t>(p, 0);
  h.dst_cid = get<uint64_t>(p, 8);
  h.src_port = get<uint32_t>(p, 16);
  h.dst_port = get<uint32_t>(p, 20);
  h.len = get<uint32_t>(p, 24);
  h.type = get<uint16_t>(p, 28);
  h.op = get<uint16_t>(p, 30);
  h.flags = get<uint32_t>(p, 32);
  h.buf_alloc = get<uint32_t>(p, 36);
  h.fwd_cnt = get<uint32_t>(p, 40);
  return true;
}

std::array<uint8_t, kHeaderSize> encode_header(const Header& h) {
  std::array<uint8_t, kHeaderSize> b{};
  uint8_t* p = b.data();
  put(p, 0, h.src_cid);
  put(p, 8, h.dst_cid);
  put(p, 16, h.src_port);
  put(p, 20, h.dst_port);
  put(p, 24, h.len);
  put(p, 28, h.type);
  put(p, 30, h.op);
  put(p, 32, h.flags);
  put(p, 36, h.buf_alloc);
  put(p, 40, h.fwd_cnt);
  return b;
}

std::optional<uint32_t> parse_connect_line(std::string_view line) {
  constexpr std::string_view kPrefix = "CONNECT ";
  if (line.size() >= kMaxConnectLine || !line.starts_with(kPrefix)) return std::nullopt;
  std::string_view digits = line.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 10) return std::nullopt;
  uint64_t port = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<uint64_t>(c - '0');
  }
  if (port == 0 || port >= 0xffffffffULL) return std::nullopt;
  return static_cast<uint32_t>(port);
}

std::string format_ok_line(uint32_t host_port) {
  return "OK " + std::to_string(host_port) + "\n";
}

uint32_t peer_credit(uint32_t peer_buf_alloc, uint32_t peer_fwd_cnt, uint32_t sent_cnt) {
  uint32_t in_flight = sent_cnt - peer_fwd_cnt;  // modular, as the counters wrap
  return in_flight >= peer_buf_alloc ? 0 : peer_buf_alloc - in_flight;
}

}  // namespace space::devices::vsock

// vsock dialing and agent framing over it; see agent_client.h.
#include "agent/client.h"

#include <sys/random.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace space::agent {

Fd vsock_dial(const std::string& vsock_sock, uint32_t port, const net::Deadline& dl) {
  Fd fd = net::unix_connect(vsock_sock, dl);
  net::send_all(fd.get(), "CONNECT " + std::to_string(port) + "\n", dl);
  auto line = net::read_line(fd.get(), dl, 64);
  if (!line) throw_errno("connect to guest port " + std::to_string(port), ECONNRESET);
  if (line->rfind("OK ", 0) != 0)
    fail("connect to guest port " + std::to_string(port) + ": unexpected reply \"" + *line + "\"");
  return fd;
}

void write_frame(int fd, proto::Type type, std::span<const uint8_t> payload,
                 const net::Deadline& dl) {
  std::vector<uint8_t> bytes;
  try {
    bytes = proto::encode_frame(type, payload);
  } catch (proto::ProtoError& e) {
    e.add_context("encode frame");
    throw;
  }
  net::send_all(fd, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                dl);
}

std::optional<proto::Frame> read_frame(int fd, const net::Deadline& dl) {
  try {
    proto::FrameDecoder dec;
    uint8_t header[proto::kHeaderSize];
    if (!net::recv_exact(fd, header, sizeof header, dl)) return std::nullopt;
    dec.feed(header);  // validates the length before we allocate for it
    uint32_t len;
    std::memcpy(&len, header, 4);
    std::vector<uint8_t> payload(len);
    if (len && !net::recv_exact(fd, payload.data(), len, dl))
      fail("connection closed inside a frame");
    dec.feed(payload);
    auto f = dec.next();
    if (!f) fail("incomplete frame");
    return f;
  } catch (proto::ProtoError& e) {
    e.add_context("malformed frame from the guest");
    throw;
  }
}

proto::Hello make_hello(const std::string& sandbox, uint32_t flags) {
  proto::Hello hello;
  hello.client = "space";
  hello.sandbox = sandbox;
  hello.flags = flags;
  size_t got = 0;
  while (got < hello.entropy.size()) {
    ssize_t n = ::getrandom(hello.entropy.data() + got, hello.entropy.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("getrandom");
    }
    got += static_cast<size_t>(n);
  }
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  hello.time_ns =
      static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
  return hello;
}

proto::HelloReply agent_hello(int fd, const net::Deadline& dl, uint32_t flags) {
  write_frame(fd, proto::Type::Hello, make_hello("", flags).encode(), dl);
  return read_hello_reply(fd, dl);
}

proto::HelloReply read_hello_reply(int fd, const net::Deadline& dl) {
  auto f = read_frame(fd, dl);
  if (!f) throw_errno("guest agent closed the connection during the handshake", ECONNRESET);
  try {
    if (f->type == proto::Type::Error)
      fail("guest agent refused the handshake: " + proto::ErrorMsg::decode(f->payload).message);
    if (f->type != proto::Type::HelloReply)
      fail("guest agent answered the handshake with frame type " +
           std::to_string(static_cast<unsigned>(f->type)));
    auto reply = proto::HelloReply::decode(f->payload);
    if (reply.version != proto::kVersion)
      fail("guest agent speaks protocol version " + std::to_string(reply.version) + ", expected " +
               std::to_string(proto::kVersion),
           "rebuild the rootfs so its guest-init matches this space binary");
    return reply;
  } catch (proto::ProtoError& e) {
    e.add_context("malformed handshake reply from the guest");
    throw;
  }
}

}  // namespace space::agent

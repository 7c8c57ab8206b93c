// Test rig for virtio-vsock: the device behind a VirtioMmio with a real EventLoop and Unix
// sockets in a temporary directory, plus a simulated guest driver that posts RX and event
// buffers and sends TX packets through the rings in fake guest memory, and decodes what the
// device puts on the RX and event queues. Shared by devices/virtio/test_vsock*.cpp.
#pragma once
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>

#include "devices/virtio/vsock.h"
#include "support/temp_dir.h"
#include "support/virtio_driver.h"

namespace space::testing {

using namespace space::devices::vsock;

constexpr uint64_t kCid = 3;

struct Pkt {
  Header h;
  std::string payload;
};

// A VMM-side vsock device plus a simulated guest driver.
struct Rig {
  test::TempDir tmp{"vsock"};
  std::string dir = tmp.path;
  std::string path = dir + "/v.sock";
  EventLoop loop;
  memory::GuestMemory mem = memory::GuestMemory::anonymous(32 << 20);
  RecordingIrq irq;
  devices::VirtioVsock* vs = nullptr;
  std::unique_ptr<devices::VirtioMmio> dev;
  std::unique_ptr<FakeDriver> drv;
  std::map<uint16_t, std::pair<uint64_t, uint64_t>> rx_bufs;  // head -> (hdr gpa, data gpa)
  std::map<uint16_t, uint64_t> ev_bufs;
  std::deque<Pkt> inbox;
  std::vector<uint32_t> events;

  explicit Rig(uint64_t cid = kCid) {
    auto b = std::make_unique<devices::VirtioVsock>(loop, cid, path);
    vs = b.get();
    dev = std::make_unique<devices::VirtioMmio>("virtio-vsock0", mem, irq, std::move(b));
    drv = std::make_unique<FakeDriver>(mem, *dev);
  }
  ~Rig() { dev.reset(); }
  void init(int rx = 16) {
    REQUIRE((drv->init(256) & devices::virtio::kStatusDriverOk) != 0);
    post_rx(rx);
    post_events(4);
  }
  // Linux-style RX buffers: a header descriptor and a data descriptor.
  void post_rx(int n, uint32_t size = 4096) {
    for (int i = 0; i < n; i++) {
      uint64_t h = drv->alloc(kHeaderSize), d = drv->alloc(size);
      uint16_t head = drv->post(0, {{h, kHeaderSize, true}, {d, size, true}});
      rx_bufs[head] = {h, d};
    }
    drv->kick(0);
  }
  void post_events(int n) {
    for (int i = 0; i < n; i++) {
      uint64_t e = drv->alloc(8);
      ev_bufs[drv->post(2, {{e, 8, true}})] = e;
    }
    drv->kick(2);
  }
  // Sends one packet from the guest on the TX queue.
  void send(uint16_t op, uint32_t src_port, uint32_t dst_port, const std::string& payload = {},
            uint32_t buf_alloc = 65536, uint32_t fwd_cnt = 0, uint32_t flags = 0) {
    Header h;
    h.src_cid = kCid;
    h.dst_cid = kHostCid;
    h.src_port = src_port;
    h.dst_port = dst_port;
    h.len = static_cast<uint32_t>(payload.size());
    h.type = kTypeStream;
    h.op = op;
    h.flags = flags;
    h.buf_alloc = buf_alloc;
    h.fwd_cnt = fwd_cnt;
    auto raw = encode_header(h);
    std::vector<testing::Buf> bufs{{drv->put(raw.data(), raw.size()), kHeaderSize, false}};
    if (!payload.empty()) bufs.push_back({drv->put(payload.data(), payload.size()), h.len, false});
    drv->post(1, bufs);
    drv->kick(1);
  }
  // One loop round, then collect RX packets and events.
  void round(int timeout_ms = 5) {
    loop.run_once(timeout_ms);
    collect();
  }
  // Reads new RX packets and events off the used rings.
  void collect() {
    for (auto [id, len] : drv->used(0)) {
      auto [h, d] = rx_bufs.at(static_cast<uint16_t>(id));
      rx_bufs.erase(static_cast<uint16_t>(id));
      REQUIRE(len >= kHeaderSize);
      uint8_t raw[kHeaderSize];
      mem.read(h, raw, kHeaderSize);
      Pkt p;
      REQUIRE(decode_header(raw, p.h));
      REQUIRE(len == kHeaderSize + p.h.len);
      p.payload.resize(p.h.len);
      mem.read(d, p.payload.data(), p.h.len);
      inbox.push_back(p);
    }
    for (auto [id, len] : drv->used(2)) {
      REQUIRE(len == 4);
      uint32_t v = 0xffffffff;
      mem.read(ev_bufs.at(static_cast<uint16_t>(id)), &v, 4);
      events.push_back(v);
    }
  }
  bool pump(const std::function<bool()>& done, int rounds = 200) {
    for (int i = 0; i < rounds; i++) {
      if (done()) return true;
      round();
    }
    return done();
  }
  // Waits for the next RX packet with operation `op`, dropping none of the others.
  Pkt expect(uint16_t op) {
    Pkt out;
    bool ok = pump([&] {
      for (auto it = inbox.begin(); it != inbox.end(); ++it)
        if (it->h.op == op) {
          out = *it;
          inbox.erase(it);
          return true;
        }
      return false;
    });
    INFO("waiting for op " << op);
    REQUIRE(ok);
    return out;
  }
  // Concatenated RW payloads received so far (consumed).
  std::string take_data() {
    std::string s;
    for (auto it = inbox.begin(); it != inbox.end();) {
      if (it->h.op == kOpRw) {
        s += it->payload;
        it = inbox.erase(it);
      } else {
        ++it;
      }
    }
    return s;
  }
  Fd connect_client() {
    Fd c(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path.c_str());
    REQUIRE(::connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    return c;
  }
  Fd listen_host(uint32_t port) {
    Fd l(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, (path + "_" + std::to_string(port)).c_str());
    REQUIRE(::bind(l.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(l.get(), 8) == 0);
    return l;
  }
  // Reads from a host socket while pumping the loop until `n` bytes or EOF arrive.
  std::string read_host(int fd, size_t n, bool* eof = nullptr) {
    std::string s;
    pump([&] {
      char buf[65536];
      ssize_t r = ::recv(fd, buf, std::min(sizeof buf, n - s.size()), MSG_DONTWAIT);
      if (r > 0) s.append(buf, static_cast<size_t>(r));
      if (r == 0 && eof) *eof = true;
      return s.size() >= n || r == 0;
    });
    return s;
  }
  void write_host(int fd, const std::string& s) {
    REQUIRE(::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size()));
  }
  void unlink_host(uint32_t port) { ::unlink((path + "_" + std::to_string(port)).c_str()); }
};

// Drives a host-initiated connection to guest port `gport` up to "OK"; returns the host port.
inline uint32_t establish(Rig& r, int client, uint32_t gport, const std::string& extra = {}) {
  std::string line = "CONNECT " + std::to_string(gport) + "\n" + extra;
  REQUIRE(::send(client, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size()));
  Pkt req = r.expect(kOpRequest);
  CHECK(req.h.dst_port == gport);
  CHECK(req.h.dst_cid == kCid);
  CHECK(req.h.src_cid == kHostCid);
  CHECK(req.h.src_port >= devices::VirtioVsock::kFirstEphemeralPort);
  CHECK(req.h.buf_alloc == devices::VirtioVsock::kBufAlloc);
  r.send(kOpResponse, gport, req.h.src_port);
  std::string ok = r.read_host(client, format_ok_line(req.h.src_port).size());
  CHECK(ok == format_ok_line(req.h.src_port));
  return req.h.src_port;
}

}  // namespace space::testing

// virtio-vsock end to end, the device's guest-facing half (vsock.cpp; host-initiated connections
// are in test_vsock_host.cpp): guest-initiated connections and our credit, RSTs for unknown
// ports, transport reset, snapshots, hostile rings, and the real threading arrangement (loop
// thread plus a vCPU thread holding the device mutex).
#include <doctest/doctest.h>

#include <thread>

#include "devices/virtio/vsock.h"
#include "support/virtio_vsock_rig.h"

using namespace space;
using namespace space::devices;
using namespace space::memory;
using namespace space::devices::vsock;
using namespace space::testing;

TEST_CASE("guest-initiated connections go to <path>_<port>, or get RST") {
  Rig r;
  r.init();
  r.send(kOpRequest, 777, 5001);  // nobody there
  Pkt rst = r.expect(kOpRst);
  CHECK(rst.h.src_port == 5001);
  CHECK(rst.h.dst_port == 777);
  CHECK(r.vs->connection_count() == 0);

  Fd l = r.listen_host(5000);
  r.send(kOpRequest, 778, 5000);
  Pkt resp = r.expect(kOpResponse);
  CHECK(resp.h.src_port == 5000);
  CHECK(resp.h.dst_port == 778);
  Fd host(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
  REQUIRE(host.valid());

  r.send(kOpRw, 778, 5000, "hello host");
  CHECK(r.read_host(host.get(), 10) == "hello host");
  r.write_host(host.get(), "hello guest");
  r.pump([&] { return !r.inbox.empty(); });
  CHECK(r.take_data() == "hello guest");

  SUBCASE("our credit: a CREDIT_UPDATE follows half a buffer of forwarded data") {
    std::string chunk(kMaxPayload, 'z');
    r.send(kOpRw, 778, 5000, chunk);
    CHECK(r.read_host(host.get(), chunk.size()) == chunk);
    Pkt cu = r.expect(kOpCreditUpdate);
    CHECK(cu.h.fwd_cnt == 10 + kMaxPayload);
  }
  SUBCASE("a full buffer within credit is delivered in order") {
    std::string a(kMaxPayload, 'a'), b(kMaxPayload, 'b');
    r.send(kOpRw, 778, 5000, a);  // exactly kBufAlloc in flight, host not reading
    r.send(kOpRw, 778, 5000, b, 65536, 0);
    for (int i = 0; i < 5; i++) r.round();
    CHECK(r.read_host(host.get(), 2 * kMaxPayload) == a + b);
    CHECK(r.vs->connection_count() == 1);
  }
  SUBCASE("a guest that ignores our credit is reset") {
    std::string chunk(kMaxPayload, 'q');
    bool reset = false;
    for (int i = 0; i < 40 && !reset; i++) {
      r.send(kOpRw, 778, 5000, chunk);
      for (int j = 0; j < 3; j++) r.round();
      for (auto& p : r.inbox) reset = reset || p.h.op == kOpRst;
    }
    CHECK(reset);
  }
  SUBCASE("a packet longer than its buffer resets the connection") {
    Header h;
    h.src_cid = kCid;
    h.dst_cid = kHostCid;
    h.src_port = 778;
    h.dst_port = 5000;
    h.len = 1000;  // but only the header is sent
    h.type = kTypeStream;
    h.op = kOpRw;
    auto raw = encode_header(h);
    r.drv->post(1, {{r.drv->put(raw.data(), raw.size()), kHeaderSize, false}});
    r.drv->kick(1);
    r.expect(kOpRst);
    CHECK(r.vs->connection_count() == 0);
  }
  SUBCASE("the host closing turns into SHUTDOWN") {
    host.reset();
    Pkt s = r.expect(kOpShutdown);
    CHECK((s.h.flags & kShutdownSend) != 0);
  }
  r.unlink_host(5000);
}

TEST_CASE("packets for unknown connections get RST; foreign source cids are dropped") {
  Rig r;
  r.init();
  r.send(kOpRw, 1, 2, "stray");
  Pkt p = r.expect(kOpRst);
  CHECK(p.h.dst_port == 1);
  r.send(kOpRst, 1, 2);  // never answered
  Header h;
  h.src_cid = 99;
  h.dst_cid = kHostCid;
  h.type = kTypeStream;
  h.op = kOpRequest;
  auto raw = encode_header(h);
  r.drv->post(1, {{r.drv->put(raw.data(), raw.size()), kHeaderSize, false}});
  r.drv->kick(1);
  for (int i = 0; i < 10; i++) r.round();
  CHECK(r.inbox.empty());
}

TEST_CASE("reset_transport drops connections and sends TRANSPORT_RESET") {
  Rig r;
  r.init();
  Fd client = r.connect_client();
  establish(r, client.get(), 1234);
  {
    std::lock_guard lk(r.dev->mutex());
    r.vs->reset_transport();
  }
  CHECK(r.vs->connection_count() == 0);
  r.round();
  REQUIRE(r.events.size() == 1);
  CHECK(r.events[0] == kEventTransportReset);
  bool eof = false;
  r.read_host(client.get(), 1, &eof);
  CHECK(eof);
}

TEST_CASE("after a transport reset, RX waits until the guest has handled the event") {
  Rig r;
  r.init();
  {
    std::lock_guard lk(r.dev->mutex());
    r.vs->reset_transport();
  }
  r.round();
  REQUIRE(r.events.size() == 1);
  Fd client = r.connect_client();
  r.write_host(client.get(), "CONNECT 1024\n");
  for (int i = 0; i < 10; i++) r.round();
  CHECK(r.inbox.empty());  // the guest would reset a connection it saw before the event
  r.post_events(1);        // what Linux does once it has handled the event
  Pkt req = r.expect(kOpRequest);
  CHECK(req.h.dst_port == 1024);
}

TEST_CASE("save/restore keeps guest_cid and queue state; connections are not kept") {
  Rig a;
  a.init();
  auto blob = a.dev->save();
  Rig b(7);
  b.dev->restore(blob);
  uint64_t cid = 0;
  b.dev->read(0x100, {reinterpret_cast<uint8_t*>(&cid), 8});
  CHECK(cid == kCid);
  CHECK((b.dev->status() & devices::virtio::kStatusDriverOk) != 0);
  CHECK(b.dev->save() == blob);
}

TEST_CASE("a hostile RX ring breaks the device without crashing it") {
  Rig r;
  r.init(0);
  r.drv->post(0, {{0x10, 8, true}});  // smaller than a header
  r.drv->kick(0);
  Fd client = r.connect_client();
  r.write_host(client.get(), "CONNECT 5\n");
  for (int i = 0; i < 10; i++) r.round();
  CHECK((r.dev->status() & devices::virtio::kStatusNeedsReset) != 0);
}

TEST_CASE("threaded: the loop on its own thread, a vCPU thread under the device mutex") {
  Rig r;
  r.init();
  std::thread loop_thread([&] { r.loop.run(5); });
  auto locked = [&](const std::function<void()>& fn) {
    std::lock_guard lk(r.dev->mutex());
    fn();
  };
  auto wait_for = [&](uint16_t op) {
    for (int i = 0; i < 2000; i++) {
      Pkt found;
      bool ok = false;
      locked([&] {
        r.collect();
        for (auto it = r.inbox.begin(); it != r.inbox.end(); ++it)
          if (it->h.op == op) {
            found = *it;
            r.inbox.erase(it);
            ok = true;
            break;
          }
      });
      if (ok) return found;
      ::usleep(1000);
    }
    FAIL("timed out waiting for op " << op);
    return Pkt{};
  };
  auto read_blocking = [&](int fd, size_t n) {
    std::string s;
    while (s.size() < n) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) break;
      char buf[256];
      ssize_t got = ::recv(fd, buf, std::min(sizeof buf, n - s.size()), 0);
      if (got <= 0) break;
      s.append(buf, static_cast<size_t>(got));
    }
    return s;
  };

  Fd client = r.connect_client();
  r.write_host(client.get(), "CONNECT 42\n");
  Pkt req = wait_for(kOpRequest);
  locked([&] { r.send(kOpResponse, 42, req.h.src_port); });
  CHECK(read_blocking(client.get(), format_ok_line(req.h.src_port).size()) ==
        format_ok_line(req.h.src_port));
  r.write_host(client.get(), "abc");
  CHECK(wait_for(kOpRw).payload == "abc");
  locked([&] { r.send(kOpRw, 42, req.h.src_port, "xyz"); });
  CHECK(read_blocking(client.get(), 3) == "xyz");

  // A driver reset from the vCPU thread drops the connection; the loop thread closes it.
  locked([&] { r.drv->wr(0x70, 0); });
  pollfd p{client.get(), POLLIN, 0};
  REQUIRE(::poll(&p, 1, 2000) == 1);
  char c;
  CHECK(::recv(client.get(), &c, 1, 0) == 0);
  locked([&] { CHECK(r.vs->connection_count() == 0); });

  r.loop.stop();
  loop_thread.join();
}

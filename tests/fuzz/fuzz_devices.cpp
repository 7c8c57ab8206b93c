// libFuzzer harness for the device models a guest drives: virtio-mmio's registers, the split
// virtqueues in guest memory (descriptor chains, indirect tables, rings), virtio-blk requests,
// vsock packets and its connection state machine, virtio-rng, the 16550 UART and the i8042.
// The input picks a device, then is read as a sequence of operations, as a hostile guest
// would issue them: register writes and reads, raw bytes anywhere in guest memory, descriptor
// chains posted and notified, whole vsock packets (ports from a small set, so that sequences
// reach established connections), host clients connecting to the vsock socket and writing,
// event-loop rounds, and a save/restore round trip. Rules: nothing a guest does may throw out
// of a device (on the vCPU thread that would end the VMM), a device's saved state restores into
// a fresh one and saves back the same, and restoring arbitrary bytes either works or throws
// space::Error. Any broken rule is __builtin_trap; ASan and UBSan catch the rest.
// Built with clang++ -fsanitize=fuzzer,address,undefined when clang is found (CMakeLists.txt);
// ctest runs it for a fixed number of inputs.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "devices/i8042.h"
#include "devices/serial.h"
#include "devices/virtio/block.h"
#include "devices/virtio/mmio.h"
#include "devices/virtio/rng.h"
#include "devices/virtio/vsock.h"
#include "devices/virtio/vsock_packet.h"
#include "support/virtio_driver.h"
#include "util/error.h"
#include "util/event_loop.h"
#include "util/log.h"

using namespace space;
using namespace space::devices;

namespace {

constexpr uint64_t kMemBytes = 2u << 20;
constexpr uint32_t kPorts[] = {1024, 1025, 1026, 5000, 0x40000000};

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// Reads the input front to back; past the end every read is zero.
struct Input {
  const uint8_t* p;
  size_t n;
  bool empty() const { return n == 0; }
  uint8_t u8() {
    if (!n) return 0;
    n--;
    return *p++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() { return u16() | uint32_t{u16()} << 16; }
  std::string bytes(size_t max) {
    size_t len = std::min<size_t>(u8() % (max + 1), n);
    std::string s(reinterpret_cast<const char*>(p), len);
    p += len;
    n -= len;
    return s;
  }
};

// A scratch directory for vsock's sockets, made once per process and removed at its exit.
const std::string& scratch() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/space-fuzz-devices-XXXXXX";
    require(::mkdtemp(tmpl) != nullptr);
    return std::string(tmpl);
  }();
  // Registered after `dir` is made, so it runs before `dir` is destroyed.
  static const int cleanup = std::atexit([] {
    ::unlink((scratch() + "/v.sock").c_str());
    ::rmdir(scratch().c_str());
  });
  (void)cleanup;
  return dir;
}

Fd memfd_disk() {
  Fd fd(::memfd_create("disk", MFD_CLOEXEC));
  require(fd.valid() && ::ftruncate(fd.get(), 1 << 20) == 0);
  return fd;
}

std::unique_ptr<VirtioBackend> make_backend(int kind, EventLoop& loop) {
  switch (kind) {
    case 0:
      return std::make_unique<VirtioBlock>(memfd_disk(), VirtioBlock::Options{false, "fuzz"});
    case 1:
      return std::make_unique<VirtioVsock>(loop, 3, scratch() + "/v.sock");
    default:
      return std::make_unique<VirtioRng>();
  }
}

Fd connect_client(const std::string& path) {
  Fd c(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return Fd();
  return c;
}

void fuzz_virtio(int kind, Input& in) {
  EventLoop loop;
  memory::GuestMemory mem = memory::GuestMemory::anonymous(kMemBytes);
  testing::RecordingIrq irq;
  auto dev = std::make_unique<VirtioMmio>("virtio-fuzz", mem, irq, make_backend(kind, loop));
  testing::FakeDriver drv(mem, *dev);
  std::vector<Fd> clients;
  if (in.u8() & 1) drv.init(static_cast<uint16_t>(1u << (in.u8() % 9)));
  int ops = 0;
  while (!in.empty() && ops++ < 256) {
    switch (in.u8() % 9) {
      case 0: {  // a register write, any offset and width
        uint16_t off = in.u16() % 0x200;
        uint32_t v = in.u32();
        size_t width = size_t{1} << (in.u8() % 4);
        dev->write(off, {reinterpret_cast<const uint8_t*>(&v), std::min<size_t>(width, 4)});
        break;
      }
      case 1: {  // a register read
        uint8_t buf[8] = {};
        dev->read(in.u16() % 0x200, {buf, size_t{1} << (in.u8() % 4)});
        break;
      }
      case 2: {  // raw bytes anywhere in guest memory (rings, descriptors, buffers)
        uint64_t at = in.u32() % kMemBytes;
        std::string b = in.bytes(64);
        mem.write(at, b.data(), std::min<uint64_t>(b.size(), kMemBytes - at));
        break;
      }
      case 3: {  // a descriptor chain on one of the first queues, then a notification
        uint32_t q = in.u8() % 3;
        if (q >= dev->backend().num_queues()) break;
        drv.setup_queue(q, static_cast<uint16_t>(1u << (1 + in.u8() % 8)));
        std::vector<testing::Buf> bufs;
        size_t count = 1 + in.u8() % 6;
        for (size_t i = 0; i < count; i++) {
          uint32_t len = in.u8() & 1 ? in.u16() : in.u32();
          uint64_t gpa = in.u8() & 1 ? drv.alloc(len % 65536) : in.u32();
          bufs.push_back({gpa, len, (in.u8() & 1) != 0});
        }
        drv.post(q, bufs);
        drv.kick(q);
        break;
      }
      case 4: {  // a whole vsock packet on TX (header fields from the input, a payload)
        if (kind != 1) break;
        vsock::Header h;
        h.src_cid = in.u8() & 7 ? 3 : in.u32();
        h.dst_cid = in.u8() & 7 ? vsock::kHostCid : in.u32();
        h.src_port = kPorts[in.u8() % 5];
        h.dst_port = kPorts[in.u8() % 5];
        h.type = in.u8() & 7 ? vsock::kTypeStream : in.u16();
        h.op = static_cast<uint16_t>(in.u8() % 9);
        h.flags = in.u8() % 4;
        h.buf_alloc = in.u8() & 1 ? 65536 : in.u32();
        h.fwd_cnt = in.u32();
        std::string payload = in.bytes(200);
        h.len = in.u8() & 7 ? static_cast<uint32_t>(payload.size()) : in.u32();
        auto raw = vsock::encode_header(h);
        std::vector<testing::Buf> bufs{
            {drv.put(raw.data(), raw.size()), vsock::kHeaderSize, false}};
        if (!payload.empty())
          bufs.push_back({drv.put(payload.data(), payload.size()),
                          static_cast<uint32_t>(payload.size()), false});
        drv.setup_queue(1, 64);
        drv.post(1, bufs);
        drv.kick(1);
        break;
      }
      case 5: {  // RX buffers, the way the Linux driver posts them
        if (kind != 1) break;
        drv.setup_queue(0, 64);
        for (int i = 0, n = 1 + in.u8() % 8; i < n; i++) {
          uint32_t size = in.u8() & 1 ? 4096 : in.u16();
          drv.post(0, {{drv.alloc(vsock::kHeaderSize), vsock::kHeaderSize, true},
                       {drv.alloc(size), size, true}});
        }
        drv.kick(0);
        break;
      }
      case 6: {  // a host client: CONNECT to a port, maybe more bytes, or junk
        if (kind != 1 || clients.size() >= 8) break;
        Fd c = connect_client(scratch() + "/v.sock");
        if (!c) break;
        std::string line =
            in.u8() & 3 ? "CONNECT " + std::to_string(kPorts[in.u8() % 5]) + "\n" : in.bytes(40);
        line += in.bytes(100);
        (void)!::send(c.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        clients.push_back(std::move(c));
        break;
      }
      case 7: {  // a client writes, reads or goes away
        if (clients.empty()) break;
        size_t i = in.u8() % clients.size();
        switch (in.u8() % 3) {
          case 0: {
            std::string b = in.bytes(200);
            (void)!::send(clients[i].get(), b.data(), b.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            break;
          }
          case 1: {
            char buf[512];
            (void)!::recv(clients[i].get(), buf, sizeof buf, MSG_DONTWAIT);
            break;
          }
          default:
            clients.erase(clients.begin() + static_cast<ptrdiff_t>(i));
        }
        break;
      }
      default:
        loop.run_once(0);
    }
  }
  for (int i = 0; i < 4; i++) loop.run_once(0);
  // The saved state restores into a fresh device over the same memory and saves back the same.
  auto saved = dev->save();
  EventLoop loop2;
  testing::RecordingIrq irq2;
  dev.reset();  // vsock's socket path is reused
  auto fresh = std::make_unique<VirtioMmio>("virtio-fuzz", mem, irq2, make_backend(kind, loop2));
  fresh->restore(saved);
  require(fresh->save() == saved);
}

void fuzz_legacy(int kind, Input& in) {
  testing::RecordingIrq irq;
  std::unique_ptr<Device> dev;
  if (kind == 3)
    dev = std::make_unique<Serial>(irq, -1);
  else
    dev = std::make_unique<I8042>([] {});
  int ops = 0;
  while (!in.empty() && ops++ < 4096) {
    uint8_t op = in.u8();
    uint8_t off = in.u8() % 8;
    uint8_t v = in.u8();
    if (op & 1)
      dev->write(off, {&v, 1});
    else
      dev->read(off, {&v, 1});
  }
  auto saved = dev->save();
  std::unique_ptr<Device> fresh;
  if (kind == 3)
    fresh = std::make_unique<Serial>(irq, -1);
  else
    fresh = std::make_unique<I8042>([] {});
  fresh->restore(saved);
  require(fresh->save() == saved);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = [] {
    log::configure(log::Level::Error, log::Format::Text);  // the devices' warnings: noise here
    return true;
  }();
  (void)quiet;
  Input in{data, size};
  int kind = in.u8() % 5;
  try {
    if (kind < 3)
      fuzz_virtio(kind, in);
    else
      fuzz_legacy(kind, in);
  } catch (const std::exception&) {
    __builtin_trap();  // a device threw on what a guest did
  }
  // Restoring arbitrary bytes: a fresh device accepts them or throws space::Error.
  if (size > 1) {
    memory::GuestMemory mem = memory::GuestMemory::anonymous(kMemBytes);
    testing::RecordingIrq irq;
    EventLoop loop;
    std::span<const uint8_t> blob(data + 1, size - 1);
    try {
      if (kind < 3) {
        VirtioMmio dev("virtio-fuzz", mem, irq, make_backend(kind, loop));
        dev.restore(blob);
      } else if (kind == 3) {
        Serial(irq, -1).restore(blob);
      } else {
        I8042([] {}).restore(blob);
      }
    } catch (const Error&) {
    }
  }
  return 0;
}

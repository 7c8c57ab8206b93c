// virtio-blk request execution. A request chain is: a 16-byte readable header {type, reserved,
// sector}, then data (readable for OUT, writable for IN and GET_ID), then one writable status
// byte, which is the chain's last writable byte.
#include "devices/virtio/block.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "util/error.h"
#include "util/log.h"

namespace space::devices {
namespace {

constexpr uint64_t kFSizeMax = 1ULL << 1;
constexpr uint64_t kFSegMax = 1ULL << 2;
constexpr uint64_t kFRo = 1ULL << 5;
constexpr uint64_t kFFlush = 1ULL << 9;

constexpr uint32_t kTypeIn = 0;
constexpr uint32_t kTypeOut = 1;
constexpr uint32_t kTypeFlush = 4;
constexpr uint32_t kTypeGetId = 8;

constexpr uint8_t kStatusOk = 0;
constexpr uint8_t kStatusIoErr = 1;
constexpr uint8_t kStatusUnsupp = 2;

constexpr uint64_t kSector = 512;
constexpr size_t kConfigSize = 60;  // struct virtio_blk_config up to write_zeroes_may_unmap

struct ReqHeader {
  uint32_t type;
  uint32_t reserved;
  uint64_t sector;
};
static_assert(sizeof(ReqHeader) == 16);

// preadv/pwritev of all of `iov` at `off`, retrying partial transfers; 0, or the errno of the
// failure (EIO for a read past the end of the file).
int transfer(int fd, std::vector<iovec> iov, uint64_t off, bool write) {
  size_t i = 0;
  while (i < iov.size()) {
    int cnt = static_cast<int>(std::min<size_t>(iov.size() - i, IOV_MAX));
    ssize_t n = write ? ::pwritev(fd, &iov[i], cnt, static_cast<off_t>(off))
                      : ::preadv(fd, &iov[i], cnt, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    off += static_cast<uint64_t>(n);
    auto left = static_cast<size_t>(n);
    while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
    if (left) {
      iov[i].iov_base = static_cast<uint8_t*>(iov[i].iov_base) + left;
      iov[i].iov_len -= left;
    }
  }
  return 0;
}

}  // namespace

VirtioBlock::VirtioBlock(Fd file, Options options)
    : file_(std::move(file)), opts_(std::move(options)) {
  if (!file_) return;  // an empty slot: capacity 0
  struct stat st {};
  if (::fstat(file_.get(), &st) != 0) throw_errno("virtio-blk: fstat");
  uint64_t bytes = static_cast<uint64_t>(st.st_size);
  if (S_ISBLK(st.st_mode) && ::ioctl(file_.get(), BLKGETSIZE64, &bytes) != 0)
    throw_errno("virtio-blk: BLKGETSIZE64");
  capacity_ = bytes / kSector;
}

void VirtioBlock::sync() {
  if (file_ && !opts_.read_only && ::fdatasync(file_.get()) != 0)
    throw_errno("fdatasync of the disk image");
}

uint64_t VirtioBlock::device_features() const {
  return kFSizeMax | kFSegMax | kFFlush | (opts_.read_only ? kFRo : 0);
}

void VirtioBlock::read_config(uint64_t offset, std::span<uint8_t> data) {
  uint8_t img[kConfigSize] = {};
  std::memcpy(img + 0, &capacity_, 8);
  std::memcpy(img + 8, &kSizeMax, 4);
  std::memcpy(img + 12, &kSegMax, 4);
  copy_config(img, offset, data);
}

void VirtioBlock::notify(size_t index) {
  if (index != 0 || !transport_->running()) return;
  serve_queue(*transport_, 0, "virtio-blk", [this](const DescChain& c) { return handle(c); });
}

uint32_t VirtioBlock::handle(const DescChain& chain) {
  const memory::GuestMemory& mem = transport_->memory();
  if (chain.writable_bytes == 0) {
    warn_.warn("virtio-blk: request without a status byte; dropped");
    return 0;
  }
  uint64_t data_out = chain.writable_bytes - 1;  // writable bytes before the status byte
  uint64_t written = 0;
  uint8_t status = kStatusOk;
  ReqHeader h{};
  if (chain_read(mem, chain, 0, {reinterpret_cast<uint8_t*>(&h), sizeof h}) != sizeof h) {
    warn_.warn("virtio-blk: request header too short");
    status = kStatusIoErr;
  } else {
    auto in_range = [&](uint64_t len) {
      return len % kSector == 0 && h.sector <= capacity_ && len / kSector <= capacity_ - h.sector;
    };
    switch (h.type) {
      case kTypeIn:
        if (!file_ || !in_range(data_out)) {
          status = kStatusIoErr;
        } else if (int err = transfer(file_.get(), chain_iovecs(mem, chain, true, 0, data_out),
                                      h.sector * kSector, false)) {
          warn_.warn("virtio-blk: read failed at sector " + std::to_string(h.sector) + ": " +
                     std::strerror(err));
          status = kStatusIoErr;
        } else {
          written = data_out;
        }
        break;
      case kTypeOut: {
        uint64_t len = chain.readable_bytes - sizeof h;
        if (!file_ || opts_.read_only || !in_range(len)) {
          status = kStatusIoErr;
        } else if (int err = transfer(file_.get(), chain_iovecs(mem, chain, false, sizeof h, len),
                                      h.sector * kSector, true)) {
          // A full store (ENOSPC) or quota (EDQUOT) is the guest's disk full: it sees an I/O
          // error, as from a full physical disk; the log says which.
          warn_.warn("virtio-blk: write failed at sector " + std::to_string(h.sector) + ": " +
                     std::strerror(err));
          status = kStatusIoErr;
        }
        break;
      }
      case kTypeFlush:
        if (!file_ || ::fdatasync(file_.get()) != 0) {
          if (file_) warn_.warn(std::string("virtio-blk: flush failed: ") + std::strerror(errno));
          status = kStatusIoErr;
        }
        break;
      case kTypeGetId: {
        uint8_t id[kSerialLen] = {};
        std::memcpy(id, opts_.serial.data(), std::min(opts_.serial.size(), kSerialLen));
        written = chain_write(mem, chain, 0, {id, std::min<uint64_t>(kSerialLen, data_out)});
        break;
      }
      default:
        status = kStatusUnsupp;
    }
  }
  chain_write(mem, chain, data_out, {&status, 1});
  return static_cast<uint32_t>(written + 1);
}

}  // namespace space::devices

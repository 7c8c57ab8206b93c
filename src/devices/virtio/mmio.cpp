// virtio-mmio register file, status state machine, interrupts and snapshot encoding.
// Registers below 0x100 take only aligned 32-bit accesses (others read 0 and are ignored on
// write); the config space at 0x100 takes any width the backend accepts.
#include "devices/virtio/mmio.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "util/error.h"
#include "util/log.h"

namespace space::devices {
namespace {

enum Reg : uint64_t {
  kRegMagic = 0x000,
  kRegVersion = 0x004,
  kRegDeviceId = 0x008,
  kRegVendorId = 0x00c,
  kRegDeviceFeatures = 0x010,
  kRegDeviceFeaturesSel = 0x014,
  kRegDriverFeatures = 0x020,
  kRegDriverFeaturesSel = 0x024,
  kRegQueueSel = 0x030,
  kRegQueueNumMax = 0x034,
  kRegQueueNum = 0x038,
  kRegQueueReady = 0x044,
  kRegQueueNotify = 0x050,
  kRegInterruptStatus = 0x060,
  kRegInterruptAck = 0x064,
  kRegStatus = 0x070,
  kRegQueueDescLow = 0x080,
  kRegQueueDescHigh = 0x084,
  kRegQueueDriverLow = 0x090,
  kRegQueueDriverHigh = 0x094,
  kRegQueueDeviceLow = 0x0a0,
  kRegQueueDeviceHigh = 0x0a4,
  kRegShmLenLow = 0x0b0,
  kRegShmLenHigh = 0x0b4,
  kRegShmBaseLow = 0x0b8,
  kRegShmBaseHigh = 0x0bc,
  kRegConfigGeneration = 0x0fc,
  kConfigBase = 0x100,
};

constexpr uint32_t kIntUsed = 1;
constexpr uint32_t kIntConfig = 2;

uint64_t set_low(uint64_t v, uint32_t lo) {
  return (v & ~0xffffffffULL) | lo;
}
uint64_t set_high(uint64_t v, uint32_t hi) {
  return (v & 0xffffffffULL) | (uint64_t{hi} << 32);
}

}  // namespace

VirtioMmio::VirtioMmio(std::string name, const memory::GuestMemory& mem, IrqLine& irq,
                       std::unique_ptr<VirtioBackend> backend)
    : name_(std::move(name)), mem_(mem), irq_(irq), backend_(std::move(backend)) {
  if (!backend_) space::fail("virtio-mmio " + name_ + ": no backend");
  device_features_ = backend_->device_features() | virtio::kFVersion1;
  queues_.reserve(backend_->num_queues());
  for (size_t i = 0; i < backend_->num_queues(); i++)
    queues_.emplace_back(mem_, backend_->queue_max_size(i));
  backend_->attach(*this);
}

Virtqueue* VirtioMmio::selected_queue() {
  return queue_sel_ < queues_.size() ? &queues_[queue_sel_] : nullptr;
}

bool VirtioMmio::running() const {
  return (status_ & virtio::kStatusDriverOk) && !(status_ & virtio::kStatusNeedsReset);
}

void VirtioMmio::read(uint64_t offset, std::span<uint8_t> data) {
  if (offset >= kConfigBase) {
    backend_->read_config(offset - kConfigBase, data);
    return;
  }
  std::fill(data.begin(), data.end(), 0);
  if (data.size() != 4 || offset % 4) return;
  uint32_t v = read_reg(offset);
  std::memcpy(data.data(), &v, 4);
}

void VirtioMmio::write(uint64_t offset, std::span<const uint8_t> data) {
  if (offset >= kConfigBase) {
    backend_->write_config(offset - kConfigBase, data);
    return;
  }
  if (data.size() != 4 || offset % 4) {
    log::debug(name_ + ": ignoring " + std::to_string(data.size()) + "-byte register write");
    return;
  }
  uint32_t v;
  std::memcpy(&v, data.data(), 4);
  write_reg(offset, v);
}

uint32_t VirtioMmio::read_reg(uint64_t offset) {
  Virtqueue* q = selected_queue();
  switch (offset) {
    case kRegMagic:
      return kMagic;
    case kRegVersion:
      return 2;
    case kRegDeviceId:
      return backend_->device_id();
    case kRegVendorId:
      return kVendorId;
    case kRegDeviceFeatures:
      if (device_features_sel_ > 1) return 0;
      return static_cast<uint32_t>(device_features_ >> (32 * device_features_sel_));
    case kRegQueueNumMax:
      return q ? q->max_size() : 0;
    case kRegQueueReady:
      return q && q->ready() ? 1 : 0;
    case kRegInterruptStatus:
      return interrupt_status_;
    case kRegStatus:
      return status_;
    case kRegShmLenLow:
    case kRegShmLenHigh:
    case kRegShmBaseLow:
    case kRegShmBaseHigh:
      return 0xffffffff;  // no shared memory regions
    case kRegConfigGeneration:
      return config_generation_;
    default:
      return 0;  // write-only or reserved
  }
}

void VirtioMmio::write_reg(uint64_t offset, uint32_t v) {
  Virtqueue* q = selected_queue();
  // Queue layout registers only change while the queue is not ready.
  Virtqueue* qcfg = q && !q->ready() ? q : nullptr;
  switch (offset) {
    case kRegDeviceFeaturesSel:
      device_features_sel_ = v;
      break;
    case kRegDriverFeatures:
      if (status_ & virtio::kStatusFeaturesOk) break;  // frozen after FEATURES_OK
      if (driver_features_sel_ == 0) driver_features_ = set_low(driver_features_, v);
      if (driver_features_sel_ == 1) driver_features_ = set_high(driver_features_, v);
      break;
    case kRegDriverFeaturesSel:
      driver_features_sel_ = v;
      break;
    case kRegQueueSel:
      queue_sel_ = v;
      break;
    case kRegQueueNum:
      if (qcfg) qcfg->set_size(v > 0xffff ? 0 : static_cast<uint16_t>(v));
      break;
    case kRegQueueReady:
      if (!q) break;
      if (v == 0) {
        q->disable();
      } else if (!q->ready()) {
        std::string why;
        if (!q->enable(why)) fail("queue " + std::to_string(queue_sel_) + ": " + why);
      }
      break;
    case kRegQueueNotify:
      if (running() && v < queues_.size() && queues_[v].ready()) backend_->notify(v);
      break;
    case kRegInterruptAck:
      interrupt_status_ &= ~v;
      break;
    case kRegStatus:
      write_status(v);
      break;
    case kRegQueueDescLow:
      if (qcfg) qcfg->set_desc_addr(set_low(qcfg->desc_addr(), v));
      break;
    case kRegQueueDescHigh:
      if (qcfg) qcfg->set_desc_addr(set_high(qcfg->desc_addr(), v));
      break;
    case kRegQueueDriverLow:
      if (qcfg) qcfg->set_avail_addr(set_low(qcfg->avail_addr(), v));
      break;
    case kRegQueueDriverHigh:
      if (qcfg) qcfg->set_avail_addr(set_high(qcfg->avail_addr(), v));
      break;
    case kRegQueueDeviceLow:
      if (qcfg) qcfg->set_used_addr(set_low(qcfg->used_addr(), v));
      break;
    case kRegQueueDeviceHigh:
      if (qcfg) qcfg->set_used_addr(set_high(qcfg->used_addr(), v));
      break;
    default:
      log::debug(name_ + ": write to read-only or unknown register " + std::to_string(offset));
  }
}

void VirtioMmio::write_status(uint32_t v) {
  using namespace virtio;
  if (v == 0) {
    reset_device();
    return;
  }
  uint32_t old = status_;
  v = (v & ~kStatusNeedsReset) | (old & kStatusNeedsReset);  // only the device sets that bit
  if ((v & old) != old) {
    warn_.warn(name_ + ": driver tried to clear status bits; ignored");
    return;
  }
  uint32_t added = v & ~old;
  if (added & kStatusFeaturesOk) {
    bool ok = (old & kStatusDriver) && (driver_features_ & kFVersion1) &&
              (driver_features_ & ~device_features_) == 0;
    if (!ok) {
      char hex[20];
      std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(driver_features_));
      warn_.warn(name_ + ": refusing FEATURES_OK for driver features " + hex);
      v &= ~kStatusFeaturesOk;
      added &= ~kStatusFeaturesOk;
    }
  }
  if ((added & kStatusDriverOk) && !(v & kStatusFeaturesOk)) {
    warn_.warn(name_ + ": DRIVER_OK without FEATURES_OK; ignored");
    v &= ~kStatusDriverOk;
    added &= ~kStatusDriverOk;
  }
  status_ = v;
  if ((added & kStatusDriverOk) && !(status_ & kStatusNeedsReset)) backend_->activate();
}

void VirtioMmio::reset_device() {
  backend_->reset();
  for (auto& q : queues_) q.reset();
  driver_features_ = 0;
  device_features_sel_ = driver_features_sel_ = queue_sel_ = 0;
  status_ = 0;
  interrupt_status_ = 0;
}

void VirtioMmio::signal_used(size_t queue) {
  if (queue >= queues_.size() || !queues_[queue].needs_interrupt()) return;
  interrupt_status_ |= kIntUsed;
  irq_.pulse();
}

void VirtioMmio::signal_config() {
  config_generation_++;
  interrupt_status_ |= kIntConfig;
  irq_.pulse();
}

void VirtioMmio::fail(std::string_view why) {
  warn_.warn(name_ + ": device needs reset: " + std::string(why));
  if (status_ & virtio::kStatusNeedsReset) return;
  status_ |= virtio::kStatusNeedsReset;
  if (status_ & virtio::kStatusDriverOk) signal_config();
}

std::vector<uint8_t> VirtioMmio::save() const {
  State s;
  s.device_id = backend_->device_id();
  s.status = status_;
  s.driver_features = driver_features_;
  s.device_features_sel = device_features_sel_;
  s.driver_features_sel = driver_features_sel_;
  s.queue_sel = queue_sel_;
  s.interrupt_status = interrupt_status_;
  s.config_generation = config_generation_;
  for (const auto& q : queues_) s.queues.push_back(q.state());
  s.backend = backend_->save_state();
  return proto::encode_fields(s);
}

void VirtioMmio::restore(std::span<const uint8_t> state) {
  std::string ctx = "restore " + name_;
  State s;
  try {
    s = proto::decode_fields<State>(state);
  } catch (const proto::ProtoError& e) {
    space::fail(ctx + ": " + e.what());
  }
  if (s.magic != State::kMagic) space::fail(ctx + ": not virtio-mmio state");
  if (s.version != State::kVersion)
    space::fail(ctx + ": unsupported state version " + std::to_string(s.version));
  if (s.device_id != backend_->device_id()) space::fail(ctx + ": state is for another device type");
  if (s.queues.size() != queues_.size()) space::fail(ctx + ": queue count mismatch");
  // Once FEATURES_OK was accepted, what the driver acknowledged is what the device runs with, so
  // it must be offered here too. Before that the register only holds what the driver wrote.
  uint64_t extra = s.driver_features & ~device_features_;
  if ((s.status & virtio::kStatusFeaturesOk) && extra) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(extra));
    space::fail(ctx + ": the driver had acknowledged features " + hex +
                " that this device does not offer");
  }
  for (size_t i = 0; i < s.queues.size(); i++) {  // validate every queue before changing anything
    std::string why;
    Virtqueue probe(mem_, queues_[i].max_size());
    if (!probe.set_state(s.queues[i], why))
      space::fail(ctx + ": queue " + std::to_string(i) + ": " + why);
  }
  backend_->reset();
  for (size_t i = 0; i < s.queues.size(); i++) {
    std::string why;
    queues_[i].set_state(s.queues[i], why);
  }
  status_ = s.status;
  driver_features_ = s.driver_features;
  device_features_sel_ = s.device_features_sel;
  driver_features_sel_ = s.driver_features_sel;
  queue_sel_ = s.queue_sel;
  interrupt_status_ = s.interrupt_status;
  config_generation_ = s.config_generation;
  try {
    backend_->restore_state(s.backend);
  } catch (const proto::ProtoError& e) {
    space::fail(ctx + ": " + e.what());
  }
  if (running()) backend_->activate();
}

}  // namespace space::devices

// vCPU run loop and exit decoding; see vcpu.h.
#include "vmm/vcpu.h"

#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"
#include "util/log.h"

namespace space::vmm {
namespace {
void kick_handler(int) {}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
}  // namespace

Vcpu::~Vcpu() {
  request_stop();
  join();
}

void Vcpu::install_kick_handler() {
  struct sigaction sa {};
  sa.sa_handler = kick_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: KVM_RUN must return EINTR
  if (::sigaction(SIGUSR1, &sa, nullptr) != 0) throw_errno("sigaction(SIGUSR1)");
}

void Vcpu::start() {
  thread_ = std::thread([this] { run_loop(); });
}

void Vcpu::set_immediate_exit(bool on) {
  // Ordered with the pause_/stop_ flags (see run_loop), hence the seq_cst atomic store.
  std::atomic_ref<uint8_t>(fd_.run()->immediate_exit).store(on ? 1 : 0);
}

void Vcpu::request_stop() {
  stop_.store(true);
  set_immediate_exit(true);
  {
    std::lock_guard lk(park_mu_);
    park_cv_.notify_all();
  }
  if (thread_.joinable()) ::pthread_kill(thread_.native_handle(), SIGUSR1);
}

void Vcpu::request_pause() {
  {
    std::lock_guard lk(park_mu_);
    pause_.store(true);
  }
  set_immediate_exit(true);
  if (thread_.joinable()) ::pthread_kill(thread_.native_handle(), SIGUSR1);
}

bool Vcpu::wait_parked(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lk(park_mu_);
  if (!thread_.joinable()) return true;  // never started: nothing runs
  return park_cv_.wait_until(lk, deadline, [this] { return parked_ || ended_; });
}

void Vcpu::resume() {
  std::lock_guard lk(park_mu_);
  pause_.store(false);
  park_cv_.notify_all();
}

void Vcpu::park() {
  std::unique_lock lk(park_mu_);
  parked_ = true;
  park_cv_.notify_all();
  park_cv_.wait(lk, [this] { return !pause_.load() || stop_.load(); });
  parked_ = false;
  if (!stop_.load()) set_immediate_exit(false);
}

void Vcpu::join() {
  if (thread_.joinable()) thread_.join();
}

// `settled` is true while no exit awaits completion by KVM: initially, and after a KVM_RUN that
// returned EINTR. With immediate_exit set, that KVM_RUN completes the pending I/O and returns
// without running guest code. Clearing immediate_exit after a stray EINTR is safe against a
// racing request_pause(): its pause_ store precedes its immediate_exit store, and our clear
// precedes our next pause_ load, all seq_cst, so either we see pause_ or its store wins.
void Vcpu::run_loop() {
  if (setup_) {
    try {
      setup_();
    } catch (const std::exception& e) {
      on_exit_({VmExit::Kind::Error, "vcpu " + std::to_string(fd_.index()) + ": " + e.what()});
      std::lock_guard lk(park_mu_);
      ended_ = true;
      park_cv_.notify_all();
      return;
    }
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  bool settled = true;
  while (!stop_.load()) {
    if (settled && pause_.load()) {
      park();
      continue;
    }
    if (::ioctl(fd_.fd(), KVM_RUN, 0) < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        settled = true;
        if (!stop_.load() && !pause_.load()) set_immediate_exit(false);
        continue;
      }
      on_exit_(
          {VmExit::Kind::Error,
           describe_failure(("KVM_RUN failed: " + std::string(std::strerror(errno))).c_str())});
      break;
    }
    settled = false;
    if (!handle_exit()) break;
  }
  std::lock_guard lk(park_mu_);
  ended_ = true;
  park_cv_.notify_all();
}

std::string Vcpu::describe_failure(const char* what) {
  std::string s = std::string(what) + " on vcpu " + std::to_string(fd_.index());
  kvm_regs regs{};
  if (::ioctl(fd_.fd(), KVM_GET_REGS, &regs) == 0) s += " at RIP " + hex(regs.rip);
  kvm_sregs sregs{};
  if (::ioctl(fd_.fd(), KVM_GET_SREGS, &sregs) == 0)
    s += " (CS " + hex(sregs.cs.selector) + ", CR2 " + hex(sregs.cr2) + ")";
  return s;
}

bool Vcpu::handle_vector_io(kvm_run* run) {
  auto* base = reinterpret_cast<uint8_t*>(run) + run->io.data_offset;
  for (uint32_t i = 0; i < run->io.count; i++) {
    uint8_t* p = base + size_t(i) * run->io.size;
    if (run->io.direction != KVM_EXIT_IO_OUT) {
      vector_->read(run->io.port, {p, run->io.size});
      continue;
    }
    std::string err = vector_->write(fd_, run->io.port, {p, run->io.size});
    if (!err.empty()) {
      on_exit_({VmExit::Kind::Error, describe_failure(err.c_str())});
      return false;
    }
  }
  return true;
}

bool Vcpu::handle_exit() {
  kvm_run* run = fd_.run();
  switch (run->exit_reason) {
    case KVM_EXIT_IO: {
      if (vector_ && x86::VectorStateKeeper::claims(run->io.port)) return handle_vector_io(run);
      auto* base = reinterpret_cast<uint8_t*>(run) + run->io.data_offset;
      for (uint32_t i = 0; i < run->io.count; i++) {
        uint8_t* p = base + size_t(i) * run->io.size;
        if (run->io.direction == KVM_EXIT_IO_OUT)
          pio_.write(run->io.port, {p, run->io.size});
        else
          pio_.read(run->io.port, {p, run->io.size});
      }
      return true;
    }
    case KVM_EXIT_MMIO: {
      uint32_t len = std::min<uint32_t>(run->mmio.len, 8);
      if (run->mmio.is_write)
        mmio_.write(run->mmio.phys_addr, {run->mmio.data, len});
      else
        mmio_.read(run->mmio.phys_addr, {run->mmio.data, len});
      return true;
    }
    case KVM_EXIT_INTR:
      return true;
    case KVM_EXIT_HLT:
      on_exit_({VmExit::Kind::Shutdown,
                "guest halted with interrupts off on vcpu " + std::to_string(fd_.index())});
      return false;
    case KVM_EXIT_SHUTDOWN:
      on_exit_({VmExit::Kind::Reset, describe_failure("guest triple fault (shutdown)")});
      return false;
    case KVM_EXIT_SYSTEM_EVENT:
      on_exit_(
          {VmExit::Kind::Shutdown, "guest system event " + std::to_string(run->system_event.type)});
      return false;
    case KVM_EXIT_FAIL_ENTRY:
      on_exit_({VmExit::Kind::Error,
                describe_failure(("KVM entry failed, hardware reason " +
                                  hex(run->fail_entry.hardware_entry_failure_reason))
                                     .c_str())});
      return false;
    case KVM_EXIT_INTERNAL_ERROR: {
      std::string what = "KVM internal error, suberror " + std::to_string(run->internal.suberror);
      if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION) {
        what += " (emulation failure: the host cannot emulate a guest instruction)";
        auto& ef = run->emulation_failure;
        if ((ef.flags & KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES) &&
            ef.insn_size <= 15) {
          what += ", instruction bytes:";
          for (int i = 0; i < ef.insn_size; i++) {
            char b[4];
            std::snprintf(b, sizeof b, " %02x", ef.insn_bytes[i]);
            what += b;
          }
        }
      }
      on_exit_({VmExit::Kind::Error, describe_failure(what.c_str())});
      return false;
    }
    default:
      on_exit_({VmExit::Kind::Error,
                describe_failure(
                    ("unexpected KVM exit reason " + std::to_string(run->exit_reason)).c_str())});
      return false;
  }
}

}  // namespace space::vmm

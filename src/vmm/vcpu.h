// Vcpu: one guest CPU and the host thread that runs it. The thread loops on KVM_RUN and serves
// port-I/O and MMIO exits through the buses; any exit that ends the VM (a reset through the
// i8042, a triple fault, an internal or emulation error) is reported once through the
// ExitHandler, with enough detail (RIP, instruction bytes) to tell what the guest was doing.
// Stopping: request_stop() sets a flag, sets kvm_run.immediate_exit and signals the thread
// (SIGUSR1, whose handler does nothing) so a blocked KVM_RUN returns at once.
// Pausing works the same way, but the thread parks on a condition variable instead of ending.
// It parks only after a KVM_RUN that returned EINTR, i.e. after KVM has completed any port or
// MMIO access the previous exit left pending (KVM's documented way to make vCPU state
// consistent), so state read while every vCPU is parked is exact.
// Port I/O at the VectorStateKeeper's ports goes to the keeper, with this vCPU's fd (it reads and
// writes this vCPU's XSAVE state); a keeper error ends the VM.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "vmm/arch/x86_64/vector_state.h"
#include "vmm/bus.h"
#include "vmm/kvm.h"

namespace space::vmm {

// Why the guest stopped running.
struct VmExit {
  enum class Kind { Reset, Shutdown, Error } kind;
  std::string detail;
};

class Vcpu {
 public:
  using ExitHandler = std::function<void(const VmExit&)>;

  Vcpu(VcpuFd fd, const Bus& pio, const Bus& mmio, ExitHandler on_exit)
      : fd_(std::move(fd)), pio_(pio), mmio_(mmio), on_exit_(std::move(on_exit)) {}
  ~Vcpu();
  Vcpu(const Vcpu&) = delete;
  Vcpu& operator=(const Vcpu&) = delete;

  const VcpuFd& fd() const { return fd_; }
  // Routes the keeper's ports to `keeper` (not owned; must outlive the vCPU). Before start().
  void set_vector_keeper(const x86::VectorStateKeeper* keeper) { vector_ = keeper; }
  // Runs `f` first on the run thread (before start()); an exception from it ends the VM.
  void set_thread_setup(std::function<void()> f) { setup_ = std::move(f); }
  // Installs the no-op SIGUSR1 handler used to kick vCPU threads; call once per process.
  static void install_kick_handler();
  // Starts the run thread.
  void start();
  // Asks the run thread to leave KVM_RUN and exit; returns at once.
  void request_stop();
  // Waits for the run thread to end.
  void join();
  // Asks the run thread to park outside KVM_RUN; returns at once.
  void request_pause();
  // Waits until the thread is parked (or not running at all); false if `deadline` passes first.
  bool wait_parked(std::chrono::steady_clock::time_point deadline);
  // Lets a parked (or parking) thread run the guest again.
  void resume();

 private:
  void run_loop();
  void park();
  void set_immediate_exit(bool on);
  bool handle_exit();                   // false when the VM has ended
  bool handle_vector_io(kvm_run* run);  // false when the VM has ended
  std::string describe_failure(const char* what);

  VcpuFd fd_;
  const Bus& pio_;
  const Bus& mmio_;
  ExitHandler on_exit_;
  const x86::VectorStateKeeper* vector_ = nullptr;
  std::function<void()> setup_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> pause_{false};
  std::mutex park_mu_;
  std::condition_variable park_cv_;
  bool parked_ = false;  // guarded by park_mu_
  bool ended_ = false;   // guarded by park_mu_: the run thread has returned
};

}  // namespace space::vmm

// A tiny guest for the cases that run a real VM (each needs /dev/kvm: test::needs_kvm()). It is
// not Linux but a few instructions in a one-segment ELF "kernel" that Machine::boot() loads and
// enters in 64-bit mode, as it enters vmlinux: kHelloThenReset writes "hi" to the serial port and
// resets through the i8042; kCount counts in guest memory at kCounterAddr for ever. A TinyGuest
// holds one machine's files (kernel, empty rootfs, console log, vsock socket) in a temporary
// directory; a machine built from it must be gone before it. A CountingMachine is kCount running.
// Shared by vmm/test_machine.cpp, monitor/test_control_ops.cpp and monitor/test_branch_fork.cpp.
#pragma once
#include <doctest/doctest.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/event_loop.h"
#include "util/fd.h"
#include "util/fs.h"
#include "vmm/machine.h"

namespace space::testing {

using namespace std::chrono_literals;

constexpr uint64_t kCodeAddr = 0x1000000;     // 16 MiB: where the "kernel" is loaded and entered
constexpr uint64_t kCounterAddr = 0x2000000;  // 32 MiB: the counting guest's counter
constexpr uint64_t kMemory = 64ULL << 20;

// mov dx, 0x3f8; mov al, 'h'; out dx, al; mov al, 'i'; out dx, al (COM1's THR), then
// mov al, 0xfe; out 0x64, al (the i8042's reset pulse); jmp $ (never reached).
inline const std::vector<uint8_t> kHelloThenReset = {
    0x66, 0xba, 0xf8, 0x03, 0xb0, 'h', 0xee, 0xb0, 'i', 0xee, 0xb0, 0xfe, 0xe6, 0x64, 0xeb, 0xfe};
// loop: inc qword [kCounterAddr]; jmp loop
inline const std::vector<uint8_t> kCount = {0x48, 0xff, 0x04, 0x25, 0x00,
                                            0x00, 0x00, 0x02, 0xeb, 0xf6};

// A minimal ELF64 x86_64 image: one PT_LOAD segment holding `code` at kCodeAddr, entered there.
inline std::string write_kernel(const std::string& dir, const std::vector<uint8_t>& code) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_entry = kCodeAddr;
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_flags = PF_R | PF_X;
  ph.p_offset = sizeof eh + sizeof ph;
  ph.p_vaddr = ph.p_paddr = kCodeAddr;
  ph.p_filesz = ph.p_memsz = code.size();
  std::string img(reinterpret_cast<const char*>(&eh), sizeof eh);
  img.append(reinterpret_cast<const char*>(&ph), sizeof ph);
  img.append(code.begin(), code.end());
  std::string path = dir + "/vmlinux";
  fs::write_file_atomic(path, img, 0644);
  return path;
}

// One test machine's files: the kernel, an empty rootfs, the console file, the vsock socket.
struct TinyGuest {
  test::TempDir tmp{"machine"};
  EventLoop loop;
  Fd console;
  std::atomic<int> exits{0};
  vmm::MachineSpec spec;

  explicit TinyGuest(const std::vector<uint8_t>& code) {
    spec.id = "t";
    spec.memory_bytes = kMemory;
    spec.kernel = write_kernel(tmp.path, code);
    spec.rootfs = tmp.path + "/rootfs.ext4";
    fs::write_file_atomic(spec.rootfs, std::string(4096, 0), 0600);
    spec.vsock_uds = tmp.path + "/vsock.sock";
    console = Fd(::open((tmp.path + "/console.log").c_str(),
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    REQUIRE(console);
    spec.console_fd = console.get();
    if (kick_users()++ == 0) vmm::Vcpu::install_kick_handler();
  }
  // The vCPUs' SIGUSR1 handler is the process's: once the last guest is gone, SIGUSR1 is
  // default again, for the tests whose forked children expect to die of it.
  ~TinyGuest() {
    if (--kick_users() == 0) ::signal(SIGUSR1, SIG_DFL);
  }
  TinyGuest(const TinyGuest&) = delete;
  TinyGuest& operator=(const TinyGuest&) = delete;
  static int& kick_users() {
    static int n = 0;
    return n;
  }
  std::function<void()> on_exit() {
    return [this] { exits++; };
  }
  std::string console_text() const { return fs::read_file(tmp.path + "/console.log"); }
};

// The counting guest booted and running in a machine of its own; stopped when destroyed.
struct CountingMachine {
  TinyGuest rig{kCount};
  vmm::Machine machine{rig.spec, rig.loop, rig.on_exit()};
  CountingMachine() {
    machine.boot();
    machine.start();
  }
  ~CountingMachine() { machine.stop(); }
  CountingMachine(const CountingMachine&) = delete;
  CountingMachine& operator=(const CountingMachine&) = delete;
};

inline uint64_t counter(const vmm::Machine& m) {
  uint64_t v = 0;
  REQUIRE(m.memory().read_obj(kCounterAddr, v));
  return v;
}

// Waits up to 30 s (a PVM host interprets guest kernel code) for `done`.
template <class F>
bool eventually(F done) {
  auto until = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace space::testing

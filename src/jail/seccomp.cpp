// The per-role filters; see seccomp.h. The lists name what the code of each role calls (directly
// or through glibc and libstdc++), found by tracing every VMM operation (create, restore, exec,
// cp, pause, resume, checkpoint, branch, secrets, network, forward, destroy) and kept short.
#include "jail/seccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "util/enum_names.h"
#include "util/error.h"
#include "util/fd.h"
#include "vmm/kvm_api.h"

namespace space::jail {
namespace {

// Calls every role may make: memory, futexes, signals' return path, clocks, exit, and writing to
// the log (stderr).
constexpr const char* kCommon[] = {
    "brk",
    "clock_gettime",
    "clock_nanosleep",
    "exit",
    "exit_group",
    "futex",
    "getpid",
    "getrandom",
    "gettid",
    "madvise",
    "mmap",
    "mprotect",
    "mremap",
    "munmap",
    "nanosleep",
    "restart_syscall",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sched_yield",
    "write",
    "writev",
    "gettimeofday",
};

// The main thread of a VMM (and of a branch child, which becomes one).
constexpr const char* kVmm[] = {
    // descriptors and files reached through descriptors
    "read",
    "readv",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "lseek",
    "close",
    "close_range",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "fchdir",
    "fchmod",
    "fstat",
    "newfstatat",
    "statx",
    "fsync",
    "fdatasync",
    "fallocate",
    "ftruncate",
    "openat",
    "unlinkat",
    "renameat",
    "renameat2",
    "flock",
    // threads, forks (branch), children
    "clone",
    "set_robust_list",
    "rseq",
    "wait4",
    "waitid",
    "kill",
    "tgkill",
    "setsid",
    "getppid",
    "pidfd_open",
    "prctl",
    "prlimit64",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "sched_getaffinity",
    // signals and events
    "rt_sigaction",
    "sigaltstack",
    "signalfd4",
    "eventfd2",
    "pipe2",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "poll",
    "ppoll",
    // Unix sockets: the control socket, vsock's host side, the routes
    "socket",
    "connect",
    "accept4",
    "listen",
    "sendmsg",
    "recvmsg",
    "sendto",
    "recvfrom",
    "getsockopt",
    "setsockopt",
    "getsockname",
    "getpeername",
    "shutdown",
    // KVM (filtered by request below); vCPU threads' own filters
    "ioctl",
    "seccomp",
};

// A vCPU thread: KVM_RUN, the exits' device work (console writes, disk I/O, interrupts, random
// bytes), kicking its siblings when the VM ends.
constexpr const char* kVcpu[] = {
    "read", "pread64", "pwrite64", "preadv", "pwritev", "fdatasync", "fsync", "tgkill", "ioctl",
};

// The jail's PID 1.
constexpr const char* kInit[] = {
    "wait4", "waitid", "kill", "rt_sigtimedwait", "close", "read",
};

// The KVM requests of the main thread: system and VM ioctls, and every vCPU state get and set
// (restore, capture, the branch child's new VM).
constexpr unsigned long kVmmIoctls[] = {
    KVM_GET_API_VERSION,
    KVM_CHECK_EXTENSION,
    KVM_GET_VCPU_MMAP_SIZE,
    KVM_GET_SUPPORTED_CPUID,
    KVM_GET_MSR_INDEX_LIST,
    KVM_CREATE_VM,
    KVM_SET_USER_MEMORY_REGION,
    KVM_SET_TSS_ADDR,
    KVM_SET_IDENTITY_MAP_ADDR,
    KVM_CREATE_IRQCHIP,
    KVM_CREATE_PIT2,
    KVM_CREATE_VCPU,
    KVM_IRQ_LINE,
    KVM_GET_IRQCHIP,
    KVM_SET_IRQCHIP,
    KVM_GET_PIT2,
    KVM_SET_PIT2,
    KVM_GET_CLOCK,
    KVM_SET_CLOCK,
    KVM_KVMCLOCK_CTRL,
    KVM_GET_REGS,
    KVM_SET_REGS,
    KVM_GET_SREGS,
    KVM_SET_SREGS,
    KVM_GET_FPU,
    KVM_SET_FPU,
    KVM_GET_XSAVE,
    KVM_GET_XSAVE2,
    KVM_SET_XSAVE,
    KVM_GET_XCRS,
    KVM_SET_XCRS,
    KVM_GET_LAPIC,
    KVM_SET_LAPIC,
    KVM_GET_MSRS,
    KVM_SET_MSRS,
    KVM_GET_MP_STATE,
    KVM_SET_MP_STATE,
    KVM_GET_VCPU_EVENTS,
    KVM_SET_VCPU_EVENTS,
    KVM_GET_DEBUGREGS,
    KVM_SET_DEBUGREGS,
    KVM_SET_CPUID2,
    FICLONE,       // a memory diff starts as a reflink of the memory file it maps
    BLKGETSIZE64,  // a disk that is a block device
    TCGETS,        // isatty() of the log
};

// A vCPU thread's: run, its exits (vector state keeper, failure reports), interrupts.
constexpr unsigned long kVcpuIoctls[] = {
    KVM_RUN,      KVM_GET_XSAVE, KVM_GET_XSAVE2, KVM_SET_XSAVE,
    KVM_IRQ_LINE, KVM_GET_REGS,  KVM_GET_SREGS,
};

constexpr unsigned long kCloneNewMask = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                        CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP |
                                        CLONE_NEWTIME;

struct CtxDeleter {
  void operator()(void* c) const { seccomp_release(c); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

[[noreturn]] void fail_scmp(const std::string& what, int rc) {
  throw_errno("seccomp: " + what, -rc);
}

int resolve(const char* name) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) fail(std::string("seccomp: unknown system call ") + name);
  return nr;
}

void allow(scmp_filter_ctx ctx, const char* name) {
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, resolve(name), 0); rc < 0)
    fail_scmp(std::string("allow ") + name, rc);
}

// Allows `name` only when argument `arg`, masked, equals `value`.
void allow_if(scmp_filter_ctx ctx, const char* name, unsigned arg, uint64_t mask, uint64_t value) {
  scmp_arg_cmp cmp{arg, SCMP_CMP_MASKED_EQ, mask, value};
  if (int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, resolve(name), 1, &cmp); rc < 0)
    fail_scmp(std::string("allow ") + name, rc);
}

template <size_t N>
void allow_all(scmp_filter_ctx ctx, const char* const (&names)[N]) {
  for (const char* n : names) allow(ctx, n);
}

template <size_t N>
void allow_ioctls(scmp_filter_ctx ctx, const unsigned long (&reqs)[N]) {
  // The request is an int in the kernel; compare the low 32 bits only.
  for (unsigned long r : reqs) allow_if(ctx, "ioctl", 1, 0xffffffffu, r & 0xffffffffu);
}

// The role's own list, without ioctl (which is allowed per request).
std::vector<const char*> names_of(Role role) {
  std::vector<const char*> out(std::begin(kCommon), std::end(kCommon));
  auto add = [&](auto& list) {
    for (const char* n : list)
      if (std::strcmp(n, "ioctl") != 0) out.push_back(n);
  };
  switch (role) {
    case Role::Vmm:
      add(kVmm);
      break;
    case Role::Vcpu:
      add(kVcpu);
      break;
    case Role::Init:
      add(kInit);
      break;
  }
  std::sort(out.begin(), out.end(),
            [](const char* a, const char* b) { return std::strcmp(a, b) < 0; });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const char* a, const char* b) { return std::strcmp(a, b) == 0; }),
            out.end());
  return out;
}

// Names that are allowed only with argument checks, so they get rules of their own.
bool checked(const char* n) {
  for (const char* c : {"socket", "clone", "prctl", "prlimit64", "ioctl", "seccomp"})
    if (std::strcmp(n, c) == 0) return true;
  return false;
}

}  // namespace

const char* role_name(Role r) {
  static constexpr EnumName<Role> kNames[] = {
      {Role::Vmm, "vmm"}, {Role::Vcpu, "vcpu"}, {Role::Init, "init"}};
  return name_in(kNames, r, "?");
}

Program compile(Role role, Unlisted unlisted) {
  Ctx ctx(seccomp_init(unlisted == Unlisted::Log ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS));
  if (!ctx) fail("seccomp: cannot create a filter (libseccomp)");
  scmp_filter_ctx c = ctx.get();
  // Other ABIs' system calls (x32, i386 through int 0x80) fail the architecture check: kill.
  if (int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc < 0)
    fail_scmp("bad-architecture action", rc);
  // A binary search over the system call numbers rather than libseccomp's default linear chain:
  // the kernel evaluates a filter for every call number when it loads one (to cache the
  // constant answers), so a tree loads in less than half the time (0.06 against 0.15 ms for 80
  // calls here), and the calls it must still evaluate each time (ioctl, whose answer depends on
  // its request, KVM_RUN included) take a few comparisons instead of up to a hundred.
  if (int rc = seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2); rc < 0)
    fail_scmp("binary-tree optimisation", rc);
  // execve and execveat kill even when unlisted calls are only logged (the default action
  // covers them otherwise, and libseccomp refuses a rule that repeats the default).
  if (unlisted == Unlisted::Log)
    for (const char* n : {"execve", "execveat"})
      if (int rc = seccomp_rule_add(c, SCMP_ACT_KILL_PROCESS, resolve(n), 0); rc < 0)
        fail_scmp(std::string("kill on ") + n, rc);
  for (const char* n : names_of(role))
    if (!checked(n)) allow(c, n);
  if (role == Role::Vmm) {
    allow_if(c, "socket", 0, 0xffffffffu, AF_UNIX);
    allow_if(c, "clone", 0, kCloneNewMask, 0);  // threads and forks, never namespaces
    if (int rc = seccomp_rule_add(c, SCMP_ACT_ERRNO(ENOSYS), resolve("clone3"), 0); rc < 0)
      fail_scmp("clone3", rc);
    allow_if(c, "prctl", 0, 0xffffffffu, PR_SET_PDEATHSIG);  // a branch child's tie to its source
    allow_if(c, "prctl", 0, 0xffffffffu, PR_SET_NAME);
    allow_if(c, "prctl", 0, 0xffffffffu, PR_GET_NAME);
    allow_if(c, "prlimit64", 2, ~uint64_t{0}, 0);  // read limits, never set them
    // A vCPU thread's filter is stacked on this one, so this one allows its calls too; and its
    // thread installs that filter (which only ever narrows what it may do).
    allow_ioctls(c, kVmmIoctls);
    allow_ioctls(c, kVcpuIoctls);
    allow_if(c, "prctl", 0, 0xffffffffu, PR_SET_NO_NEW_PRIVS);
    allow_if(c, "seccomp", 0, 0xffffffffu, SECCOMP_SET_MODE_FILTER);
  } else if (role == Role::Vcpu) {
    allow_ioctls(c, kVcpuIoctls);
  }
  Fd mem(static_cast<int>(::syscall(SYS_memfd_create, "seccomp-bpf", MFD_CLOEXEC)));
  if (!mem) throw_errno("memfd_create");
  if (int rc = seccomp_export_bpf(c, mem.get()); rc < 0) fail_scmp("export", rc);
  struct stat st {};
  if (::fstat(mem.get(), &st) != 0) throw_errno("fstat memfd");
  if (st.st_size <= 0 || st.st_size % sizeof(sock_filter) != 0)
    fail("seccomp: the exported filter has a bad size");
  Program p;
  p.code.resize(static_cast<size_t>(st.st_size) / sizeof(sock_filter));
  if (::pread(mem.get(), p.code.data(), static_cast<size_t>(st.st_size), 0) != st.st_size)
    throw_errno("read the exported filter");
  return p;
}

Program signal_self_only(pid_t self) {
  constexpr uint32_t kArch = offsetof(seccomp_data, arch), kNr = offsetof(seccomp_data, nr),
                     kArg0Low = offsetof(seccomp_data, args[0]);  // little-endian: the pid_t
  Program p;
  p.code = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 5),  // other ABIs: left below
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_kill, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_tgkill, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0Low),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(self), 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  return p;
}

int load(const Program& p) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  sock_fprog prog{static_cast<unsigned short>(p.code.size()),
                  const_cast<sock_filter*>(p.code.data())};
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return errno;
  return 0;
}

std::vector<std::string> allowed_syscalls(Role role) {
  std::vector<std::string> out;
  for (const char* n : names_of(role)) out.emplace_back(n);
  if (role != Role::Init) out.emplace_back("ioctl");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Unlisted unlisted_from_env() {
  const char* v = std::getenv("SPACE_SECCOMP");
  if (!v || !*v || std::strcmp(v, "kill") == 0) return Unlisted::Kill;
  if (std::strcmp(v, "log") == 0) return Unlisted::Log;
  fail(std::string("SPACE_SECCOMP=") + v + ": not kill or log", "unset it, or set it to log");
}

}  // namespace space::jail

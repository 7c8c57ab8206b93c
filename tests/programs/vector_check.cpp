// vector-check: does the OS keep each process's vector registers across context switches?
//
// It finds two widths: the widest the OS says is usable (CPUID.OSXSAVE, XGETBV's XCR0 and the
// AVX / AVX-512 CPUID bits, as a careful program or glibc checks), and the widest that merely
// executes without a fault (each width tried in a child process, as a careless program or a
// JIT with its own probe would). Then, for each of the two widths, it runs --procs processes at
// once (more than the vCPUs, so that they preempt one another), each loading its own pattern
// into eight vector registers, yielding or sleeping in the kernel (sched_yield, or nanosleep
// every 16th round) inside the same asm block, and storing the registers back, --rounds times;
// every word that changed is a mismatch. It prints both widths and the mismatch counts, and
// exits 1 on any mismatch in the modes it ran (2 on a usage or system error).
//
// Usage: vector-check [--procs N] [--rounds N] [--mode os|executable|both]
//        (defaults 6, 2000 and both)
// Static (built by CMake), so it runs in any guest. The integration test 80_vector_state runs it
// in a sandbox, in a branch and after a checkpoint/resume; see scripts/kernel/README.md for why
// a PVM host needs the guest kernel's XCR0 patch.
#include <cpuid.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kRegs = 8;  // registers per round: xmm/ymm/zmm 8..15
constexpr long kSysSchedYield = 24;
constexpr long kSysNanosleep = 35;

struct Cpu {
  bool osxsave = false, avx = false, avx512f = false;
  uint64_t xcr0 = 0;
};

Cpu read_cpu() {
  Cpu c;
  unsigned a, b, cx, d;
  if (__get_cpuid(1, &a, &b, &cx, &d)) {
    c.osxsave = cx & (1u << 27);
    c.avx = cx & (1u << 28);
  }
  if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) c.avx512f = b & (1u << 16);
  if (c.osxsave) {
    uint32_t lo, hi;
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    c.xcr0 = (uint64_t(hi) << 32) | lo;
  }
  return c;
}

// The widest width the OS says a program may use.
int os_width(const Cpu& c) {
  if (c.osxsave && c.avx512f && (c.xcr0 & 0xe6) == 0xe6) return 512;
  if (c.osxsave && c.avx && (c.xcr0 & 0x6) == 0x6) return 256;
  return 128;
}

// Whether an instruction of `width` executes, tried in a child: "ok" or how the child died.
std::string probe(int width) {
  pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    if (width == 256) asm volatile("vpxor %%ymm8, %%ymm8, %%ymm8\n\tvzeroupper" ::: "xmm8");
    if (width == 512) asm volatile("vpxord %%zmm8, %%zmm8, %%zmm8\n\tvzeroupper" ::: "xmm8");
    ::_exit(0);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return "ok";
  if (WIFSIGNALED(st)) return std::string("killed by ") + ::strsignal(WTERMSIG(st));
  return "exit " + std::to_string(WEXITSTATUS(st));
}

// Loads in[] into eight registers of `width`, makes system call `nr` (arguments rdi, rsi), and
// stores the registers to out[]. Nothing but the kernel runs between the load and the store.
void round_trip(int width, const uint8_t* in, uint8_t* out, long nr, long a1, long a2) {
  long ret;
  if (width == 512) {
    asm volatile(
        "vmovdqu64 0(%[in]), %%zmm8\n\tvmovdqu64 64(%[in]), %%zmm9\n\t"
        "vmovdqu64 128(%[in]), %%zmm10\n\tvmovdqu64 192(%[in]), %%zmm11\n\t"
        "vmovdqu64 256(%[in]), %%zmm12\n\tvmovdqu64 320(%[in]), %%zmm13\n\t"
        "vmovdqu64 384(%[in]), %%zmm14\n\tvmovdqu64 448(%[in]), %%zmm15\n\t"
        "syscall\n\t"
        "vmovdqu64 %%zmm8, 0(%[out])\n\tvmovdqu64 %%zmm9, 64(%[out])\n\t"
        "vmovdqu64 %%zmm10, 128(%[out])\n\tvmovdqu64 %%zmm11, 192(%[out])\n\t"
        "vmovdqu64 %%zmm12, 256(%[out])\n\tvmovdqu64 %%zmm13, 320(%[out])\n\t"
        "vmovdqu64 %%zmm14, 384(%[out])\n\tvmovdqu64 %%zmm15, 448(%[out])\n\t"
        "vzeroupper"
        : "=a"(ret)
        : "a"(nr), "D"(a1), "S"(a2), [in] "r"(in), [out] "r"(out)
        : "rcx", "r11", "memory", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
          "xmm15");
  } else if (width == 256) {
    asm volatile(
        "vmovdqu 0(%[in]), %%ymm8\n\tvmovdqu 32(%[in]), %%ymm9\n\t"
        "vmovdqu 64(%[in]), %%ymm10\n\tvmovdqu 96(%[in]), %%ymm11\n\t"
        "vmovdqu 128(%[in]), %%ymm12\n\tvmovdqu 160(%[in]), %%ymm13\n\t"
        "vmovdqu 192(%[in]), %%ymm14\n\tvmovdqu 224(%[in]), %%ymm15\n\t"
        "syscall\n\t"
        "vmovdqu %%ymm8, 0(%[out])\n\tvmovdqu %%ymm9, 32(%[out])\n\t"
        "vmovdqu %%ymm10, 64(%[out])\n\tvmovdqu %%ymm11, 96(%[out])\n\t"
        "vmovdqu %%ymm12, 128(%[out])\n\tvmovdqu %%ymm13, 160(%[out])\n\t"
        "vmovdqu %%ymm14, 192(%[out])\n\tvmovdqu %%ymm15, 224(%[out])\n\t"
        "vzeroupper"
        : "=a"(ret)
        : "a"(nr), "D"(a1), "S"(a2), [in] "r"(in), [out] "r"(out)
        : "rcx", "r11", "memory", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
          "xmm15");
  } else {
    asm volatile(
        "movdqu 0(%[in]), %%xmm8\n\tmovdqu 16(%[in]), %%xmm9\n\t"
        "movdqu 32(%[in]), %%xmm10\n\tmovdqu 48(%[in]), %%xmm11\n\t"
        "movdqu 64(%[in]), %%xmm12\n\tmovdqu 80(%[in]), %%xmm13\n\t"
        "movdqu 96(%[in]), %%xmm14\n\tmovdqu 112(%[in]), %%xmm15\n\t"
        "syscall\n\t"
        "movdqu %%xmm8, 0(%[out])\n\tmovdqu %%xmm9, 16(%[out])\n\t"
        "movdqu %%xmm10, 32(%[out])\n\tmovdqu %%xmm11, 48(%[out])\n\t"
        "movdqu %%xmm12, 64(%[out])\n\tmovdqu %%xmm13, 80(%[out])\n\t"
        "movdqu %%xmm14, 96(%[out])\n\tmovdqu %%xmm15, 112(%[out])"
        : "=a"(ret)
        : "a"(nr), "D"(a1), "S"(a2), [in] "r"(in), [out] "r"(out)
        : "rcx", "r11", "memory", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
          "xmm15");
  }
  (void)ret;
}

// One worker: `rounds` round trips with patterns unique to (worker, round); returns the number
// of 64-bit words that came back changed.
long worker(int width, int id, int rounds) {
  alignas(64) uint8_t in[kRegs * 64], out[kRegs * 64];
  const size_t bytes = size_t(kRegs) * size_t(width / 8);
  const timespec nap{0, 200'000};  // 0.2 ms
  long bad = 0;
  for (int r = 0; r < rounds; r++) {
    for (size_t i = 0; i < bytes; i += 8) {
      uint64_t v = 0x9e3779b97f4a7c15ull * (uint64_t(id + 1) << 32 | uint64_t(r)) + i;
      std::memcpy(in + i, &v, 8);
    }
    std::memset(out, 0, sizeof out);
    if (r % 16 == 15)
      round_trip(width, in, out, kSysNanosleep, long(&nap), 0);
    else
      round_trip(width, in, out, kSysSchedYield, 0, 0);
    for (size_t i = 0; i < bytes; i += 8) bad += std::memcmp(in + i, out + i, 8) != 0;
  }
  return bad;
}

// Runs `procs` workers at once at `width`; returns the total mismatches, or -1 on a failure.
long run(int width, int procs, int rounds) {
  int pipes[2];
  if (::pipe(pipes) != 0) return -1;
  for (int p = 0; p < procs; p++) {
    pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
      ::close(pipes[0]);
      long bad = worker(width, p, rounds);
      ssize_t n = ::write(pipes[1], &bad, sizeof bad);
      ::_exit(n == sizeof bad ? 0 : 3);
    }
  }
  ::close(pipes[1]);
  long total = 0;
  int got = 0;
  long bad;
  while (::read(pipes[0], &bad, sizeof bad) == sizeof bad) {
    total += bad;
    got++;
  }
  ::close(pipes[0]);
  int st;
  bool all_ok = true;
  while (::wait(&st) > 0) all_ok = all_ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (got != procs || !all_ok) return -1;
  return total;
}

int parse_count(const char* flag, const char* v) {
  char* end = nullptr;
  long n = v ? std::strtol(v, &end, 10) : 0;
  if (!v || *end || n < 1 || n > 1'000'000) {
    std::fprintf(stderr, "vector-check: %s needs a count from 1 to 1000000\n", flag);
    std::exit(2);
  }
  return int(n);
}

}  // namespace

int main(int argc, char** argv) {
  int procs = 6, rounds = 2000;
  std::string mode = "both";
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--procs") {
      procs = parse_count("--procs", i + 1 < argc ? argv[++i] : nullptr);
    } else if (a == "--rounds") {
      rounds = parse_count("--rounds", i + 1 < argc ? argv[++i] : nullptr);
    } else if (a == "--mode" && i + 1 < argc) {
      mode = argv[++i];
    } else {
      mode = "";
    }
    if (mode != "os" && mode != "executable" && mode != "both") {
      std::fprintf(stderr,
                   "usage: vector-check [--procs N] [--rounds N] [--mode os|executable|both]\n");
      return 2;
    }
  }
  Cpu c = read_cpu();
  const int os = os_width(c);
  std::string p256 = probe(256), p512 = probe(512);
  const int exec = p512 == "ok" ? 512 : p256 == "ok" ? 256 : 128;
  std::printf("cpuid: osxsave=%d avx=%d avx512f=%d xcr0=0x%llx\n", c.osxsave, c.avx, c.avx512f,
              static_cast<unsigned long long>(c.xcr0));
  std::printf("os width: %d bits\n", os);
  std::printf("executable width: %d bits (256-bit probe: %s; 512-bit probe: %s)\n", exec,
              p256.c_str(), p512.c_str());
  std::fflush(stdout);
  int failed = 0;
  for (auto [name, width] : {std::pair{"os", os}, std::pair{"executable", exec}}) {
    if (mode != "both" && mode != name) continue;
    long bad = run(width, procs, rounds);
    if (bad < 0) {
      std::printf("%s mode: %d processes x %d rounds at %d bits: could not run\n", name, procs,
                  rounds, width);
      return 2;
    }
    std::printf("%s mode: %d processes x %d rounds at %d bits: %ld mismatches\n", name, procs,
                rounds, width, bad);
    std::fflush(stdout);
    failed |= bad != 0;
  }
  std::printf("%s\n", failed ? "FAIL: vector registers were not preserved" : "ok");
  return failed ? 1 : 0;
}

// Host detection; see host.h.
#include "vmm/host.h"

#include <sys/stat.h>

#include <fstream>

namespace space::vmm {

HostKind detect_host(const std::string& sys_module_dir, const std::string& cpuinfo) {
  struct stat st;
  if (::stat((sys_module_dir + "/kvm_pvm").c_str(), &st) == 0) return HostKind::Pvm;
  std::ifstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::string padded = " " + line + " ";
    if (padded.find(" vmx ") != std::string::npos || padded.find(" svm ") != std::string::npos)
      return HostKind::Hardware;
    break;
  }
  return HostKind::Unknown;
}

const char* host_kind_name(HostKind k) {
  switch (k) {
    case HostKind::Hardware:
      return "hardware";
    case HostKind::Pvm:
      return "pvm";
    case HostKind::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::string pvm_boot_params() {
  // Each of rodata=off, percpu_alloc=page and noreplace-smp (a 1-vCPU guest would otherwise
  // rewrite thousands of lock prefixes one by one) saves seconds of interpreted boot on PVM
  // (figures in scripts/kernel/README.md).
  // noxsave: the guest kernel then saves only the x87/SSE state when it switches tasks, yet
  // guest user space still sees AVX, AVX2 and AVX-512 in CPUID (PVM does not trap it), so glibc
  // picks AVX string functions and two processes clobber each other's upper vector registers
  // (corrupt output, random SIGSEGVs under concurrency). The kernel hands this unknown
  // parameter to init as an environment variable; guest-init (static glibc) and everything it
  // starts inherit it and keep to SSE.
  return "pvm_quirks noxsave "
         "clearcpuid=popcnt,smap,erms,fsrm,pcid,invpcid,fsgsbase,rdtscp,rdpid,rdrand,rdseed "
         "rodata=off percpu_alloc=page noreplace-smp "
         "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX,-AVX2,-AVX512F,-AVX512VL,-AVX_Fast_Unaligned_Load";
}

}  // namespace space::vmm

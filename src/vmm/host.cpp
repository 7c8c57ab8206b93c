// Host detection; see host.h.
#include "vmm/host.h"

#include <sys/stat.h>

#include <fstream>

#include "util/enum_names.h"

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
  static constexpr EnumName<HostKind> kNames[] = {
      {HostKind::Hardware, "hardware"}, {HostKind::Pvm, "pvm"}, {HostKind::Unknown, "unknown"}};
  return name_in(kNames, k, "unknown");
}

std::string pvm_boot_params() {
  // Each of rodata=off, percpu_alloc=page and noreplace-smp (a 1-vCPU guest would otherwise
  // rewrite thousands of lock prefixes one by one) saves seconds of interpreted boot on PVM
  // (figures in scripts/kernel/README.md).
  // noxsave: PVM cannot emulate XSAVE/XRSTOR in guest ring 0, so the guest kernel switches
  // tasks with FXSAVE (x87/SSE); the VMM keeps the AVX state for it (vector_state.h).
  return "pvm_quirks noxsave "
         "clearcpuid=popcnt,smap,erms,fsrm,pcid,invpcid,fsgsbase,rdtscp,rdpid,rdrand,rdseed "
         "rodata=off percpu_alloc=page noreplace-smp";
}

}  // namespace space::vmm

// What kind of KVM host this is, and what that means for the guest. On a PVM host (a software
// hypervisor; /sys/module/kvm_pvm exists) the guest kernel must avoid instructions PVM cannot
// emulate in ring 0 and enable our kernel patches, so the VMM adds pvm_boot_params() to the
// command line and masks cx16 in CPUID. Hardware KVM (VMX/SVM) runs the stock paths.
#pragma once
#include <string>

namespace space::vmm {

enum class HostKind { Hardware, Pvm, Unknown };

// Inspects /sys/module/kvm_pvm and /proc/cpuinfo (paths overridable for tests).
HostKind detect_host(const std::string& sys_module_dir = "/sys/module",
                     const std::string& cpuinfo = "/proc/cpuinfo");
// "hardware", "pvm" or "unknown".
const char* host_kind_name(HostKind k);
// Kernel command-line parameters every PVM guest needs (see scripts/kernel/README.md).
std::string pvm_boot_params();

}  // namespace space::vmm

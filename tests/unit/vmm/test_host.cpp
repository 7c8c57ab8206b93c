// Unit tests for vmm/host: which kind of KVM host this is, from a fake /sys/module directory and
// a fake /proc/cpuinfo (kvm_pvm loaded: PVM; vmx or svm in the flags: hardware; else unknown),
// and the names and PVM boot parameters that follow.
#include <doctest/doctest.h>

#include <string>

#include "support/temp_dir.h"
#include "util/fs.h"
#include "vmm/host.h"

using namespace space;
using space::vmm::HostKind;

namespace {

// A fake host: sys/module (with kvm_pvm if `pvm`) and a cpuinfo file with `cpuinfo` in it.
struct FakeHost {
  test::TempDir d{"host"};
  std::string modules = d.path + "/module", cpuinfo = d.path + "/cpuinfo";
  FakeHost(bool pvm, const std::string& cpuinfo_text) {
    fs::mkdir_p(modules + "/kvm");
    if (pvm) fs::mkdir_p(modules + "/kvm_pvm");
    fs::write_file_atomic(cpuinfo, cpuinfo_text);
  }
  HostKind detect() const { return vmm::detect_host(modules, cpuinfo); }
};

const char* kVmx =
    "processor\t: 0\nvendor_id\t: GenuineIntel\n"
    "flags\t\t: fpu vme de pse tsc msr pae vmx ssse3 sse4_1\nbugs\t\t: spectre_v1\n";
const char* kSvm = "processor\t: 0\nflags\t\t: fpu svm\n";
const char* kNone = "processor\t: 0\nflags\t\t: fpu vme de pse hypervisor\n";

}  // namespace

TEST_CASE("detect_host: kvm_pvm loaded means PVM, whatever the CPU flags say") {
  CHECK(FakeHost(true, kVmx).detect() == HostKind::Pvm);
  CHECK(FakeHost(true, kNone).detect() == HostKind::Pvm);
  CHECK(FakeHost(true, "").detect() == HostKind::Pvm);
}

TEST_CASE("detect_host: vmx or svm in the first flags line means hardware KVM") {
  CHECK(FakeHost(false, kVmx).detect() == HostKind::Hardware);
  CHECK(FakeHost(false, kSvm).detect() == HostKind::Hardware);
  CHECK(FakeHost(false, "flags\t\t: vmx\n").detect() == HostKind::Hardware);  // first and last word
  CHECK(FakeHost(false, kNone).detect() == HostKind::Unknown);
  // Whole words only, and only the first flags line counts.
  CHECK(FakeHost(false, "flags\t\t: fpu vmxe svm_lock\n").detect() == HostKind::Unknown);
  CHECK(FakeHost(false, "flags\t\t: fpu\nflags\t\t: vmx\n").detect() == HostKind::Unknown);
  CHECK(FakeHost(false, "model name\t: vmx svm\n").detect() == HostKind::Unknown);
  CHECK(FakeHost(false, "").detect() == HostKind::Unknown);
  FakeHost h(false, kVmx);
  CHECK(vmm::detect_host(h.modules, h.d.path + "/no-cpuinfo") == HostKind::Unknown);
  CHECK(vmm::detect_host(h.d.path + "/no-sys-module", h.cpuinfo) == HostKind::Hardware);
}

TEST_CASE("host kind names and the PVM boot parameters") {
  CHECK(std::string(vmm::host_kind_name(HostKind::Hardware)) == "hardware");
  CHECK(std::string(vmm::host_kind_name(HostKind::Pvm)) == "pvm");
  CHECK(std::string(vmm::host_kind_name(HostKind::Unknown)) == "unknown");
  std::string p = vmm::pvm_boot_params();
  CHECK_FALSE(p.empty());
  CHECK(p.front() != ' ');
  CHECK(p.back() != ' ');
  CHECK(p.find("  ") == std::string::npos);  // one space between parameters: a clean cmdline
  CHECK((" " + p + " ").find(" pvm_quirks ") != std::string::npos);
  CHECK((" " + p + " ").find(" noxsave ") != std::string::npos);
  // Vector state is kept by the VMM (vector_state.h), not hidden from glibc alone.
  CHECK(p.find("GLIBC_TUNABLES") == std::string::npos);
}

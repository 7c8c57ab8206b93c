// CPU feature words and the host-compatibility check; see cpu_features.h. Bit names follow the
// Intel SDM / Linux cpufeatures spelling.
#include "vmm/arch/x86_64/cpu_features.h"

#include <array>

namespace space::vmm::x86 {
namespace {

using Names = std::array<const char*, 32>;

// clang-format off: one row per 8 bits (4 where names are long), bit 0 first.
constexpr Names kLeaf1Ecx = {
    "sse3",   "pclmulqdq",  "dtes64",  "monitor", "ds_cpl",
    "vmx",    "smx",        "est",     "tm2",     "ssse3",
    "cid",    "sdbg",       "fma",     "cx16",    "xtpr",
    "pdcm",   nullptr,      "pcid",    "dca",     "sse4_1",
    "sse4_2", "x2apic",     "movbe",   "popcnt",  "tsc_deadline_timer",
    "aes",    "xsave",      "osxsave", "avx",     "f16c",
    "rdrand", "hypervisor",
};
constexpr Names kLeaf1Edx = {
    "fpu",  "vme",  "de",   "pse", "tsc",  "msr", "pae",   "mce", "cx8",     "apic",  nullptr,
    "sep",  "mtrr", "pge",  "mca", "cmov", "pat", "pse36", "pn",  "clflush", nullptr, "dts",
    "acpi", "mmx",  "fxsr", "sse", "sse2", "ss",  "ht",    "tm",  "ia64",    "pbe",
};
constexpr Names kLeaf7Ebx = {
    "fsgsbase",   "tsc_adjust", "sgx",        "bmi1",     "hle",      "avx2",     "fdp_excptn_only",
    "smep",       "bmi2",       "erms",       "invpcid",  "rtm",      "cqm",      "zero_fcs_fds",
    "mpx",        "rdt_a",      "avx512f",    "avx512dq", "rdseed",   "adx",      "smap",
    "avx512ifma", "pcommit",    "clflushopt", "clwb",     "intel_pt", "avx512pf", "avx512er",
    "avx512cd",   "sha_ni",     "avx512bw",   "avx512vl",
};
constexpr Names kLeaf7Ecx = {
    "prefetchwt1", "avx512vbmi",   "umip",          "pku",       "ospke",
    "waitpkg",     "avx512_vbmi2", "shstk",         "gfni",      "vaes",
    "vpclmulqdq",  "avx512_vnni",  "avx512_bitalg", "tme",       "avx512_vpopcntdq",
    nullptr,       "la57",         nullptr,         nullptr,     nullptr,
    nullptr,       nullptr,        "rdpid",         "keylocker", "bus_lock_detect",
    "cldemote",    nullptr,        "movdiri",       "movdir64b", "enqcmd",
    "sgx_lc",      "pks",
};
constexpr Names kLeaf7Edx = {
    nullptr,
    nullptr,
    "avx512_4vnniw",
    "avx512_4fmaps",
    "fsrm",
    "uintr",
    nullptr,
    nullptr,
    "avx512_vp2intersect",
    "srbds_ctrl",
    "md_clear",
    "rtm_always_abort",
    nullptr,
    "tsx_force_abort",
    "serialize",
    "hybrid_cpu",
    "tsxldtrk",
    nullptr,
    "pconfig",
    "arch_lbr",
    "ibt",
    nullptr,
    "amx_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_int8",
    "spec_ctrl",
    "intel_stibp",
    "flush_l1d",
    "arch_capabilities",
    "core_capabilities",
    "spec_ctrl_ssbd",
};
// clang-format on

// Bits that are not requirements: set by the VMM (hypervisor, HTT) or by KVM from guest CR4
// (OSXSAVE, OSPKE).
constexpr uint32_t kIgnore1Ecx = (1u << 31) | (1u << 27);
constexpr uint32_t kIgnore1Edx = 1u << 28;
constexpr uint32_t kIgnore7Ecx = 1u << 4;

void collect(uint32_t need, uint32_t have, uint32_t ignore, const Names& names, const char* where,
             std::vector<std::string>& out) {
  uint32_t missing = need & ~have & ~ignore;
  for (int bit = 0; bit < 32; bit++) {
    if (!(missing & (1u << bit))) continue;
    const char* n = names[static_cast<size_t>(bit)];
    out.push_back(n ? std::string(n) : std::string(where) + " bit " + std::to_string(bit));
  }
}

}  // namespace

CpuFeatures cpu_features_of(std::span<const kvm_cpuid_entry2> entries) {
  CpuFeatures f;
  for (const auto& e : entries) {
    if (e.function == 1) {
      f.leaf1_ecx = e.ecx;
      f.leaf1_edx = e.edx;
    } else if (e.function == 7 && e.index == 0) {
      f.leaf7_ebx = e.ebx;
      f.leaf7_ecx = e.ecx;
      f.leaf7_edx = e.edx;
    }
  }
  return f;
}

std::vector<std::string> missing_cpu_features(const CpuFeatures& need, const CpuFeatures& have) {
  std::vector<std::string> out;
  collect(need.leaf1_ecx, have.leaf1_ecx, kIgnore1Ecx, kLeaf1Ecx, "cpuid.1.ecx", out);
  collect(need.leaf1_edx, have.leaf1_edx, kIgnore1Edx, kLeaf1Edx, "cpuid.1.edx", out);
  collect(need.leaf7_ebx, have.leaf7_ebx, 0, kLeaf7Ebx, "cpuid.7.ebx", out);
  collect(need.leaf7_ecx, have.leaf7_ecx, kIgnore7Ecx, kLeaf7Ecx, "cpuid.7.ecx", out);
  collect(need.leaf7_edx, have.leaf7_edx, 0, kLeaf7Edx, "cpuid.7.edx", out);
  return out;
}

}  // namespace space::vmm::x86

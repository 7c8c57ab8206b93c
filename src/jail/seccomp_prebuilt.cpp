// The built-in programs; see seccomp_prebuilt.h. jail/seccomp_prebuilt.inc is generated in the
// build tree by seccomp-gen and defines kPrebuiltVmm, kPrebuiltVcpu and kPrebuiltInit.
#include "jail/seccomp_prebuilt.h"

#include <linux/filter.h>

#include <iterator>

#include "util/error.h"

namespace space::jail {
namespace {
#include "jail/seccomp_prebuilt.inc"

template <size_t N>
Program copy_of(const sock_filter (&code)[N]) {
  return Program{std::vector<sock_filter>(std::begin(code), std::end(code))};
}
}  // namespace

Program prebuilt(Role role) {
  switch (role) {
    case Role::Vmm:
      return copy_of(kPrebuiltVmm);
    case Role::Vcpu:
      return copy_of(kPrebuiltVcpu);
    case Role::Init:
      return copy_of(kPrebuiltInit);
  }
  fail("seccomp: no built-in program for this role");
}

Program program(Role role, Unlisted unlisted) {
  return unlisted == Unlisted::Kill ? prebuilt(role) : compile(role, unlisted);
}

void install(Role role, Unlisted unlisted) {
  Program p = program(role, unlisted);
  if (int err = load(p); err != 0)
    throw_errno(std::string("install the seccomp filter of the ") + role_name(role) + " role", err);
}

}  // namespace space::jail

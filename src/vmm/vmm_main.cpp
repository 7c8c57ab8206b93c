// Placeholder until the VMM lands in this file.
#include "vmm/vmm_main.h"

#include "util/error.h"

namespace space::vmm {
int vmm_main(const VmmOptions&) { fail("the VMM is not built yet"); }
}  // namespace space::vmm

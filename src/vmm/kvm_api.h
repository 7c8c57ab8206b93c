// The one way the project includes <linux/kvm.h>. Debian 12's uapi headers (linux-libc-dev 6.1)
// define __DECLARE_FLEX_ARRAY as an anonymous struct holding an empty struct, which is 1 byte
// in C++ (0 in C): in C++ that moves every flexible array (kvm_cpuid2.entries, kvm_msrs.entries,
// ...) 4 bytes off and changes the ioctl numbers derived from sizeof, so KVM_GET_SUPPORTED_CPUID
// fails with EINVAL. We redefine the macro as a GNU zero-length array before the KVM headers
// are read, and check the layouts at compile time.
#pragma once
#include <linux/stddef.h>
#undef __DECLARE_FLEX_ARRAY
#define __DECLARE_FLEX_ARRAY(TYPE, NAME) TYPE NAME[0]
#include <linux/kvm.h>

#include <cstddef>

static_assert(sizeof(kvm_cpuid2) == 8 && offsetof(kvm_cpuid2, entries) == 8);
static_assert(sizeof(kvm_msrs) == 8 && offsetof(kvm_msrs, entries) == 8);
static_assert(sizeof(kvm_msr_list) == 4 && offsetof(kvm_msr_list, indices) == 4);
static_assert(sizeof(kvm_irq_routing) == 8 && offsetof(kvm_irq_routing, entries) == 8);
static_assert(sizeof(kvm_xsave) == 4096);

// BootFlags; see boot_flags.h.
#include "cli/boot_flags.h"

#include "store/config.h"

namespace space::cli {

void BootFlags::add(CLI::App* cmd, std::string& kernel, std::string& rootfs,
                    const std::string& when) {
  cpus_opt_ =
      cmd->add_option("--cpus", cpus_, "Number of vCPUs" + when + " (default: config.toml, else 1)")
          ->check(CLI::Range(1u, store::kMaxCpus));
  memory_opt_ = cmd->add_option("--memory", memory_,
                                "Guest memory in MiB" + when + " (default: config.toml, else 256)")
                    ->check(CLI::Range(store::kMinMemoryMib, store::kMaxMemoryMib));
  cmd->add_option("--kernel", kernel,
                  "Guest kernel, an ELF vmlinux" + when +
                      " (default: config.toml, else $SPACE_CACHE/kernel/current/vmlinux)");
  cmd->add_option("--rootfs", rootfs,
                  "Root filesystem image to copy" + when +
                      " (default: config.toml, else $SPACE_CACHE/rootfs/current/rootfs.ext4)");
}

void BootFlags::apply(std::optional<uint32_t>& vcpus, std::optional<uint32_t>& memory_mib) const {
  if (cpus_opt_ && cpus_opt_->count()) vcpus = cpus_;
  if (memory_opt_ && memory_opt_->count()) memory_mib = memory_;
}

void add_engine_option(CLI::App* cmd, std::string& engine) {
  cmd->add_option("--engine", engine,
                  "What runs the sandbox: vm (a KVM microVM, the default) or gvisor (runsc's "
                  "user-space kernel, for hosts without /dev/kvm; a weaker boundary). Default: "
                  "SPACE_ENGINE, else config.toml [engine] default, else vm; never a fallback")
      ->check(CLI::IsMember({"vm", "gvisor"}));
}

}  // namespace space::cli

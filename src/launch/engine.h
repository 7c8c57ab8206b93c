// The engine seam: what runs a sandbox. Two engines share one CLI and everything above this
// seam (exec, cp, forward, secrets, net, images, expiry, stats, list; core talks to both
// through a sandbox's control.sock and vsock.sock): the KVM microVM, the product's core and the
// default ("vm": a VMM process per sandbox, src/monitor/vmm_main.h), and gVisor ("gvisor": a
// user-space kernel run by runsc, with a monitor process per sandbox in the VMM's place,
// src/monitor/gvisor_main.h), for hosts without /dev/kvm. What differs between them lies below
// the seam: which process starts or restores a sandbox (launch/launcher.h), how it pauses,
// checkpoints and branches (its monitor), and how guest-init's agent channel is carried
// (virtio-vsock, or guest-init dialling the monitor's Unix socket).
//
// Choosing fails closed: the engine is --engine, else $SPACE_ENGINE, else config.toml's
// [engine] default, else vm; when the chosen engine cannot run here the command fails (exit
// 125) with a hint that names the other engine and what it trades. Nothing ever falls back by
// itself. A sandbox's engine is recorded in its state.json; its branches and checkpoints keep it.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "store/config.h"

namespace space::launch {

enum class Engine { Vm, Gvisor };

// "vm" or "gvisor".
const char* engine_name(Engine e);
// The engine named `name`, or nullopt.
std::optional<Engine> parse_engine(std::string_view name);

// The chosen engine and what chose it, for messages ("--engine", "SPACE_ENGINE",
// "config.toml [engine] default", "the built-in default").
struct EngineChoice {
  Engine engine = Engine::Vm;
  std::string source;
};

// The engine for a new sandbox or template: `flag` ("" = none), then $SPACE_ENGINE, then
// hc.engine_default, then vm. Throws (with the valid names) when a name is neither engine.
EngineChoice choose_engine(const std::string& flag, const store::HostConfig& hc);

// Whether an engine can run sandboxes on this host, and why not.
struct EngineStatus {
  Engine engine = Engine::Vm;
  bool usable = false;
  std::string detail;  // usable: what runs it ("/dev/kvm (pvm)", "runsc version ..."); else why not
};

// Probes the vm engine: /dev/kvm opens and answers KVM's API version.
EngineStatus probe_vm_engine(const std::string& kvm_device = "/dev/kvm");
// Probes the gvisor engine: runsc (config.toml's, or on PATH) runs and is recent enough. Its
// version is asked once per binary and kept in $SPACE_CACHE (it costs ~45 ms).
EngineStatus probe_gvisor_engine(const store::HostConfig& hc);
EngineStatus probe_engine(Engine e, const store::HostConfig& hc);

// Throws the fail-closed error for `choice` when `status` says it cannot run: exit 125, the
// reason, and a hint naming the other engine, how to choose it, and what it trades. Returns
// quietly when usable. Never picks the other engine.
void require_usable(const EngineChoice& choice, const EngineStatus& status);

// choose_engine() and require_usable(probe_engine()) in one: the engine a command may use.
EngineChoice engine_for_new_sandbox(const std::string& flag, const store::HostConfig& hc);

// The runsc binary for the gvisor engine: config.toml's [engine.gvisor] runsc, else runsc on
// PATH; "" when there is none.
std::string runsc_binary(const store::HostConfig& hc);

}  // namespace space::launch

// `create` on the gvisor engine (launch/engine.h): a sandbox whose root is space's rootfs, or the
// reflinked copy of a user image's disk, mounted read-only by its monitor, with runsc's overlay
// keeping its writes (in memory, under --memory; or with --disk-size in a directory of its
// subvolume, which a btrfs qgroup bounds). It starts from nothing in a few hundred ms (runsc's
// create and start); a gvisor template is a rootfs and a size, cloned. --kernel and --cold are VM
// settings and are refused, naming the fix. Internal to core (core/sandbox.h's create_sandbox
// calls it, after core/pool.h found no ready sandbox to hand out; the pool makes its members
// with it too).
#pragma once
#include <optional>
#include <string>

#include "core/create_options.h"
#include "core/template.h"
#include "egress/policy.h"
#include "launch/launcher.h"
#include "store/config.h"
#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"

namespace space::core {

// The gvisor template a create starts from: --template's, or the default template when that is
// a gvisor one; nullopt for none. Throws when --template names a missing or VM template, or
// with --cpus, --memory or --rootfs, which a template fixes.
std::optional<TemplateMeta> choose_gvisor_template(const store::StorePaths& sp,
                                                   const store::HostConfig& hc,
                                                   const CreateOptions& opts);

// Creates sandbox `id` (paths `p`, already checked) on gvisor and returns its state (running):
// all or nothing, as create_sandbox. `policy` is its network policy, checked. With
// `pool_template`, `id` is a member of that template's pool and `p` its pool paths.
store::SandboxState create_gvisor_sandbox(const store::Context& ctx, const store::HostConfig& hc,
                                          const CreateOptions& opts, const std::string& id,
                                          const store::SandboxPaths& p,
                                          const std::optional<egress::Policy>& policy,
                                          const std::string& pool_template = "");

// The monitor of sandbox `p`/`id` on gvisor (`space __gvisor ID`), started with its run
// directory made afresh and its cgroup st.cgroup made with its limits (the monitor joins it, and
// runsc's processes are born there); `restore_dir` "" = boot, else restore runsc's checkpoint
// there. A failure after the group was made leaves it to the caller's remove_sandbox_cgroup.
launch::VmmLaunch launch_gvisor(const store::Context& ctx, const store::HostConfig& hc,
                                const store::SandboxPaths& p, const store::SandboxState& st,
                                const std::string& restore_dir,
                                const std::string& pool_template = "");

}  // namespace space::core

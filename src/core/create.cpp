// `create`: a sandbox from a template (the default: a new subvolume holding reflinks of the
// template's files, then a VMM restored from that copy) or by a cold boot (--cold, a cold-boot
// flag, or a missing implicit default template). Either way the sandbox's subvolume is made
// first, and every later step is undone by one catch block: kill the VMM (our child, so its pid
// cannot have been reused), remove the run directory, delete the subvolume. The restore path is
// the hot one: one statfs, one subvolume and four reflinks, three small files written atomically
// without fsync (see start()), one fork, one wait on the ready pipe; its phases are logged at
// debug level.
#include <cerrno>

#include "core/copy.h"
#include "core/create_gvisor.h"
#include "core/expiry.h"
#include "core/idle.h"
#include "core/image_use.h"
#include "core/inject.h"
#include "core/net.h"
#include "core/pool.h"
#include "core/sandbox.h"
#include "core/template.h"
#include "cred/hooks.h"
#include "cred/paths.h"
#include "jail/cgroup.h"
#include "launch/engine.h"
#include "launch/jail_setup.h"
#include "launch/launcher.h"
#include "store/btrfs.h"
#include "store/config.h"
#include "store/store.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/phase_log.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::core {

namespace {

// What the new sandbox starts from: a template, or a cold boot of `boot`.
struct Source {
  std::string template_name;  // "" = cold boot
  std::string template_dir;   // store::template_dir of template_name (the name validated)
  bool explicit_template = false;
  std::optional<launch::BootSpec> boot;  // set for a cold boot
};

Source choose_source(const store::Context& ctx, const store::HostConfig& hc,
                     const CreateOptions& o) {
  bool boot_flags = o.vcpus || o.memory_mib || !o.kernel.empty() || !o.rootfs.empty();
  Source s;
  if (!o.template_name.empty()) {
    s.template_dir = store::template_dir(ctx.root, o.template_name);  // before anything is made
    if (o.cold) fail("--cold and --template exclude each other", "pass one of them");
    if (boot_flags)
      fail(
          "--cpus, --memory, --kernel and --rootfs are cold-boot settings; the template fixes them",
          "drop them, or pass --cold instead of --template");
    s.template_name = o.template_name;
    s.explicit_template = true;
  } else if (!o.cold && !boot_flags) {
    s.template_name = hc.default_template;  // config.toml's, validated when it was read
    if (!s.template_name.empty()) s.template_dir = store::template_dir(ctx.root, s.template_name);
  }
  return s;
}

// Makes the new sandbox directory from template `name`: a new subvolume holding reflinks of the
// template's files (store::clone_into_subvolume, which commits no btrfs transaction); false if
// there is no such template. A crash midway leaves a directory without a record, which
// `destroy --force` removes, as with any create caught before its record.
bool clone_template(const std::string& src, const std::string& name, const store::SandboxPaths& p,
                    const std::string& id) {
  try {
    store::clone_into_subvolume(src, p.dir);
    return true;
  } catch (Error& e) {
    if (e.err() == EEXIST) fail("already exists", "space destroy " + id);
    if (e.err() == ENOENT && !fs::exists(src)) return false;
    e.add_context("copy template " + name);
    throw;
  }
}

// The VM the sandbox runs: a cold boot's settings (its rootfs copied in), or its template's as
// the snapshot recorded them; then the image disk and the store quota. Records the image, the
// quota, vCPUs and memory in `st`.
store::VmConfig vm_config_for(const store::Context& ctx, const store::HostConfig& hc,
                              const store::SandboxPaths& p, store::SandboxState& st,
                              const Source& src, const CreateOptions& o, proc::SignalGuard& sig,
                              PhaseLog& ph) {
  store::VmConfig cfg{st.id, 0, 0, "", p.rootfs, ""};
  try {
    cfg.cred_dir = cred::cred_dir_for_root(ctx.root);  // where guest requests for secrets go
  } catch (const Error& e) {
    log::warn(std::string("no credential helper for this sandbox: ") + e.what());
  }
  if (src.boot) {
    fs::copy_file(src.boot->rootfs_image, p.rootfs, 0600, [&] { sig.check(); });
    cfg.vcpus = src.boot->vcpus;
    cfg.memory_mib = src.boot->memory_mib;
    cfg.kernel = src.boot->kernel;
  } else {
    TemplateMeta m;
    try {
      m = read_template_meta(p.dir);  // the snapshot's copy: the template as it was snapshotted
      if (m.engine == "vm") check_restorable(m, src.template_name);
    } catch (Error& e) {
      e.add_context("template " + src.template_name);
      e.set_hint("rebuild it: space template build --force " + src.template_name);
      throw;
    }
    if (m.engine != "vm")
      fail("template " + src.template_name + " is a " + m.engine +
               " template, and this sandbox's engine is vm",
           "create from it with --engine " + m.engine + ", or from a VM template");
    cfg.vcpus = m.vcpus;
    cfg.memory_mib = m.memory_mib;
    cfg.kernel = m.kernel;
  }
  if (!o.image.empty()) {
    if (fs::exists(p.image_meta))
      fail("template " + src.template_name + " was built with an image of its own",
           "create from it without --image, or pass --template with a template built without one");
    attach_image(ctx, o.image, p, o.disk_bytes);
    ph.mark("image");
  }
  if (auto image = attached_image(p)) {
    cfg.image_disk = p.image_disk;
    st.image = image->name;
  }
  // --disk-size, else config.toml's [limits] disk_size, is also what the store lets it keep.
  if (uint64_t disk = o.disk_bytes ? o.disk_bytes : hc.limits_disk_bytes) {
    st.disk_limit = launch::disk_limit_for(p, disk, cfg.memory_mib);
    launch::limit_sandbox_disk(ctx, p, st.disk_limit);
    ph.mark("quota");
  }
  st.vcpus = cfg.vcpus;
  st.memory_mib = cfg.memory_mib;
  return cfg;
}

// Everything after the sandbox directory exists: config, run directory, VMM, state. The VMM
// child is handed out through `vmm` so that the caller's cleanup can kill it.
void start(const store::Context& ctx, const store::HostConfig& hc, const store::SandboxPaths& p,
           store::SandboxState& st, const Source& src, const CreateOptions& o,
           proc::SignalGuard& sig, std::optional<proc::Child>& vmm, PhaseLog& ph) {
  store::VmConfig cfg = vm_config_for(ctx, hc, p, st, src, o, sig, ph);
  // Every write here is atomic but not fsync'ed: what they describe is a live VMM, which a power
  // cut ends anyway (a sandbox is then "stopped" whatever its record says), and on the loopback
  // store each fsync costs a flush of the host disk (ARCHITECTURE.md, "Measurements").
  store::save_vm_config(p.config, cfg, fs::Sync::Volatile);
  ph.mark("config");

  int timeout_s = launch::boot_timeout_seconds();
  launch::VmmLaunch launch = launch::launch_vmm(
      ctx, hc, p, st.id,
      launch::VmmMode{src.boot ? "" : p.dir, false, src.boot ? "" : src.template_dir,
                      expires_at(st), st.on_expiry},
      launch::JailRequest{st.id, st.id, cfg.vcpus, cfg.memory_mib});
  vmm.emplace(std::move(launch.child));
  st.uid = launch.uid;
  st.cgroup = launch.cgroup;
  st.pid = vmm->pid();
  st.pid_start_time = proc::start_time(st.pid).value_or(0);
  ph.mark("spawn");
  // "creating" with the pid, so destroy can find the VMM if we die before the end.
  store::write_state(p.state, st, fs::Sync::Volatile);
  ph.mark("state");
  try {
    launch::wait_started(*vmm, launch.ready, p, /*guest=*/src.boot.has_value(), sig, timeout_s);
  } catch (Error& e) {
    if (src.boot) throw;
    // The VMM checks the snapshot (magic, version, CRC, sizes) and names what is wrong with it.
    e.add_context("restore template " + src.template_name);
    if (e.hint().empty())
      e.set_hint("if the template is damaged, rebuild it: space template build --force " +
                 src.template_name);
    throw;
  }
  ph.mark(src.boot ? "boot" : "vmm ready");
  if (st.uid) {  // the jail's PID 1 so far: record the VMM itself
    st.pid = launch::served_by(p.control_sock);
    st.pid_start_time = proc::start_time(st.pid).value_or(0);
  }
  st.status = store::Status::Running;
  store::write_state(p.state, st, fs::Sync::Volatile);
  ph.mark("state");
  ensure_network(ctx, st.id);  // the broker listens for it before its guest dials out
  if (needs_reaper(st)) ensure_reaper(ctx);
}

}  // namespace

namespace {

// A VM sandbox (make_sandbox's VM half): a template's snapshot cloned, or a subvolume for a cold
// boot, then started and recorded; undone on any failure.
store::SandboxState make_vm_sandbox(const store::Context& ctx, const store::HostConfig& hc,
                                    const CreateOptions& opts, const launch::EngineChoice& engine,
                                    const std::string& id, const store::SandboxPaths& p,
                                    proc::SignalGuard& sig, PhaseLog& ph) {
  if (opts.disk_bytes && opts.image.empty())
    fail("--disk-size sizes the copy of an image's disk", "pass --image NAME with it");
  Source src = choose_source(ctx, hc, opts);
  std::optional<egress::Policy> policy = initial_policy(hc, opts.net);  // checked up front
  if (src.template_name.empty())
    src.boot = launch::resolve_boot_spec(hc, opts.vcpus, opts.memory_mib, opts.kernel, opts.rootfs);
  launch::require_usable(engine, launch::probe_engine(engine.engine, hc));  // fails closed
  store::ensure_store(ctx, store::StoreUse::Create);
  ph.mark("store");
  if (!src.template_name.empty() && !clone_template(src.template_dir, src.template_name, p, id)) {
    std::string build = "space template build " + src.template_name;
    if (src.explicit_template)
      throw Error("template " + src.template_name + " does not exist", ENOENT,
                  "build it: " + build);
    log::warn("no template \"" + src.template_name +
              "\": cold-booting (seconds: about 12 s on a PVM host); '" + build +
              "' makes creates fast");
    src.template_name.clear();
    src.template_dir.clear();
    src.boot = launch::resolve_boot_spec(hc, opts.vcpus, opts.memory_mib, opts.kernel, opts.rootfs);
  }
  if (src.boot) {
    try {
      store::btrfs::create_subvolume(p.dir);
    } catch (const Error& e) {
      if (e.err() == EEXIST) fail("already exists", "space destroy " + id);
      throw;
    }
  }
  ph.mark(src.boot ? "subvolume" : "clone");

  store::SandboxState st;
  st.id = id;
  st.status = store::Status::Creating;
  st.created = store::rfc3339_now();
  st.template_name = src.template_name;
  set_expiry(st, opts.ttl_ms, opts.on_expiry);
  set_idle(st, opts.idle, hc);  // checked above
  std::optional<proc::Child> vmm;
  auto undo = [&] {
    vmm.reset();  // SIGKILL + reap
    remove_half_made(ctx, p, id, st.cgroup);
  };
  try {
    store::SandboxLock lock(p.lock);
    set_policy(ctx, id, policy);  // before the VMM: its first Hello starts the guest's proxy
    start(ctx, hc, p, st, src, opts, sig, vmm, ph);
    vmm->release();  // the sandbox is running: the VMM outlives us
    log::debug("create " + id + ": " + ph.summary());
    return st;
  } catch (Error& e) {
    vmm.reset();
    std::string tails = launch::log_tails(p);  // read them before they are deleted
    undo();
    throw Error(std::string(e.what()) + tails, e.err(), e.hint());
  } catch (...) {
    undo();
    throw;
  }
}

// The sandbox itself: made, running, recorded (create_sandbox's first half).
store::SandboxState make_sandbox(const store::Context& ctx, const CreateOptions& opts) {
  PhaseLog ph;
  proc::SignalGuard sig;  // outermost: cleanup below runs before a signal can end the process
  std::string id = opts.id.empty() ? store::generate_id() : opts.id;
  store::SandboxPaths p = store::sandbox_paths(ctx.root, id);  // validates the id
  try {
    if (!opts.image.empty()) store::validate_id(opts.image, "image name");  // before anything
    launch::check_socket_paths(p);
    store::HostConfig hc = store::load_host_config(ctx.root);
    {
      store::SandboxState checked;  // the idle settings are checked before anything is made
      set_idle(checked, opts.idle, hc);
    }
    launch::EngineChoice engine =
        launch::choose_engine(opts.engine, hc);  // probed once the flags are checked
    if (engine.engine == launch::Engine::Gvisor) {
      auto policy = initial_policy(hc, opts.net);
      launch::require_usable(engine, launch::probe_engine(engine.engine, hc));  // fails closed
      if (auto pooled = claim_pooled(ctx, hc, opts, id, p, policy)) return *pooled;
      return create_gvisor_sandbox(ctx, hc, opts, id, p, policy);
    }
    return make_vm_sandbox(ctx, hc, opts, engine, id, p, sig, ph);
  } catch (Error& e) {
    e.add_context("create sandbox " + id);
    throw;
  }
}

}  // namespace

namespace {

// What an OCI bundle asks of its sandbox (CreateOptions' netns, CPU quota, memory limit).
void apply_bundle_settings(const store::Context& ctx, const store::SandboxState& st,
                           const CreateOptions& opts) {
  if (opts.memory_limit_bytes && *opts.memory_limit_bytes < uint64_t{st.memory_mib} << 20)
    fail("linux.resources.memory.limit (" + std::to_string(*opts.memory_limit_bytes >> 20) +
             " MiB) is below the template's guest memory (" + std::to_string(st.memory_mib) +
             " MiB)",
         "raise the limit, or pick a smaller template with the annotation space.template");
  if (!opts.netns_path.empty()) set_netns(ctx, st.id, opts.netns_path);
  if (opts.cpu_quota_us && !st.cgroup.empty())  // linux.resources.cpu: the sandbox's cgroup
    jail::set_cpu_quota(jail::detect_layout(), st.cgroup, *opts.cpu_quota_us,
                        opts.cpu_period_us.value_or(100000));
}

}  // namespace

store::SandboxState create_sandbox(const store::Context& ctx, const CreateOptions& opts) {
  // Outermost, so that a signal during the hand-over rolls the sandbox back as one during the
  // making does (make_sandbox has a guard of its own for its steps).
  proc::SignalGuard sig;
  store::SandboxState st = make_sandbox(ctx, opts);
  try {
    sig.check();
    apply_bundle_settings(ctx, st, opts);
    core::grant_secrets(ctx, st.id, opts.secrets);  // bindings checked, the CA installed
    sig.check();
    copy_specs_into(ctx, st.id, opts.copies);
    sig.check();
  } catch (Error& e) {
    try {
      destroy_sandbox(ctx, st.id, /*force=*/true);
    } catch (const Error& cleanup) {
      log::error("create " + st.id + ": could not remove it: " + cleanup.what());
    }
    e.add_context("create sandbox " + st.id);
    throw;
  }
  return st;
}

}  // namespace space::core

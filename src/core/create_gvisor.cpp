// `create` on the gvisor engine; see create_gvisor.h. The shape is create.cpp's: the subvolume
// first, then config, run directory and monitor, each undone by one catch block.
#include "core/create_gvisor.h"

#include "core/expiry.h"
#include "core/idle.h"
#include "core/image_use.h"
#include "core/net.h"
#include "core/sandbox.h"
#include "core/template.h"
#include "cred/paths.h"
#include "launch/engine.h"
#include "launch/jail_setup.h"
#include "store/btrfs.h"
#include "store/state.h"
#include "store/store.h"
#include "store/vm_config.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::core {

std::optional<TemplateMeta> choose_gvisor_template(const store::StorePaths& sp,
                                                   const store::HostConfig& hc,
                                                   const CreateOptions& o) {
  const bool explicit_template = !o.template_name.empty();
  const std::string name = explicit_template ? o.template_name : hc.default_template;
  const std::string dir = store::template_dir(sp.root, name);
  if (!fs::exists(dir)) {
    if (explicit_template)
      throw Error("template " + name + " does not exist", ENOENT,
                  "build it: space template build --engine gvisor " + name);
    return std::nullopt;
  }
  TemplateMeta m = read_template_meta(dir);
  check_restorable(m, name);
  if (m.engine != "gvisor") {
    if (explicit_template)
      fail("template " + name + " is a VM template",
           "create from it with --engine vm, or build a gvisor one: space template build "
           "--engine gvisor NAME");
    return std::nullopt;  // the default template is the VM engine's
  }
  if (o.vcpus || o.memory_mib || !o.rootfs.empty())
    fail("--cpus, --memory and --rootfs are fixed by template " + name,
         "drop them, or build a template with them");
  return m;
}

launch::VmmLaunch launch_gvisor(const store::Context& ctx, const store::HostConfig& hc,
                                const store::SandboxPaths& p, const store::SandboxState& st,
                                const std::string& restore_dir, const std::string& pool_template) {
  launch::check_socket_paths(p);
  launch::make_run_dir(p);
  launch::make_gvisor_cgroup(st.cgroup, st.vcpus, st.memory_mib);
  Pipe pipe = Pipe::make();
  std::vector<std::string> argv = {"/proc/self/exe",
                                   "--root",
                                   fs::absolute(ctx.root),
                                   "--log-level",
                                   ctx.log_level,
                                   "--log-format",
                                   ctx.log_format,
                                   "__gvisor",
                                   st.id,
                                   "--ready-fd",
                                   "3",
                                   "--runsc",
                                   launch::runsc_binary(hc),
                                   "--platform",
                                   hc.gvisor_platform,
                                   "--cgroup",
                                   st.cgroup};
  if (!restore_dir.empty()) argv.insert(argv.end(), {"--restore", restore_dir});
  if (!pool_template.empty()) argv.insert(argv.end(), {"--pool", pool_template});
  if (int64_t at = expires_at(st))
    argv.insert(argv.end(), {"--expires-at", std::to_string(at), "--on-expiry", st.on_expiry});
  proc::SpawnOptions o;
  o.fds.push_back(pipe.write.get());
  o.env = env::daemon_environment();
  o.env->push_back("TZ=UTC0");
  proc::Child child = proc::spawn_detached(argv, p.vmm_log, o);
  pipe.write.reset();
  set_nonblocking(pipe.read.get());
  return launch::VmmLaunch{std::move(child), std::move(pipe.read), 0, st.cgroup};
}

namespace {

// The sandbox's directory: a reflink of its template's files, or an empty subvolume. Returns the
// config naming what the sandbox mounts (the template's rootfs, or space's own image).
store::VmConfig make_gvisor_dir(const store::StorePaths& sp, const store::HostConfig& hc,
                                const CreateOptions& opts, const std::optional<TemplateMeta>& tmpl,
                                const std::string& id, const store::SandboxPaths& p) {
  store::VmConfig cfg;
  cfg.id = id;
  cfg.engine = "gvisor";
  if (tmpl) {
    const std::string tdir = store::template_dir(sp.root, tmpl->name);
    if (!opts.image.empty() && fs::exists(tdir + "/image.json"))
      fail("template " + tmpl->name + " was built with an image of its own",
           "create from it without --image");
    try {  // reflinks of its files: the rootfs (and image) this sandbox mounts read-only
      store::clone_into_subvolume(tdir, p.dir);
    } catch (const Error& e) {
      if (e.err() == EEXIST) fail("already exists", "space destroy " + id);
      throw;
    }
    cfg.vcpus = tmpl->vcpus;
    cfg.memory_mib = tmpl->memory_mib;
    cfg.rootfs = p.rootfs;
    return cfg;
  }
  launch::BootSpec b = launch::resolve_gvisor_spec(hc, opts.vcpus, opts.memory_mib, opts.rootfs);
  cfg.vcpus = b.vcpus;
  cfg.memory_mib = b.memory_mib;
  // space's own image, mounted read-only and never written; by its real path, so that a rebuilt
  // rootfs (a new `current`) does not change under a checkpoint of this sandbox.
  cfg.rootfs = fs::real_path(b.rootfs_image);
  try {
    store::btrfs::create_subvolume(p.dir);
  } catch (const Error& e) {
    if (e.err() == EEXIST) fail("already exists", "space destroy " + id);
    throw;
  }
  return cfg;
}

// Everything after the directory exists: policy, image, disk limit, config, the monitor started
// and the sandbox recorded running. The monitor is handed out through `monitor` so that the
// caller's cleanup can kill it.
void start_gvisor(const store::Context& ctx, const store::HostConfig& hc, const CreateOptions& opts,
                  const store::SandboxPaths& p, store::SandboxState& st, store::VmConfig& cfg,
                  const std::optional<egress::Policy>& policy, const std::string& pool_template,
                  proc::SignalGuard& sig, std::optional<proc::Child>& monitor) {
  store::SandboxLock lock(p.lock);
  set_policy(ctx, st.id, policy);
  try {
    cfg.cred_dir = cred::cred_dir_for_root(ctx.root);
  } catch (const Error& e) {
    log::warn(std::string("no credential helper for this sandbox: ") + e.what());
  }
  if (!opts.image.empty()) attach_image(ctx, opts.image, p);  // a reflink, mounted read-only
  if (auto image = attached_image(p)) {
    cfg.image_disk = p.image_disk;
    st.image = image->name;
  }
  if (opts.disk_bytes) {  // the overlay's writes go to the subvolume, which a qgroup bounds
    cfg.overlay_dir = p.dir + "/overlay";
    st.disk_limit = opts.disk_bytes;
    launch::limit_sandbox_disk(ctx, p, st.disk_limit);
  }
  store::save_vm_config(p.config, cfg, fs::Sync::Volatile);
  launch::VmmLaunch launch = launch_gvisor(ctx, hc, p, st, "", pool_template);
  monitor.emplace(std::move(launch.child));
  st.pid = monitor->pid();
  st.pid_start_time = proc::start_time(st.pid).value_or(0);
  store::write_state(p.state, st, fs::Sync::Volatile);
  launch::wait_started(*monitor, launch.ready, p, /*guest=*/false, sig,
                       launch::boot_timeout_seconds(), "the gvisor monitor");
  st.status = store::Status::Running;
  store::write_state(p.state, st, fs::Sync::Volatile);
  ensure_network(ctx, st.id);
  if (needs_reaper(st)) ensure_reaper(ctx);
}

}  // namespace

store::SandboxState create_gvisor_sandbox(const store::Context& ctx, const store::HostConfig& hc,
                                          const CreateOptions& opts, const std::string& id,
                                          const store::SandboxPaths& p,
                                          const std::optional<egress::Policy>& policy,
                                          const std::string& pool_template) {
  if (!opts.kernel.empty())
    fail("--kernel is the VM's guest kernel; gVisor is its own kernel", "drop --kernel");
  if (opts.cold)
    fail("--cold boots a VM's kernel; a gvisor sandbox always starts afresh", "drop --cold");
  proc::SignalGuard sig;
  store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Create);
  std::optional<TemplateMeta> tmpl = choose_gvisor_template(sp, hc, opts);
  store::SandboxState st;  // checked before anything is made
  st.id = id;
  st.engine = "gvisor";
  st.status = store::Status::Creating;
  st.created = store::rfc3339_now();
  st.cgroup = hc.jail_cgroup_parent + "/" + id;
  set_expiry(st, opts.ttl_ms, opts.on_expiry);
  set_idle(st, opts.idle, hc);
  store::VmConfig cfg = make_gvisor_dir(sp, hc, opts, tmpl, id, p);
  if (tmpl) st.template_name = tmpl->name;
  st.vcpus = cfg.vcpus;
  st.memory_mib = cfg.memory_mib;
  std::optional<proc::Child> monitor;
  auto undo = [&] {
    monitor.reset();  // SIGKILL + reap; runsc's processes are in the sandbox's cgroup
    remove_half_made(ctx, p, id, st.cgroup);
  };
  try {
    start_gvisor(ctx, hc, opts, p, st, cfg, policy, pool_template, sig, monitor);
    monitor->release();
    return st;
  } catch (Error& e) {
    monitor.reset();
    std::string tails = launch::log_tails(p);
    undo();
    throw Error(std::string(e.what()) + tails, e.err(), e.hint());
  } catch (...) {
    undo();
    throw;
  }
}

}  // namespace space::core

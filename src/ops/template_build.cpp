// `template build`: boot a VM in a fresh hidden subvolume, wait for guest-init, flush the guest's
// writes and wait until it is idle, have the VMM snapshot it into the same subvolume, stop it,
// drop the build's leftovers (config.json, logs), write template.toml, make the subvolume read-only
// and rename it into place, atomically: renameat2(RENAME_NOREPLACE) for a new name, RENAME_EXCHANGE
// with --force (then the old one is deleted). Any failure or signal before that deletes the
// subvolume, so there is never a half template. The VMM's sockets go to <run
// base>/.template-<rand>, which no sandbox id can name. If the build itself is killed (SIGKILL),
// the next build (or template list) finds its directory unlocked, kills the VMM its state.json
// names and deletes the rest. `template import` installs an exported template the same way (hidden
// subvolume, then rename); `template export` copies one out.
#include "ops/template_build.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "agent/client.h"
#include "agent/exec_bridge.h"
#include "core/image_use.h"
#include "core/sandbox.h"
#include "core/template.h"
#include "image/staging.h"
#include "launch/control_client.h"
#include "launch/engine.h"
#include "launch/launcher.h"
#include "launch/take_snapshot.h"
#include "ops/exec.h"
#include "store/btrfs.h"
#include "store/paths.h"
#include "store/state.h"
#include "store/store.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/procfs.h"
#include "vmm/snapshot.h"

#ifndef SPACE_VERSION
#define SPACE_VERSION "unknown"
#endif

namespace space::ops {

namespace {

// Runs `cmd` with sh -c in the build's VM (inside its image, with the image's config), its
// output on our stderr; throws unless it exits 0.
void run_in_build(const store::SandboxPaths& p, const std::string& cmd, proc::SignalGuard& sig) {
  agent::ExecOptions o;
  o.argv = {"/bin/sh", "-c", cmd};
  if (auto image = core::attached_image(p)) {
    core::apply_image_config(image->config, o);
    o.image = true;
  }
  auto dl = net::Deadline::after_ms(10'000);
  dl.cancel_on(sig.fd());
  Fd sock = agent::vsock_dial(p.vsock_sock, proto::kAgentPort, dl);
  agent::ExecResult r = agent::exec_on_connection(sock.get(), o, agent::StdioFds{0, 2, 2}, sig);
  if (r.exit_code == 0) return;
  std::string why = describe_exit(r, o);
  fail("--run \"" + cmd + "\" exited with status " + std::to_string(r.exit_code) +
           (why.empty() ? "" : " (" + why + ")"),
       "fix the command; its output is above");
}

// Runs `sh -c sync` in the guest before the snapshot. The sync writes back what the boot (and
// --run) left dirty, which every sandbox would otherwise write again after its restore; the exec
// leaves the shell and the exec path in the guest's page cache, so a sandbox's first exec does not
// read them from its disk. On a PVM host a create's first `exec true` took 0.63 s from a template
// made so, against 1.06 s without. A guest without /bin/sh still makes a template (a warning).
void warm(const store::SandboxPaths& p, proc::SignalGuard& sig,
          const std::function<void(const std::string&)>& say) {
  say("flushing the guest's writes (sh -c sync)");
  try {
    run_in_build(p, "sync", sig);
  } catch (const Error& e) {
    sig.check();
    log::warn(std::string("template: sh -c sync failed in the guest (") + e.what() +
              "); its sandboxes will write back the boot's pending writes after their restore");
  }
}

// Waits until the guest is idle, so that the snapshot holds no work in progress: a guest just
// booted (or just done with --run) still has work under way or queued, and every sandbox
// restored from a snapshot taken then would do it again. On a PVM host a create from a template
// taken at guest-init's first answer burned 0.6 s of CPU after its restore, against 0.1 s from
// one taken once the guest was quiet. Idle: the VMM (all its threads, so the vCPUs) used at most
// 5% of a CPU in each of 4 windows of 250 ms in a row (the guest's work after its boot comes in
// bursts of tens of ms, a few hundred ms apart). On hardware KVM those are the first windows.
void settle(pid_t vmm, proc::SignalGuard& sig, const std::function<void(const std::string&)>& say) {
  constexpr int kWindowMs = 250, kWindows = 4, kLimitMs = 60'000;
  say("waiting for the guest to go idle");
  proc::Quiet q = proc::wait_quiet(vmm, kWindowMs, kWindows, 0.05, kLimitMs, sig.fd());
  char used[32];
  std::snprintf(used, sizeof used, "%.1f ms", static_cast<double>(q.last_window_ns) / 1e6);
  if (q.settled) {
    log::info("the guest went idle after " + std::to_string(static_cast<int>(q.waited_ms)) +
              " ms (its VMM used " + used + " of CPU in the last " + std::to_string(kWindowMs) +
              " ms)");
  } else {
    log::warn("the guest was still busy after " + std::to_string(kLimitMs / 1000) +
              " s (its VMM used " + used + " of CPU in the last " + std::to_string(kWindowMs) +
              " ms); snapshotting it as it is, so every sandbox made from this template redoes "
              "that work after its restore (a --run command that leaves a process running "
              "does this)");
  }
}

// The VMM's part: boot, wait for guest-init, run --run's command, flush, wait for the guest to go
// idle, snapshot into p.dir, stop. Returns once the VMM exited.
void boot_and_snapshot(const store::Context& ctx, const store::HostConfig& hc,
                       const store::SandboxPaths& p, const store::VmConfig& cfg,
                       const std::string& name, const std::string& run, proc::SignalGuard& sig,
                       const std::function<void(const std::string&)>& say) {
  int timeout_s = launch::boot_timeout_seconds();
  say("booting the VM");
  // Jailed like every VMM, without a cgroup of its own (it lives for the build only).
  launch::VmmLaunch launch =
      launch::launch_vmm(ctx, hc, p, name, launch::VmmMode{"", true},
                         launch::JailRequest{"template:" + name, "", cfg.vcpus, cfg.memory_mib});
  store::SandboxState st;  // names the VMM, so that a later build can kill it if we die (SIGKILL)
  st.id = name;
  st.status = store::Status::Creating;
  st.pid = launch.child.pid();
  st.pid_start_time = proc::start_time(st.pid).value_or(0);
  st.created = store::rfc3339_now();
  store::write_state(p.state, st, fs::Sync::Volatile);
  const auto t0 = std::chrono::steady_clock::now();
  launch::wait_started(launch.child, launch.ready, p, /*guest=*/true, sig, timeout_s);
  sig.check();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  log::info(std::string("the guest booted to guest-init's first answer in ") + took);
  if (!run.empty()) {
    say("running: " + run);
    run_in_build(p, run, sig);
  }
  warm(p, sig, say);
  pid_t vmm = launch.uid ? launch::served_by(p.control_sock) : launch.child.pid();
  settle(vmm, sig, say);
  say("snapshotting");
  auto snap = launch::take_snapshot(p, vmm, launch.uid, p.dir, timeout_s * 1000);
  log::debug("template " + name + ": snapshot of " + std::to_string(snap.vmstate_bytes) +
             " bytes of vmstate, " + std::to_string(snap.memory_data_bytes >> 10) +
             " KiB of memory data");
  launch::control_call(p.control_sock, proto::control::StopRequest{}, 5000);
  pollfd exited{launch.child.pidfd(), POLLIN, 0};
  if (::poll(&exited, 1, 10000) <= 0)
    log::warn("template " + name + ": the VMM did not stop; killing it");
  launch.child = proc::Child();  // reaps it (killing it first if it still runs)
  fs::remove_tree(p.run_dir);
}

// The flags a gvisor template cannot take.
void refuse_vm_only_flags(const TemplateBuildOptions& o) {
  if (!o.run.empty())
    fail("--run needs a running VM to snapshot; a gvisor template keeps no running state",
         "put the changes in an image (space image build / import) and pass --image");
  if (!o.kernel.empty())
    fail("--kernel is the VM's guest kernel; gVisor is its own kernel", "drop --kernel");
}

// What template.toml records of a build: the engine, the snapshot's format, the guest's size,
// kernel and rootfs.
core::TemplateMeta built_meta(const std::string& name, bool gvisor, const launch::BootSpec& boot) {
  core::TemplateMeta m;
  m.name = name;
  m.created = store::rfc3339_now();
  m.space_version = SPACE_VERSION;
  m.engine = gvisor ? "gvisor" : "vm";
  m.snapshot_format = gvisor ? 0 : vmm::snapshot::kFormatVersion;
  m.vcpus = boot.vcpus;
  m.memory_mib = boot.memory_mib;
  m.kernel = boot.kernel;
  m.rootfs = boot.rootfs_image;
  return m;
}

}  // namespace

core::TemplateMeta build_template(const store::Context& ctx, const TemplateBuildOptions& o) {
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  proc::SignalGuard sig;
  try {
    const std::string dest = store::template_dir(ctx.root, o.name);  // validates the name first
    store::HostConfig hc = store::load_host_config(ctx.root);
    const bool gvisor =
        launch::engine_for_new_sandbox(o.engine, hc).engine == launch::Engine::Gvisor;
    if (gvisor) refuse_vm_only_flags(o);
    launch::BootSpec boot =
        gvisor ? launch::resolve_gvisor_spec(hc, o.vcpus, o.memory_mib, o.rootfs)
               : launch::resolve_boot_spec(hc, o.vcpus, o.memory_mib, o.kernel, o.rootfs);
    store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Create);
    core::sweep_dead_template_builds(sp);
    if (!o.force && fs::exists(dest))
      fail("template " + o.name + " already exists",
           "pass --force to replace it, or remove it with 'space template rm " + o.name + "'");

    std::string build = image::build_dir_for(sp.templates, o.name);
    store::SandboxPaths p = store::paths_in(
        build, core::template_build_run_dir(
                   build.substr(build.rfind(image::kBuildMarker) + image::kBuildMarker.size())));
    launch::check_socket_paths(p);
    store::btrfs::create_subvolume(p.dir);
    try {
      Fd held = image::lock_dir(p.dir);  // marks the build as alive for image::sweep_dead_builds
      if (!held) fail("lock " + p.dir + ": already locked");
      say("copying the root filesystem " + boot.rootfs_image);
      fs::copy_file(boot.rootfs_image, p.rootfs, 0600, [&] { sig.check(); });
      store::VmConfig cfg{o.name, boot.vcpus, boot.memory_mib, boot.kernel, p.rootfs, ""};
      if (!o.image.empty()) {
        say("attaching image " + o.image);
        core::attach_image(ctx, o.image, p, o.disk_bytes);
        cfg.image_disk = p.image_disk;
      }
      if (!gvisor) {
        store::save_vm_config(p.config, cfg);
        try {
          boot_and_snapshot(ctx, hc, p, cfg, o.name, o.run, sig, say);
        } catch (Error& e) {
          throw Error(std::string(e.what()) + launch::log_tails(p), e.err(), e.hint());
        }
      }
      for (const auto& leftover : {p.config, p.state, p.console_log, p.vmm_log, p.lock})
        if (::unlink(leftover.c_str()) != 0 && errno != ENOENT) throw_errno("remove " + leftover);

      core::TemplateMeta m = built_meta(o.name, gvisor, boot);
      fs::write_file_atomic(core::template_meta_path(p.dir), core::template_meta_to_toml(m), 0644);
      if (::syncfs(held.get()) != 0) throw_errno("sync " + p.dir);
      store::btrfs::set_read_only(p.dir, true);
      sig.check();
      image::install_build(p.dir, dest, "template", o.name, o.force);
      say("done: template " + o.name);
      return m;
    } catch (...) {
      try {
        fs::remove_tree(p.run_dir);
        store::remove_store_tree(p.dir);
      } catch (const Error& cleanup) {
        log::error("template build " + o.name + ": cleanup failed: " + cleanup.what());
      }
      throw;
    }
  } catch (Error& e) {
    e.add_context("build template " + o.name);
    throw;
  }
}

void export_template(const store::Context& ctx, const std::string& name, const std::string& dir) {
  try {
    core::TemplateInfo t = core::inspect_template(ctx, name);
    std::string src = store::template_dir(ctx.root, name);
    std::string dest = fs::absolute(dir);
    if (fs::exists(dest)) fail(dest + " already exists", "name a directory that does not exist");
    std::string tmp = dest + std::string(image::kBuildMarker) + store::generate_id().substr(0, 8);
    if (::mkdir(tmp.c_str(), 0700) != 0) throw_errno("create " + tmp);
    try {
      for (const char* f : kTemplateDataFiles) fs::copy_file(src + "/" + f, tmp + "/" + f, 0600);
      for (const char* f : kTemplateImageFiles)
        if (fs::exists(src + "/" + f)) fs::copy_file(src + "/" + f, tmp + "/" + f, 0600);
      fs::copy_file(core::template_meta_path(src), core::template_meta_path(tmp), 0644);
      Fd d(::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!d || ::syncfs(d.get()) != 0) throw_errno("sync " + tmp);
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) != 0)
        throw_errno("rename " + tmp + " to " + dest);
    } catch (...) {
      fs::remove_tree(tmp);
      throw;
    }
  } catch (Error& e) {
    e.add_context("export template " + name);
    throw;
  }
}

core::TemplateMeta import_template(const store::Context& ctx, const std::string& name,
                                   const std::string& dir, bool force) {
  proc::SignalGuard sig;
  try {
    const std::string dest = store::template_dir(ctx.root, name);  // validates the name first
    std::string src = fs::absolute(dir);
    core::TemplateMeta m = core::read_template_meta(src);
    m.name = name;
    core::check_restorable(m, name);
    auto check_file = [&](const char* f) {
      struct stat st;
      std::string path = src + "/" + f;
      if (::lstat(path.c_str(), &st) != 0) throw_errno("stat " + path);
      if (!S_ISREG(st.st_mode))
        fail(path + " is not a regular file", "import a directory written by 'template export'");
    };
    for (const char* f : kTemplateDataFiles) check_file(f);
    const bool with_image = fs::exists(src + "/" + kTemplateImageFiles[0]) ||
                            fs::exists(src + "/" + kTemplateImageFiles[1]);
    if (with_image)
      for (const char* f : kTemplateImageFiles) check_file(f);
    vmm::snapshot::read_vmstate(src + "/vmstate");  // throws on a corrupt or foreign snapshot

    store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Create);
    core::sweep_dead_template_builds(sp);
    if (!force && fs::exists(dest))
      fail("template " + name + " already exists",
           "pass --force to replace it, or remove it with 'space template rm " + name + "'");
    std::string build = image::build_dir_for(sp.templates, name);
    store::btrfs::create_subvolume(build);
    try {
      Fd held = image::lock_dir(build);
      if (!held) fail("lock " + build + ": already locked");
      for (const char* f : kTemplateDataFiles)
        fs::copy_file(src + "/" + f, build + "/" + f, 0600, [&] { sig.check(); });
      if (with_image)
        for (const char* f : kTemplateImageFiles)
          fs::copy_file(src + "/" + f, build + "/" + f, 0600, [&] { sig.check(); });
      fs::write_file_atomic(core::template_meta_path(build), core::template_meta_to_toml(m), 0644);
      if (::syncfs(held.get()) != 0) throw_errno("sync " + build);
      store::btrfs::set_read_only(build, true);
      sig.check();
      image::install_build(build, dest, "template", name, force);
      return m;
    } catch (...) {
      try {
        store::remove_store_tree(build);
      } catch (const Error& cleanup) {
        log::error("template import " + name + ": cleanup failed: " + cleanup.what());
      }
      throw;
    }
  } catch (Error& e) {
    e.add_context("import template " + name + " from " + dir);
    throw;
  }
}

}  // namespace space::ops

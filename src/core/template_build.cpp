// `template build`: boot a VM in a fresh hidden subvolume, wait for guest-init, have the VMM
// snapshot it into the same subvolume, stop it, drop the build's leftovers (config.json, logs),
// write template.toml, make the subvolume read-only and rename it into place, atomically:
// renameat2(RENAME_NOREPLACE) for a new name, RENAME_EXCHANGE with --force (then the old one is
// deleted). Any failure or signal before that deletes the subvolume, so there is never a half
// template. The VMM's sockets go to <run base>/.template-<rand>, which no sandbox id can name.
// If the build itself is killed (SIGKILL), the next build (or template list) finds its directory
// unlocked, kills the VMM its state.json names and deletes the rest. `template import` installs an
// exported template the same way (hidden subvolume, then rename); `template export` copies one out.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/agent_client.h"
#include "core/control_client.h"
#include "core/exec.h"
#include "core/exec_bridge.h"
#include "core/image_use.h"
#include "core/launcher.h"
#include "core/sandbox.h"
#include "core/staging.h"
#include "core/take_snapshot.h"
#include "core/template.h"
#include "store/btrfs.h"
#include "store/paths.h"
#include "store/state.h"
#include "store/store.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "vmm/snapshot.h"

#ifndef SPACE_VERSION
#define SPACE_VERSION "unknown"
#endif

namespace space::core {

namespace {

std::string build_run_dir(const std::string& rand) {
  return store::run_base() + "/.template-" + rand;
}

// The VMM's part: boot, wait for guest-init, snapshot into p.dir, stop. Returns once it exited.
// Runs `cmd` with sh -c in the build's VM (inside its image, with the image's config), its
// output on our stderr; throws unless it exits 0.
void run_in_build(const store::SandboxPaths& p, const std::string& cmd, proc::SignalGuard& sig) {
  ExecOptions o;
  o.argv = {"/bin/sh", "-c", cmd};
  if (auto image = attached_image(p)) {
    apply_image_config(image->config, o);
    o.image = true;
  }
  auto dl = net::Deadline::after_ms(10'000);
  dl.cancel_on(sig.fd());
  Fd sock = vsock_dial(p.vsock_sock, proto::kAgentPort, dl);
  ExecResult r = exec_on_connection(sock.get(), o, StdioFds{0, 2, 2}, sig);
  if (r.exit_code == 0) return;
  std::string why = describe_exit(r, o);
  fail("--run \"" + cmd + "\" exited with status " + std::to_string(r.exit_code) +
           (why.empty() ? "" : " (" + why + ")"),
       "fix the command; its output is above");
}

void boot_and_snapshot(const store::Context& ctx, const store::HostConfig& hc,
                       const store::SandboxPaths& p, const store::VmConfig& cfg,
                       const std::string& name, const std::string& run, proc::SignalGuard& sig,
                       const std::function<void(const std::string&)>& say) {
  int timeout_s = boot_timeout_seconds();
  say("booting the VM (about a minute)");
  // Jailed like every VMM, without a cgroup of its own (it lives for the build only).
  VmmLaunch launch = launch_vmm(ctx, hc, p, name, VmmMode{"", true},
                                JailRequest{"template:" + name, "", cfg.vcpus, cfg.memory_mib});
  store::SandboxState st;  // names the VMM, so that a later build can kill it if we die (SIGKILL)
  st.id = name;
  st.status = store::Status::Creating;
  st.pid = launch.child.pid();
  st.pid_start_time = proc::start_time(st.pid).value_or(0);
  st.created = store::rfc3339_now();
  store::write_state(p.state, st, fs::Sync::Volatile);
  wait_started(launch.child, launch.ready, p, /*guest=*/true, sig, timeout_s);
  sig.check();
  if (!run.empty()) {
    say("running: " + run);
    run_in_build(p, run, sig);
  }
  say("snapshotting");
  pid_t vmm = launch.uid ? served_by(p.control_sock) : launch.child.pid();
  auto snap = take_snapshot(p, vmm, launch.uid, p.dir, timeout_s * 1000);
  log::debug("template " + name + ": snapshot of " + std::to_string(snap.vmstate_bytes) +
             " bytes of vmstate, " + std::to_string(snap.memory_data_bytes >> 10) +
             " KiB of memory data");
  control_call(p.control_sock, proto::control::StopRequest{}, 5000);
  pollfd exited{launch.child.pidfd(), POLLIN, 0};
  if (::poll(&exited, 1, 10000) <= 0)
    log::warn("template " + name + ": the VMM did not stop; killing it");
  launch.child = proc::Child();  // reaps it (killing it first if it still runs)
  fs::remove_tree(p.run_dir);
}

}  // namespace

// Deletes the working directories of template builds that died, with their run directories,
// after killing a VMM that outlived its build (its state.json names it).
void sweep_dead_template_builds(const store::StorePaths& sp) {
  sweep_dead_builds(sp.templates, "template", [](const std::string& dir) {
    auto mark = dir.rfind(kBuildMarker);
    store::SandboxPaths p =
        store::paths_in(dir, build_run_dir(dir.substr(mark + kBuildMarker.size())));
    if (fs::exists(p.state)) stop_vmm(store::read_state(p.state), p, 0);
    fs::remove_tree(p.run_dir);
  });
}

TemplateMeta build_template(const store::Context& ctx, const TemplateBuildOptions& o) {
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  proc::SignalGuard sig;
  try {
    store::validate_id(o.name, "template name");
    store::HostConfig hc = store::load_host_config(ctx.root);
    BootSpec boot = resolve_boot_spec(hc, o.vcpus, o.memory_mib, o.kernel, o.rootfs);
    store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Create);
    sweep_dead_template_builds(sp);
    std::string dest = sp.templates + "/" + o.name;
    if (!o.force && fs::exists(dest))
      fail("template " + o.name + " already exists",
           "pass --force to replace it, or remove it with 'space template rm " + o.name + "'");

    std::string build = build_dir_for(sp.templates, o.name);
    store::SandboxPaths p = store::paths_in(
        build, build_run_dir(build.substr(build.rfind(kBuildMarker) + kBuildMarker.size())));
    check_socket_paths(p);
    store::btrfs::create_subvolume(p.dir);
    try {
      Fd held = lock_dir(p.dir);  // marks the build as alive for sweep_dead_builds
      if (!held) fail("lock " + p.dir + ": already locked");
      say("copying the root filesystem " + boot.rootfs_image);
      fs::copy_file(boot.rootfs_image, p.rootfs, 0600, [&] { sig.check(); });
      store::VmConfig cfg{o.name, boot.vcpus, boot.memory_mib, boot.kernel, p.rootfs, ""};
      if (!o.image.empty()) {
        say("attaching image " + o.image);
        attach_image(ctx, o.image, p, o.disk_bytes);
        cfg.image_disk = p.image_disk;
      }
      store::save_vm_config(p.config, cfg);
      try {
        boot_and_snapshot(ctx, hc, p, cfg, o.name, o.run, sig, say);
      } catch (Error& e) {
        throw Error(std::string(e.what()) + log_tails(p), e.err(), e.hint());
      }
      for (const auto& leftover : {p.config, p.state, p.console_log, p.vmm_log, p.lock})
        if (::unlink(leftover.c_str()) != 0 && errno != ENOENT) throw_errno("remove " + leftover);

      TemplateMeta m;
      m.name = o.name;
      m.created = store::rfc3339_now();
      m.space_version = SPACE_VERSION;
      m.snapshot_format = vmm::snapshot::kFormatVersion;
      m.vcpus = boot.vcpus;
      m.memory_mib = boot.memory_mib;
      m.kernel = boot.kernel;
      m.rootfs = boot.rootfs_image;
      fs::write_file_atomic(template_meta_path(p.dir), template_meta_to_toml(m), 0644);
      if (::syncfs(held.get()) != 0) throw_errno("sync " + p.dir);
      store::btrfs::set_read_only(p.dir, true);
      sig.check();
      install_build(p.dir, dest, "template", o.name, o.force);
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
    TemplateInfo t = inspect_template(ctx, name);
    std::string src = template_dir(ctx.root, name);
    std::string dest = fs::absolute(dir);
    if (fs::exists(dest)) fail(dest + " already exists", "name a directory that does not exist");
    std::string tmp = dest + std::string(kBuildMarker) + store::generate_id().substr(0, 8);
    if (::mkdir(tmp.c_str(), 0700) != 0) throw_errno("create " + tmp);
    try {
      for (const char* f : kTemplateDataFiles) fs::copy_file(src + "/" + f, tmp + "/" + f, 0600);
      for (const char* f : kTemplateImageFiles)
        if (fs::exists(src + "/" + f)) fs::copy_file(src + "/" + f, tmp + "/" + f, 0600);
      fs::copy_file(template_meta_path(src), template_meta_path(tmp), 0644);
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

TemplateMeta import_template(const store::Context& ctx, const std::string& name,
                             const std::string& dir, bool force) {
  proc::SignalGuard sig;
  try {
    store::validate_id(name, "template name");
    std::string src = fs::absolute(dir);
    TemplateMeta m = read_template_meta(src);
    m.name = name;
    check_restorable(m, name);
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
    sweep_dead_template_builds(sp);
    std::string dest = sp.templates + "/" + name;
    if (!force && fs::exists(dest))
      fail("template " + name + " already exists",
           "pass --force to replace it, or remove it with 'space template rm " + name + "'");
    std::string build = build_dir_for(sp.templates, name);
    store::btrfs::create_subvolume(build);
    try {
      Fd held = lock_dir(build);
      if (!held) fail("lock " + build + ": already locked");
      for (const char* f : kTemplateDataFiles)
        fs::copy_file(src + "/" + f, build + "/" + f, 0600, [&] { sig.check(); });
      if (with_image)
        for (const char* f : kTemplateImageFiles)
          fs::copy_file(src + "/" + f, build + "/" + f, 0600, [&] { sig.check(); });
      fs::write_file_atomic(template_meta_path(build), template_meta_to_toml(m), 0644);
      if (::syncfs(held.get()) != 0) throw_errno("sync " + build);
      store::btrfs::set_read_only(build, true);
      sig.check();
      install_build(build, dest, "template", name, force);
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

}  // namespace space::core

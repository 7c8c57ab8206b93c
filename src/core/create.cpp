// `create`: make a sandbox directory, start its VMM, wait for guest-init. The order is chosen so
// that every step after the mkdir is undone by one catch block: kill the VMM (our child, so its
// pid cannot have been reused), then remove the run and sandbox directories.
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "core/config.h"
#include "core/launcher.h"
#include "core/sandbox.h"
#include "core/vm_config.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "vmm/host.h"

namespace space::core {

namespace {

struct Resolved {
  uint32_t vcpus, memory_mib;
  std::string kernel, rootfs_image;
  int boot_timeout_s;
};

void require_file(const std::string& what, const std::string& path, const std::string& flag) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(what + " " + path + ": " + std::strerror(errno), errno,
                "run scripts/install.sh or pass " + flag);
  if (!S_ISREG(st.st_mode)) fail(what + " " + path + ": not a regular file", "pass " + flag);
}

Resolved resolve(const Context& ctx, const CreateOptions& o) {
  HostConfig hc = load_host_config(ctx.root);
  Resolved r;
  r.vcpus = o.vcpus.value_or(hc.cpus.value_or(1));
  r.memory_mib = o.memory_mib.value_or(hc.memory_mib.value_or(256));
  if (r.vcpus < 1 || r.vcpus > kMaxCpus)
    fail("--cpus " + std::to_string(r.vcpus) + ": out of range 1.." + std::to_string(kMaxCpus));
  if (r.memory_mib < kMinMemoryMib || r.memory_mib > kMaxMemoryMib)
    fail("--memory " + std::to_string(r.memory_mib) + ": out of range " +
         std::to_string(kMinMemoryMib) + ".." + std::to_string(kMaxMemoryMib) + " MiB");
  r.boot_timeout_s = boot_timeout_seconds();
  r.kernel = resolve_kernel(hc, o.kernel);
  r.rootfs_image = resolve_rootfs(hc, o.rootfs);
  require_file("kernel", r.kernel, "--kernel");
  require_file("rootfs image", r.rootfs_image, "--rootfs");
  if (r.vcpus > 1 && detect_host() == HostKind::Pvm)
    log::warn("this is a PVM host, where guests with more than 1 vCPU do not boot yet");
  return r;
}

// The console and VMM log tails, appended to a failed create's message before they are deleted.
std::string log_tails(const SandboxPaths& p) {
  std::string out;
  if (std::string t = fs::tail_lines(p.vmm_log, 10); !t.empty())
    out += "\n--- vmm.log (last lines) ---\n" + t;
  if (std::string t = fs::tail_lines(p.console_log, 20); !t.empty())
    out += "\n--- console.log (last 20 lines) ---\n" + t;
  return out;
}

// Turns a cancelled wait into the reason: a signal, or the VMM's exit.
[[noreturn]] void explain_cancel(const net::Cancelled& c, proc::SignalGuard& sig, proc::Child& vmm) {
  if (c.fd() == sig.fd()) {
    sig.check();
    fail("interrupted");
  }
  if (vmm.exited())
    fail("the VMM " + proc::describe_status(vmm.status()) + " before the guest was ready");
  fail("the VMM exited before the guest was ready");
}

void boot(const Context& ctx, const SandboxPaths& p, SandboxState& st, const Resolved& r,
          proc::SignalGuard& sig, std::optional<proc::Child>& vmm) {
  fs::copy_file(r.rootfs_image, p.rootfs, 0600, [&] { sig.check(); });
  save_vm_config(p.config, VmConfig{st.id, r.vcpus, r.memory_mib, r.kernel, p.rootfs, ""});

  fs::remove_tree(p.run_dir);  // a stale one from a sandbox of the same name that crashed
  fs::mkdir_p(run_base(), 0700);
  if (::mkdir(p.run_dir.c_str(), 0700) != 0) throw_errno("mkdir " + p.run_dir);

  VmmLaunch launch = spawn_vmm(ctx, p, st.id);
  vmm.emplace(std::move(launch.child));
  st.pid = vmm->pid();
  st.pid_start_time = proc::start_time(st.pid).value_or(0);
  write_state(p.state, st);  // "creating" with the pid: destroy can find the VMM if we crash

  auto dl = net::Deadline::after_ms(int64_t{r.boot_timeout_s} * 1000);
  dl.cancel_on(sig.fd());
  try {
    wait_vmm_ready(launch.ready, dl);
    log::debug("VMM " + std::to_string(st.pid) + " is running; waiting for guest-init");
    dl.cancel_on(vmm->pidfd());
    wait_guest_ready(p, dl);
  } catch (const net::Cancelled& c) {
    explain_cancel(c, sig, *vmm);
  } catch (Error& e) {
    if (dl.expired()) e.add_context("boot timeout (" + std::to_string(r.boot_timeout_s) + " s)");
    throw;
  }
  st.status = "running";
  write_state(p.state, st);
}

}  // namespace

SandboxState create_sandbox(const Context& ctx, const CreateOptions& opts) {
  proc::SignalGuard sig;  // outermost: cleanup below runs before a signal can end the process
  std::string id = opts.id.empty() ? generate_id() : opts.id;
  validate_id(id);
  SandboxPaths p = sandbox_paths(ctx.root, id);
  try {
    // The VMM binds <run_dir>/vsock.sock_<port> (port up to 10 digits); sun_path needs a NUL.
    if (p.vsock_sock.size() + 11 >= sizeof(sockaddr_un{}.sun_path))
      fail("socket paths under " + p.run_dir + " would be too long",
           "set SPACE_RUN_DIR to a shorter directory");
    Resolved r = resolve(ctx, opts);
    fs::mkdir_p(sandboxes_dir(ctx.root), 0700);
    if (::mkdir(p.dir.c_str(), 0700) != 0) {
      if (errno == EEXIST) fail("already exists", "space destroy " + id);
      throw_errno("mkdir " + p.dir);
    }
    SandboxState st;
    st.id = id;
    st.status = "creating";
    st.created = rfc3339_now();
    st.vcpus = r.vcpus;
    st.memory_mib = r.memory_mib;
    std::optional<proc::Child> vmm;
    auto undo = [&] {
      vmm.reset();  // SIGKILL + reap
      try {
        fs::remove_tree(p.run_dir);
        fs::remove_tree(p.dir);
      } catch (const Error& cleanup) {
        log::error("create " + id + ": cleanup failed: " + cleanup.what());
      }
    };
    try {
      SandboxLock lock(p.lock);
      boot(ctx, p, st, r, sig, vmm);
      vmm->release();  // the sandbox is running: the VMM outlives us
      return st;
    } catch (Error& e) {
      vmm.reset();
      std::string tails = log_tails(p);  // read them before they are deleted
      undo();
      throw Error(std::string(e.what()) + tails, e.err(), e.hint());
    } catch (...) {
      undo();
      throw;
    }
  } catch (Error& e) {
    e.add_context("create sandbox " + id);
    throw;
  }
}

}  // namespace space::core

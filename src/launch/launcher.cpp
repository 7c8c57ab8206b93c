// VMM start-up and readiness; see launcher.h.
#include "launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "agent/client.h"
#include "jail/init.h"
#include "jail/seccomp_prebuilt.h"
#include "proto/vmm_args.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::launch {

namespace {

void require_file(const std::string& what, const std::string& path, const std::string& flag) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(what + " " + path + ": " + std::strerror(errno), errno,
                "run scripts/install.sh or pass " + flag);
  if (!S_ISREG(st.st_mode)) fail(what + " " + path + ": not a regular file", "pass " + flag);
}

// Turns a cancelled wait into the reason: a signal, or the VMM's exit.
[[noreturn]] void explain_cancel(const net::Cancelled& c, proc::SignalGuard& sig,
                                 proc::Child& vmm) {
  if (c.fd() == sig.fd()) {
    sig.check();
    fail("interrupted");
  }
  if (vmm.exited())
    fail("the VMM " + proc::describe_status(vmm.status()) + " before the guest was ready");
  fail("the VMM exited before the guest was ready");
}

// How the VMM ended, once it has (it is given a second): "" while it runs. A jailed VMM's status
// is its jail init's, which exits with the VMM's (jail/init.h).
std::string how_vmm_ended(proc::Child& vmm, std::string* hint) {
  pollfd pf{vmm.pidfd(), POLLIN, 0};
  if (::poll(&pf, 1, 1000) <= 0 || !vmm.exited()) return "";
  int st = vmm.status();
  bool sigsys = (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) ||
                (WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGSYS);
  if (sigsys) {
    *hint =
        "the kernel log names the call (dmesg: audit type=1326 ... syscall=N); "
        "SPACE_SECCOMP=log lets it through and logs it instead, to find every such call";
    return "the VMM was killed by its seccomp filter: it made a system call its jail does not "
           "allow";
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) > 128)
    return "the VMM was killed by signal " + std::to_string(WEXITSTATUS(st) - 128) + " (" +
           proc::signal_name(WEXITSTATUS(st) - 128) + ")";
  return "the VMM " + proc::describe_status(st);
}

}  // namespace

namespace {

BootSpec resolve_size(const store::HostConfig& hc, std::optional<uint32_t> vcpus,
                      std::optional<uint32_t> memory_mib) {
  BootSpec b;
  b.vcpus = vcpus.value_or(hc.cpus.value_or(1));
  b.memory_mib = memory_mib.value_or(hc.memory_mib.value_or(256));
  if (b.vcpus < 1 || b.vcpus > store::kMaxCpus)
    fail("--cpus " + std::to_string(b.vcpus) + ": out of range 1.." +
         std::to_string(store::kMaxCpus));
  if (b.memory_mib < store::kMinMemoryMib || b.memory_mib > store::kMaxMemoryMib)
    fail("--memory " + std::to_string(b.memory_mib) + ": out of range " +
         std::to_string(store::kMinMemoryMib) + ".." + std::to_string(store::kMaxMemoryMib) +
         " MiB");
  return b;
}

}  // namespace

BootSpec resolve_boot_spec(const store::HostConfig& hc, std::optional<uint32_t> vcpus,
                           std::optional<uint32_t> memory_mib, const std::string& kernel_flag,
                           const std::string& rootfs_flag) {
  BootSpec b = resolve_size(hc, vcpus, memory_mib);
  b.kernel = store::resolve_kernel(hc, kernel_flag);
  b.rootfs_image = store::resolve_rootfs(hc, rootfs_flag);
  require_file("kernel", b.kernel, "--kernel");
  require_file("rootfs image", b.rootfs_image, "--rootfs");
  return b;
}

BootSpec resolve_gvisor_spec(const store::HostConfig& hc, std::optional<uint32_t> vcpus,
                             std::optional<uint32_t> memory_mib, const std::string& rootfs_flag) {
  BootSpec b = resolve_size(hc, vcpus, memory_mib);
  b.rootfs_image = store::resolve_rootfs(hc, rootfs_flag);
  require_file("rootfs image", b.rootfs_image, "--rootfs");
  return b;
}

void check_socket_paths(const store::SandboxPaths& p) {
  // The VMM binds <run_dir>/vsock.sock_<port> (port up to 10 digits); sun_path needs a NUL.
  if (p.vsock_sock.size() + 11 >= sizeof(sockaddr_un{}.sun_path))
    fail("socket paths under " + p.run_dir + " would be too long",
         "set SPACE_RUN_DIR to a shorter directory");
}

void make_run_dir(const store::SandboxPaths& p, gid_t gid) {
  fs::remove_tree(p.run_dir);
  const std::string base = store::run_base();
  fs::ensure_private_dir(base, 0700);
  if (::mkdir(p.run_dir.c_str(), 0700) != 0) throw_errno("mkdir " + p.run_dir);
  if (gid == 0) return;
  // A branch child works in its run directory through a descriptor, from which ".." climbs out
  // of its jail: only as far as this directory, if no one else may search it.
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0) throw_errno("stat " + base);
  if (st.st_mode & (S_IXGRP | S_IXOTH)) {
    char m[8];
    std::snprintf(m, sizeof m, "%04o", st.st_mode & 07777);
    fail(base + " may be searched by others (mode " + m +
             "): a jailed VMM could reach the host's files through it",
         "chmod 0700 " + base);
  }
  if (::chown(p.run_dir.c_str(), 0, gid) != 0) throw_errno("chown " + p.run_dir);
  if (::chmod(p.run_dir.c_str(), 0710) != 0) throw_errno("chmod " + p.run_dir);
}

namespace {

// The VMM's launch arguments (proto/vmm_args.h) for `mode`, the jail's left out.
proto::VmmArgs vmm_args_for(const store::SandboxPaths& p, const std::string& id,
                            const VmmMode& mode) {
  proto::VmmArgs a;
  a.id = id;
  a.ready_fd = 3;
  a.restore_dir = mode.restore_dir;
  a.shared_memory_dir = mode.shared_memory_dir;
  if (mode.explicit_paths) {
    a.dir = p.dir;
    a.run_dir = p.run_dir;
  }
  a.probe = mode.probe;
  if (mode.expires_at) {
    a.expires_at = mode.expires_at;
    a.on_expiry = mode.on_expiry;
  }
  return a;
}

// What a jailed launch holds until the VMM is spawned: the plan its init (a clone of this process)
// reads, the init's filter and title, and the pipe on which the init says the VMM is placed.
struct JailedLaunch {
  jail::Program init_filter;
  jail::InitPlan plan;
  std::vector<std::string> title;
  std::optional<Pipe> placed;
};

// Jailed: a new PID namespace whose PID 1, cloned from us, starts the VMM as PID 2 and then
// serves as the jail's init (jail/init.h), with fds of its own after the VMM's (the ready pipe,
// the shared network namespace, the read end of the "placed" pipe): the claim and the placed
// pipe's write end. The plan is made here: the clone only reads its copy. The init makes the
// cgroups while the VMM starts, which waits for them before it maps guest memory.
void plan_jailed_launch(const store::HostConfig& hc, const VmmJail& jail, const JailRequest& jr,
                        const store::SandboxPaths& p, const std::string& root, proto::VmmArgs& args,
                        proc::SpawnOptions& o, JailedLaunch& jl) {
  args.jail_uid = jail.uid;
  args.jail_netns_fd = 3 + static_cast<int>(o.fds.size());
  o.fds.push_back(jail.network.get());
  args.jail_mntns_fd = 3 + static_cast<int>(o.fds.size());
  o.fds.push_back(jail.mount_base.get());
  if (!jail.cgroup.empty()) {
    jl.placed = Pipe::make();
    args.jail_placed_fd = 3 + static_cast<int>(o.fds.size());
    o.fds.push_back(jl.placed->read.get());
  }
  const size_t vmm_fds = o.fds.size();
  const jail::Unlisted unlisted = jail::unlisted_from_env();
  if (unlisted == jail::Unlisted::Log) log::warn(jail::kSeccompLogWarning);
  jl.init_filter = jail::program(jail::Role::Init, unlisted);
  int next = 3 + static_cast<int>(o.fds.size());
  jail::InitPlan& plan = jl.plan;
  plan.who = {jail.uid, static_cast<gid_t>(jail.uid)};
  plan.uid_lock_fd = next++;
  o.fds.push_back(jail.uid_lock.get());
  plan.mount_base_fd = next++;
  o.fds.push_back(jail.mount_base.get());
  if (jl.placed) {
    plan.placed_fd = next++;
    o.fds.push_back(jl.placed->write.get());
  }
  plan.root_dir = p.run_dir;
  plan.hostname = args.id;
  plan.filter = &jl.init_filter;
  o.init_fds = o.fds.size() - vmm_fds;
  o.new_pid_namespace = true;
  // What ps shows for it, and its environment: a copy of the CLI would otherwise read
  // "space create ID" for as long as the sandbox lives, and keep the caller's environment
  // (a CI job's tokens, say), which no daemon gets.
  jl.title = {"space", "--root", root, "__jail-init", args.id};
  const std::vector<std::string>& init_env = *o.env;
  o.init = [&jl, &init_env, &hc, &jail, &jr](pid_t vmm, int first_fd) {
    jail::InitPlan& plan = jl.plan;
    if (first_fd != plan.uid_lock_fd) ::_exit(127);  // not the fds planned: start nothing
    if (int err = proc::set_process_strings(jl.title, init_env))
      log::warn(std::string("jail init: cannot set its command line and environment: ") +
                std::strerror(err));
    JailGroups groups;
    try {
      groups = make_jail_groups(hc, jail, jr.vcpus, jr.memory_mib);
    } catch (const std::exception& e) {
      // The VMM fails its start with this; our caller removes what was made.
      const auto* err = dynamic_cast<const Error*>(&e);
      std::string why = e.what();
      if (err && !err->hint().empty()) why += " (" + err->hint() + ")";
      jail::refuse_placement(vmm, plan, why);
    }
    for (Fd& fd : groups.procs) plan.program_procs.push_back(fd.release());
    for (Fd& fd : groups.init_procs) plan.own_procs.push_back(fd.release());
    jail::run_init(vmm, plan);
  };
}

}  // namespace

VmmLaunch launch_vmm(const store::Context& ctx, const store::HostConfig& hc,
                     const store::SandboxPaths& p, const std::string& id, const VmmMode& mode,
                     const JailRequest& jr) {
  VmmJail jail = prepare_jail(hc, jr.key, jr.cgroup_id);
  try {
    check_socket_paths(p);
    make_run_dir(p, jail.uid);
    Pipe pipe = Pipe::make();
    const std::string root = fs::absolute(ctx.root);
    proto::VmmArgs args = vmm_args_for(p, id, mode);
    proc::SpawnOptions o;
    o.fds.push_back(pipe.write.get());  // the VMM's fd 3, args.ready_fd
    o.env = env::daemon_environment();
    // The VMM formats times in UTC itself (util/utc.h); with TZ set, a library call that wants
    // the zone parses this string instead of opening /etc/localtime (which a jailed VMM cannot).
    o.env->push_back("TZ=UTC0");
    JailedLaunch jl;
    if (jail.uid) plan_jailed_launch(hc, jail, jr, p, root, args, o, jl);
    std::vector<std::string> argv = {"/proc/self/exe", "--root",      root,
                                     "--log-level",    ctx.log_level, "--log-format",
                                     ctx.log_format,   "__vmm"};
    for (std::string& a : proto::encode_vmm_args(args)) argv.push_back(std::move(a));
    proc::Child child = proc::spawn_detached(argv, p.vmm_log, o);
    pipe.write.reset();  // now only the VMM holds it: EOF means the VMM is gone
    jl.placed.reset();   // only the init may end the VMM's wait for its cgroups
    set_nonblocking(pipe.read.get());
    return VmmLaunch{std::move(child), std::move(pipe.read), jail.uid, jail.cgroup};
  } catch (...) {
    remove_sandbox_cgroup(jail.cgroup);
    throw;
  }
}

pid_t served_by(const std::string& control_sock) {
  Fd fd = net::unix_connect(control_sock, net::Deadline::after_ms(5000));
  long pid = net::peer_pid(fd.get());
  if (pid <= 0) fail("cannot tell which process serves " + control_sock);
  return static_cast<pid_t>(pid);
}

void wait_started(proc::Child& vmm, const Fd& ready, const store::SandboxPaths& p, bool guest,
                  proc::SignalGuard& sig, int timeout_s, const std::string& who) {
  auto dl = net::Deadline::after_ms(int64_t{timeout_s} * 1000);
  dl.cancel_on(sig.fd());
  try {
    wait_vmm_ready(ready, dl, who);
    if (!guest) return;
    log::debug("VMM " + std::to_string(vmm.pid()) + " is running; waiting for guest-init");
    dl.cancel_on(vmm.pidfd());
    wait_guest_ready(p, dl);
  } catch (const net::Cancelled& c) {
    explain_cancel(c, sig, vmm);
  } catch (Error& e) {
    if (dl.expired()) e.add_context("boot timeout (" + std::to_string(timeout_s) + " s)");
    std::string hint;
    if (std::string how = how_vmm_ended(vmm, &hint); !how.empty()) {
      Error better(std::string(e.what()) + ": " + how, e.err(), hint.empty() ? e.hint() : hint);
      throw better;
    }
    throw;
  }
}

void wait_vmm_ready(const Fd& ready, const net::Deadline& dl, const std::string& who) {
  std::optional<std::string> line;
  try {
    line = net::read_line(ready.get(), dl, 4096);
  } catch (const net::Cancelled&) {
    throw;
  } catch (Error& e) {
    if (e.err() == ETIMEDOUT) fail(who + " did not report ready in time");
    throw;
  }
  if (!line) fail(who + " exited before the sandbox started");
  if (*line == "ok") return;
  if (line->rfind("error: ", 0) == 0) fail(who + " failed: " + line->substr(7));
  fail(who + " sent an unexpected ready line: \"" + *line + "\"");
}

proto::HelloReply wait_guest_ready(const store::SandboxPaths& p, const net::Deadline& dl) {
  std::string last = "no attempt made";
  // A guest with an image mounts it before answering, so that the VM is ready to exec in it.
  const uint32_t flags = fs::exists(p.image_meta) ? proto::Hello::kImage : 0;
  for (int attempt = 1;; attempt++) {
    try {
      Fd fd = agent::vsock_dial(p.vsock_sock, proto::kAgentPort, dl);
      auto reply = agent::agent_hello(fd.get(), dl, flags);
      log::debug("guest-init answered after " + std::to_string(attempt) +
                 " attempts: " + reply.agent);
      return reply;
    } catch (const net::Cancelled&) {
      throw;
    } catch (const Error& e) {
      // Errors with an errno are transport-level (nobody listening yet, socket not created yet,
      // timeout); errors without one are protocol failures that retrying cannot fix.
      if (e.err() == 0) throw;
      if (e.err() != ETIMEDOUT) last = e.what();
    }
    if (dl.expired())
      fail("guest-init did not answer before the deadline (last attempt: " + last + ")",
           "raise SPACE_BOOT_TIMEOUT, or see the console log above for where the boot stopped");
    net::sleep_ms(100, dl);
  }
}

std::string log_tails(const store::SandboxPaths& p) {
  std::string out;
  if (std::string t = fs::tail_lines(p.vmm_log, 10); !t.empty())
    out += "\n--- vmm.log (last lines) ---\n" + t;
  if (std::string t = fs::tail_lines(p.console_log, 20); !t.empty())
    out += "\n--- console.log (last 20 lines) ---\n" + t;
  return out;
}

int boot_timeout_seconds() {
  return env::seconds("SPACE_BOOT_TIMEOUT", 300);
}

}  // namespace space::launch

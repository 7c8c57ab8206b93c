// A container's shim; see shim.h.
#include "oci/shim.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "core/sandbox.h"
#include "oci/mount_stage.h"
#include "store/paths.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/procfs.h"
#include "util/socket.h"
#include "util/utc.h"

namespace space::oci {

namespace {

// The shim's wait for `start`: a connection on shim.sock saying "start". A forwarded signal
// first ends the container as that signal would have (128+N). Returns 0 to go on, else the code.
int wait_for_start(const Runtime& rt, const ContainerRecord& r, const net::Listener& l) {
  std::vector<int> sigs = forwarded_signals();
  proc::SignalGuard sig(sigs);
  for (;;) {
    pollfd p[2] = {{l.fd.get(), POLLIN, 0}, {sig.fd(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }
    if (p[1].revents) {
      int s = sig.take();
      if (s == SIGCONT || s == 0) continue;
      return 128 + s;
    }
    if (!p[0].revents) continue;
    Fd c(::accept4(l.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) continue;
    if (!net::peer_trusted(c.get())) continue;
    auto line = net::read_line(c.get(), net::Deadline::after_ms(2000), 64);
    if (!line || *line != "start") continue;
    fs::write_file_atomic(started_path(rt, r.id), "", 0644, fs::Sync::Volatile);
    std::string ok = "ok\n";
    ::send(c.get(), ok.data(), ok.size(), MSG_NOSIGNAL);
    return 0;
  }
}

// What a pod's sandbox container does once started: nothing until a signal ends it, as the
// pause process does (SIGTERM and SIGINT end it with 0, any other signal it gets with 128 + it).
int pause_until_signal() {
  std::vector<int> sigs = forwarded_signals();
  proc::SignalGuard sig(sigs);
  for (;;) {
    pollfd p{sig.fd(), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) throw_errno("poll");
    int s = sig.take();
    if (s == 0 || s == SIGCONT) continue;
    return s == SIGTERM || s == SIGINT ? 0 : 128 + s;
  }
}

}  // namespace

const std::vector<int>& forwarded_signals() {
  static const std::vector<int> sigs = {SIGQUIT, SIGUSR1,   SIGUSR2, SIGALRM, SIGABRT,
                                        SIGTRAP, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
                                        SIGURG,  SIGSYS,    SIGPWR,  SIGIO,   SIGCONT};
  return sigs;
}

Fd console_for(const std::string& console_socket) {
  Fd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master) throw_errno("posix_openpt");
  if (::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0) throw_errno("unlockpt");
  char name[128];
  if (::ptsname_r(master.get(), name, sizeof name) != 0) throw_errno("ptsname");
  Fd slave(::open(name, O_RDWR | O_CLOEXEC));
  if (!slave) throw_errno(std::string("open ") + name);
  if (::ioctl(slave.get(), TIOCSCTTY, 0) != 0) throw_errno("TIOCSCTTY");
  try {
    auto dl = net::Deadline::after_ms(10000);
    Fd sock = net::unix_connect(console_socket, dl);
    int fds[1] = {master.get()};
    net::send_with_fds(sock.get(), name, fds, dl);
  } catch (Error& e) {
    e.add_context("send the console to --console-socket " + console_socket);
    throw;
  }
  return slave;
}

agent::ExecOptions exec_options(const ContainerRecord& r, const Process& p, bool tty) {
  agent::ExecOptions o;
  o.argv = p.args;
  o.env = p.env;
  o.cwd = p.cwd;
  o.uid = p.uid;
  o.gid = p.gid;
  o.groups = p.additional_gids;
  o.umask = p.umask;
  for (const auto& l : p.rlimits) o.rlimits.push_back({l.resource, l.soft, l.hard});
  o.interactive = true;  // the engine's stdin: a pipe, /dev/null or the pty
  o.tty = tty;
  o.hostname = r.hostname;
  o.forward_signals = forwarded_signals();
  return o;
}

int run_process(const Runtime& rt, const ContainerRecord& r, const agent::ExecOptions& o,
                const agent::StdioFds& io) {
  try {
    agent::ExecResult res = ops::exec_in_sandbox(rt.ctx, r.sandbox, o, io);
    std::string why = ops::describe_exit(res, o);
    if (!why.empty()) ::dprintf(io.err, "space-oci: %s\n", why.c_str());
    return res.exit_code;
  } catch (const std::exception& e) {
    ::dprintf(io.err, "space-oci: error: %s\n", e.what());
    return 255;
  }
}

std::string read_report(const Fd& ready) {
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(ready.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  while (!got.empty() && got.back() == '\n') got.pop_back();
  if (got == "ok") return "";
  if (got.starts_with("error: ")) return got.substr(7);
  return got.empty() ? "the container's shim exited during set-up" : got;
}

std::string net_policy_for(const Spec& spec) {
  auto a = spec.annotations.find("space.net");
  if (spec.netns_path.empty()) {
    if (a != spec.annotations.end() && a->second != "none")
      log::warn(
          "annotation space.net ignored: the bundle names no network namespace to leave "
          "from, so the container has no network (an engine's namespace, "
          "linux.namespaces' network path, carries its connections)");
    return "none";
  }
  return a != spec.annotations.end() ? a->second : "";
}

void detach_shim(int keep_fd) {
  ::setsid();
  (void)!::chdir("/");
  int keep[] = {0, 1, 2, keep_fd};
  close_all_but(keep, 4);
}

namespace {

// The container's record: its sandbox (none for a pod's sandbox container), bundle, root and
// this shim as its process.
ContainerRecord new_record(const CreateRequest& req, const Spec& spec, bool pod_sandbox) {
  ContainerRecord r;
  r.id = req.id;
  r.sandbox = pod_sandbox ? "" : sandbox_id_for(req.id);
  r.bundle = fs::absolute(req.bundle);
  r.rootfs = spec.root_path;
  r.hostname = spec.hostname;
  r.annotations = spec.annotations;
  r.created = utc::rfc3339(::time(nullptr));
  r.pid = ::getpid();
  r.pid_start_time = proc::start_time(r.pid).value_or(0);
  return r;
}

// The sandbox a bundle asks for, made through core's create transaction (all or nothing). The
// bind-mounted files and directories are staged under one directory mirroring their destinations
// (oci/mount_stage.h), so that one copy in the create puts them all in place.
void create_for_bundle(const Runtime& rt, const CreateRequest& req, const Spec& spec,
                       const RootfsImage& image, const std::string& sandbox) {
  core::CreateOptions co;
  co.id = sandbox;
  auto a = spec.annotations.find("space.template");
  if (a != spec.annotations.end()) co.template_name = a->second;
  co.net = net_policy_for(spec);
  co.image = image.name;
  co.netns_path = spec.netns_path;
  co.cpu_quota_us = spec.cpu_quota;
  co.cpu_period_us = spec.cpu_period;
  co.memory_limit_bytes = spec.memory_limit;
  const std::string stage = container_dir(rt, req.id) + "/mounts";
  if (stage_mounts(spec, stage).mounts > 0) co.copies.push_back({stage + "/.", "/", true});
  try {
    core::create_sandbox(rt.ctx, co);
  } catch (...) {
    fs::remove_tree(stage);
    throw;
  }
  fs::remove_tree(stage);
}

}  // namespace

[[noreturn]] void shim_main(const Runtime& rt, const CreateRequest& req, const Spec& spec,
                            const RootfsImage& image, Fd ready) {
  detach_shim(ready.get());
  // A Kubernetes pod's sandbox (pause) container runs no sandbox: the pause process only holds
  // the pod's namespaces, and a space sandbox joins none of them but the network namespace,
  // which the CRI names again in each application container's bundle (the broker leaves from
  // it). So this shim is the whole container: it waits for start, then for its end, as pause
  // does, and costs a process instead of a sandbox.
  const bool pod_sandbox = is_pod_sandbox(spec);
  ContainerRecord r = new_record(req, spec, pod_sandbox);
  int code = 0;
  bool made = false;
  try {
    Fd tty;
    if (spec.process.terminal) tty = console_for(req.console_socket);
    if (!pod_sandbox) {
      create_for_bundle(rt, req, spec, image, r.sandbox);
      made = true;
    }
    json::save_file(record_path(rt, req.id), record_json(r), 0644, fs::Sync::Volatile);
    net::Listener l = net::listen_at(shim_sock(rt, req.id), 4);
    daemon::report_ready(ready);
    code = wait_for_start(rt, r, l);
    net::unlink_if_ours(shim_sock(rt, req.id), l);
    if (code == 0 && pod_sandbox) {
      code = pause_until_signal();
    } else if (code == 0) {
      agent::StdioFds io;
      if (tty) io = {tty.get(), tty.get(), tty.get()};
      code = run_process(rt, r, exec_options(r, spec.process, spec.process.terminal), io);
    }
  } catch (const std::exception& e) {
    if (ready) {
      daemon::report_ready(ready, std::string("error: ") + e.what());
      if (made) {
        try {
          core::destroy_sandbox(rt.ctx, r.sandbox, true);
        } catch (const std::exception&) {
        }
      }
      ::_exit(1);
    }
    ::dprintf(2, "space-oci: error: %s\n", e.what());
    code = 255;
  }
  try {
    stop_sandbox_vm(rt, r.sandbox);
  } catch (const std::exception& e) {
    ::dprintf(2, "space-oci: stop the VM of %s: %s\n", req.id.c_str(), e.what());
  }
  ::_exit(code);
}

}  // namespace space::oci

// The OCI runtime operations (oci/runtime.h); the shim is oci/shim.cpp, a container's files
// oci/container.cpp.
#include "oci/runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/sandbox.h"
#include "core/session.h"
#include "oci/rootfs.h"
#include "oci/shim.h"
#include "oci/spec.h"
#include "ops/exec.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/procfs.h"
#include "util/sha256.h"
#include "util/socket.h"
#include "util/utc.h"

namespace space::oci {

std::string container_status(const Runtime& rt, const ContainerRecord& r) {
  if (!shim_alive(r)) return "stopped";
  if (!fs::exists(started_path(rt, r.id))) return "created";
  if (auto st = sandbox_of(rt, r.sandbox); st && st->status == store::Status::Paused)
    return "paused";
  return "running";
}

// `rt` with absolute paths: a shim works from /.
static Runtime absolute_runtime(const Runtime& rt) {
  Runtime a = rt;
  a.state_root = fs::absolute(rt.state_root);
  a.ctx.root = fs::absolute(rt.ctx.root);
  return a;
}

static std::string absolute_or_empty(const std::string& p) {
  return p.empty() ? p : fs::absolute(p);
}

void create_container(const Runtime& given_rt, const CreateRequest& given) {
  const Runtime rt = absolute_runtime(given_rt);
  CreateRequest req = given;
  req.bundle = fs::absolute(given.bundle);
  req.console_socket = absolute_or_empty(given.console_socket);
  req.pid_file = absolute_or_empty(given.pid_file);
  validate_container_id(req.id);
  Spec spec = load_spec(req.bundle);
  if (spec.process.terminal && req.console_socket.empty())
    fail("process.terminal is true but no --console-socket was given",
         "pass --console-socket SOCKET, or set \"terminal\": false");
  const bool pod_sandbox = is_pod_sandbox(spec);  // runs no sandbox: oci/shim.h
  const std::string sandbox = sandbox_id_for(req.id);
  if (!pod_sandbox && fs::exists(store::sandbox_paths(rt.ctx.root, sandbox).dir))
    fail("a sandbox named " + sandbox + " exists already", "destroy it, or pick another id");
  fs::mkdir_p(rt.state_root, 0711);
  std::string dir = container_dir(rt, req.id);
  if (::mkdir(dir.c_str(), 0711) != 0) {
    if (errno == EEXIST) fail("container with id " + req.id + " already exists");
    throw_errno("mkdir " + dir);
  }
  try {
    RootfsImage image;
    if (!pod_sandbox) {
      image = rootfs_image(rt.ctx, spec.root_path);
      char times[96];
      std::snprintf(times, sizeof times, ": digest %.1f ms, import %.1f ms", image.digest_ms,
                    image.import_ms);
      log::info("rootfs " + spec.root_path + ": image " + image.name +
                (image.reused ? " (reused)" : " (imported)") + times);
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw_errno("pipe2");
    Fd rd(p[0]), wr(p[1]);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) throw_errno("fork");
    if (pid == 0) {
      rd.reset();
      shim_main(rt, req, spec, image, std::move(wr));
    }
    wr.reset();
    std::string problem = read_report(rd);
    if (!problem.empty()) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      throw Error(problem);
    }
    write_pid_file(req.pid_file, pid);
  } catch (...) {
    try {
      fs::remove_tree(dir);
    } catch (const std::exception&) {
    }
    throw;
  }
}

void start_container(const Runtime& rt, const std::string& id) {
  ContainerRecord r = read_record(rt, id);
  std::string status = container_status(rt, r);
  if (status != "created")
    fail("cannot start a container that is " + status,
         status == "stopped" ? "" : "it runs already");
  auto dl = net::Deadline::after_ms(10000);
  Fd c = net::unix_connect(shim_sock(rt, id), dl);
  net::send_all(c.get(), "start\n", dl);
  auto line = net::read_line(c.get(), dl, 64);
  if (!line || *line != "ok") fail("container " + id + ": its shim did not start the process");
}

json::Value container_state(const Runtime& rt, const std::string& id) {
  ContainerRecord r = read_record(rt, id);
  std::string status = container_status(rt, r);
  json::Value v = json::Object{{"ociVersion", kSpecVersion},
                               {"id", r.id},
                               {"status", status},
                               {"sandbox", r.sandbox},
                               {"pid", status == "stopped" ? 0 : r.pid},
                               {"bundle", r.bundle},
                               {"rootfs", r.rootfs},
                               {"created", r.created},
                               {"owner", ""},
                               {"annotations", annotations_json(r.annotations)}};
  return v;
}

std::vector<json::Value> list_containers(const Runtime& rt) {
  std::vector<json::Value> out;
  if (!fs::is_dir(rt.state_root)) return out;
  for (const auto& id : fs::list_dir(rt.state_root)) {
    try {
      out.push_back(container_state(rt, id));
    } catch (const Error& e) {
      log::info("container " + id + ": " + e.what());
    }
  }
  std::sort(out.begin(), out.end(), [](const json::Value& a, const json::Value& b) {
    return a.at("created").as_string() < b.at("created").as_string();
  });
  return out;
}

void kill_container(const Runtime& rt, const std::string& id, int sig, bool all) {
  ContainerRecord r = read_record(rt, id);
  // runc's words: containerd's runc shim takes "container not running" from a kill as "process
  // already finished" (so a CRI StopContainer or a delete after the exit goes on); other words fail
  // it.
  if (!shim_alive(r)) fail("container not running: " + id);
  if (sig == SIGKILL) {
    auto shim = proc::ProcessRef::open(r.pid, r.pid_start_time);
    if (shim) shim->signal(SIGKILL);
    stop_sandbox_vm(rt, r.sandbox);
    if (shim) shim->wait_exit(5000);
    return;
  }
  if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
    fail("signal " + proc::signal_name(sig) + " would stop the container's shim, not its process",
         "pause the container instead: space-oci pause " + id);
  if (sig == SIGCHLD || sig == SIGWINCH || sig == SIGPIPE)
    fail("signal " + proc::signal_name(sig) + " cannot be delivered to a container's process");
  (void)all;  // one process per container: --all signals it
  auto shim = proc::ProcessRef::open(r.pid, r.pid_start_time);
  if (!shim || !shim->signal(sig)) fail("container not running: " + id);
}

void delete_container(const Runtime& rt, const std::string& id, bool force) {
  validate_container_id(id);
  std::string dir = container_dir(rt, id);
  if (!fs::is_dir(dir)) fail("container " + id + " does not exist");
  std::string sandbox = sandbox_id_for(id);
  if (fs::exists(record_path(rt, id))) {
    ContainerRecord r = read_record(rt, id);
    sandbox = r.sandbox;
    std::string status = container_status(rt, r);
    if (status != "stopped" && !force)
      fail("cannot delete container " + id + " that is not stopped: " + status,
           "stop it with: space-oci kill " + id + " KILL, or delete --force");
    if (auto shim = proc::ProcessRef::open(r.pid, r.pid_start_time)) {
      shim->signal(SIGKILL);
      shim->wait_exit(5000);
    }
  } else if (!force) {
    fail("container " + id + " is still being created", "delete --force removes it anyway");
  }
  if (!sandbox.empty() && fs::exists(store::sandbox_paths(rt.ctx.root, sandbox).dir))
    core::destroy_sandbox(rt.ctx, sandbox, true);
  fs::remove_tree(dir);
}

namespace {
// A pod's sandbox container has no sandbox to pause or run a process in.
void require_sandbox_behind(const ContainerRecord& r, const std::string& what) {
  if (r.sandbox.empty())
    fail("container " + r.id +
             " is a pod's sandbox (pause) container: space runs no sandbox for "
             "it, so it cannot " +
             what,
         "address the pod's application containers instead");
}
}  // namespace

void pause_container(const Runtime& rt, const std::string& id) {
  ContainerRecord r = read_record(rt, id);
  require_sandbox_behind(r, "be paused");
  if (container_status(rt, r) != "running") fail("container not running: " + id);
  core::pause_sandbox(rt.ctx, r.sandbox);
}

void resume_container(const Runtime& rt, const std::string& id) {
  ContainerRecord r = read_record(rt, id);
  require_sandbox_behind(r, "be resumed");
  if (container_status(rt, r) != "paused") fail("container " + id + " is not paused");
  core::resume_sandbox(rt.ctx, r.sandbox);
}

int exec_container(const Runtime& given_rt, const ExecRequest& given) {
  const Runtime rt = absolute_runtime(given_rt);
  ExecRequest req = given;
  req.console_socket = absolute_or_empty(given.console_socket);
  req.pid_file = absolute_or_empty(given.pid_file);
  ContainerRecord r = read_record(rt, req.id);
  require_sandbox_behind(r, "run a process");
  std::string status = container_status(rt, r);
  if (status != "running" && status != "created") fail("cannot exec in a " + status + " container");
  json::Value pv;
  if (req.process) {
    pv = *req.process;
  } else {
    try {
      pv = json::parse(fs::read_file(req.process_file, 4u << 20));
    } catch (Error& e) {
      e.add_context("--process " + req.process_file);
      throw;
    }
  }
  Process p = parse_process(pv, "process.json");
  bool tty = req.tty.value_or(p.terminal);
  if (tty && req.console_socket.empty() && req.detach)
    fail("a detached exec with a terminal needs --console-socket");
  agent::ExecOptions o = exec_options(r, p, tty);
  if (!req.detach) {
    write_pid_file(req.pid_file, ::getpid());
    if (tty && !req.console_socket.empty()) {
      ::setsid();
      Fd t = console_for(req.console_socket);
      return run_process(rt, r, o, {t.get(), t.get(), t.get()});
    }
    return run_process(rt, r, o, {});
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
  Fd rd(fds[0]), wr(fds[1]);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    rd.reset();
    detach_shim(wr.get());
    Fd t;
    try {
      if (tty) t = console_for(req.console_socket);
    } catch (const std::exception& e) {
      daemon::report_ready(wr, std::string("error: ") + e.what());
      ::_exit(1);
    }
    daemon::report_ready(wr);
    agent::StdioFds io;
    if (t) io = {t.get(), t.get(), t.get()};
    ::_exit(run_process(rt, r, o, io));
  }
  wr.reset();
  std::string problem = read_report(rd);
  if (!problem.empty()) {
    ::waitpid(pid, nullptr, 0);
    throw Error(problem);
  }
  write_pid_file(req.pid_file, pid);
  return 0;
}

json::Value features() {
  json::Value v = json::Object{
      {"ociVersionMin", "1.0.0"}, {"ociVersionMax", kSpecVersion}, {"hooks", json::Value::array()}};
  json::Value opts = json::Value::array();
  for (const char* o : {"bind", "rbind", "ro", "rw"}) opts.push_back(o);
  v.set("mountOptions", opts);
  json::Value lx = json::Value::object();
  lx.set("namespaces", json::Value::array());
  lx.set("capabilities", json::Value::array());
  json::Value cg =
      json::Object{{"v1", true}, {"v2", true}, {"systemd", false}, {"systemdUser", false}};
  lx.set("cgroup", cg);
  json::Value off = json::Value::object();
  off.set("enabled", false);
  lx.set("seccomp", off);
  lx.set("apparmor", off);
  lx.set("selinux", off);
  v.set("linux", lx);
  json::Value ann = json::Value::object();
  ann.set("space.template", "the space template the container's VM is restored from");
  ann.set("space.net", "the sandbox's network policy: none (default) or allow=RULE[,RULE...]");
  v.set("annotations", ann);
  return v;
}

int parse_signal(const std::string& s) {
  if (s.empty()) fail("empty signal");
  if (std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    int n = s.size() > 3 ? 0 : std::stoi(s);
    if (n < 1 || n > 64) fail("signal " + s + " is out of range (1-64)");
    return n;
  }
  std::string name = s;
  std::transform(name.begin(), name.end(), name.begin(), ::toupper);
  if (name.starts_with("SIG")) name = name.substr(3);
  for (int n = 1; n < 32; n++)
    if (const char* a = ::sigabbrev_np(n); a && name == a) return n;
  fail("unknown signal \"" + s + "\"", "give a name (TERM, SIGKILL) or a number");
}

}  // namespace space::oci

// The OCI runtime operations and the container shim (oci/runtime.h).
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

#include "core/copy.h"
#include "core/exec.h"
#include "core/net.h"
#include "core/sandbox.h"
#include "core/session.h"
#include "jail/cgroup.h"
#include "oci/mount_stage.h"
#include "oci/rootfs.h"
#include "oci/spec.h"
#include "store/paths.h"
#include "store/state.h"
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
namespace {

// Signals a shim forwards to its process: every standard one it can receive and that does not
// stop, continue or concern the shim itself (SIGCHLD, SIGWINCH: a resize, SIGPIPE).
const std::vector<int>& forwarded_signals() {
  static const std::vector<int> sigs = {SIGQUIT, SIGUSR1,   SIGUSR2, SIGALRM, SIGABRT,
                                        SIGTRAP, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
                                        SIGURG,  SIGSYS,    SIGPWR,  SIGIO,   SIGCONT};
  return sigs;
}

std::string container_dir(const Runtime& rt, const std::string& id) {
  return rt.state_root + "/" + id;
}
std::string record_path(const Runtime& rt, const std::string& id) {
  return container_dir(rt, id) + "/state.json";
}
std::string started_path(const Runtime& rt, const std::string& id) {
  return container_dir(rt, id) + "/started";
}
std::string shim_sock(const Runtime& rt, const std::string& id) {
  return container_dir(rt, id) + "/shim.sock";
}

void validate_container_id(const std::string& id) {
  store::validate_id(id, "container id");
}

}  // namespace

std::string sandbox_id_for(const std::string& id) {
  validate_container_id(id);
  if (id.size() <= kMaxSandboxIdLength) return id;
  Sha256 h;
  h.update(id);
  return id.substr(0, 12) + "-" + h.hex().substr(0, 8);
}

namespace {

ContainerRecord read_record(const Runtime& rt, const std::string& id) {
  validate_container_id(id);
  if (!fs::is_dir(container_dir(rt, id)))
    fail("container " + id + " does not exist", "list containers with: space-oci list");
  if (!fs::exists(record_path(rt, id))) fail("container " + id + " is still being created");
  return json::load_file(record_path(rt, id), "container record", parse_record);
}

bool shim_alive(const ContainerRecord& r) {
  return r.pid > 0 && proc::is_alive(r.pid, r.pid_start_time);
}

std::optional<store::SandboxState> sandbox_of(const Runtime& rt, const std::string& id) {
  store::SandboxPaths p = store::sandbox_paths(rt.ctx.root, id);
  if (!fs::exists(p.state)) return std::nullopt;
  try {
    return core::sandbox_state(rt.ctx, id);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Stops the sandbox's VMM, keeping its files (delete removes them).
void stop_sandbox_vm(const Runtime& rt, const std::string& id) {
  if (auto st = sandbox_of(rt, id); st && st->pid > 0)
    core::stop_vmm(*st, store::sandbox_paths(rt.ctx.root, id), 2000);
}

void write_pid_file(const std::string& path, pid_t pid) {
  if (path.empty()) return;
  fs::write_file_atomic(fs::absolute(path), std::to_string(pid), 0644, fs::Sync::Volatile);
}

// A pty for a process with terminal true: the master goes to the engine over `console_socket`
// (SCM_RIGHTS, as runc sends it), the slave becomes this process's controlling terminal (so a
// resize on the master reaches us as SIGWINCH). Returns the slave. Call after setsid().
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

core::ExecOptions exec_options(const ContainerRecord& r, const Process& p, bool tty) {
  core::ExecOptions o;
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

// Runs the exec and returns the exit code a container's process reports; errors on the way are
// printed on `err` (the container's stderr), as runc's init prints its own.
int run_process(const Runtime& rt, const ContainerRecord& r, const core::ExecOptions& o,
                const core::StdioFds& io) {
  try {
    core::ExecResult res = core::exec_in_sandbox(rt.ctx, r.sandbox, o, io);
    std::string why = core::describe_exit(res, o);
    if (!why.empty()) ::dprintf(io.err, "space-oci: %s\n", why.c_str());
    return res.exit_code;
  } catch (const std::exception& e) {
    ::dprintf(io.err, "space-oci: error: %s\n", e.what());
    return 255;
  }
}

// Tells the process waiting on `ready` how set-up went, once.
void report(Fd& ready, const std::string& line) {
  if (!ready) return;
  std::string l = line + "\n";
  try {
    write_all(ready.get(), l.data(), l.size());
  } catch (const Error&) {
  }
  ready.reset();
}

// Reads the shim's one line; "" once it wrote "ok".
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

}  // namespace

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

namespace {

// A shim's start: its own session, out of the caller's directory, and no descriptor of the
// caller's but stdio (an engine's sync pipes held open would make it wait for our end).
void detach_shim(int keep_fd) {
  ::setsid();
  (void)!::chdir("/");
  int keep[] = {0, 1, 2, keep_fd};
  close_all_but(keep, 4);
}

[[noreturn]] void shim_main(const Runtime& rt, const CreateRequest& req, const Spec& spec,
                            const RootfsImage& image, Fd ready) {
  detach_shim(ready.get());
  ContainerRecord r;
  r.id = req.id;
  r.sandbox = sandbox_id_for(req.id);
  r.bundle = fs::absolute(req.bundle);
  r.rootfs = spec.root_path;
  r.hostname = spec.hostname;
  r.annotations = spec.annotations;
  r.created = utc::rfc3339(::time(nullptr));
  r.pid = ::getpid();
  r.pid_start_time = proc::start_time(r.pid).value_or(0);
  int code = 0;
  bool made = false;
  try {
    Fd tty;
    if (spec.process.terminal) tty = console_for(req.console_socket);
    core::CreateOptions co;
    co.id = r.sandbox;
    auto a = spec.annotations.find("space.template");
    if (a != spec.annotations.end()) co.template_name = a->second;
    co.net = net_policy_for(spec);
    co.image = image.name;
    store::SandboxState st = core::create_sandbox(rt.ctx, co);
    made = true;
    if (!spec.netns_path.empty()) core::set_netns(rt.ctx, r.sandbox, spec.netns_path);
    if (spec.cpu_quota && !st.cgroup.empty())  // linux.resources.cpu: the VM's cgroup
      jail::set_cpu_quota(jail::detect_layout(), st.cgroup, *spec.cpu_quota,
                          spec.cpu_period.value_or(100000));
    if (spec.memory_limit && *spec.memory_limit < uint64_t{st.memory_mib} << 20)
      fail("linux.resources.memory.limit (" + std::to_string(*spec.memory_limit >> 20) +
               " MiB) is below the template's guest memory (" + std::to_string(st.memory_mib) +
               " MiB)",
           "raise the limit, or pick a smaller template with the annotation space.template");
    std::string stage = container_dir(rt, req.id) + "/mounts";
    // The bind-mounted files and directories, staged under one directory mirroring their
    // destinations (oci/mount_stage.h), so one copy puts them all in place.
    if (stage_mounts(spec, stage).mounts > 0) {
      core::CopyOptions c;
      c.sources = {stage + "/."};
      c.dest = r.sandbox + ":/";
      c.archive = true;
      try {
        core::copy_files(rt.ctx, c);
      } catch (...) {
        fs::remove_tree(stage);
        throw;
      }
      fs::remove_tree(stage);
    }
    json::save_file(record_path(rt, req.id), record_json(r), 0644, fs::Sync::Volatile);
    net::Listener l = net::listen_at(shim_sock(rt, req.id), 4);
    report(ready, "ok");
    code = wait_for_start(rt, r, l);
    net::unlink_if_ours(shim_sock(rt, req.id), l);
    if (code == 0) {
      core::StdioFds io;
      if (tty) io = {tty.get(), tty.get(), tty.get()};
      code = run_process(rt, r, exec_options(r, spec.process, spec.process.terminal), io);
    }
  } catch (const std::exception& e) {
    if (ready) {
      report(ready, std::string("error: ") + e.what());
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

json::Value annotations_json(const std::map<std::string, std::string>& m) {
  json::Value a = json::Value::object();
  for (const auto& [k, val] : m) a.set(k, val);
  return a;
}

}  // namespace

json::Value record_json(const ContainerRecord& r) {
  json::Value v = json::Value::object();
  v.set("id", r.id);
  v.set("sandbox", r.sandbox);
  v.set("bundle", r.bundle);
  v.set("rootfs", r.rootfs);
  v.set("created", r.created);
  v.set("pid", r.pid);
  v.set("pid_start_time", r.pid_start_time);
  v.set("hostname", r.hostname);
  v.set("annotations", annotations_json(r.annotations));
  return v;
}

ContainerRecord parse_record(const json::Value& v) {
  ContainerRecord r;
  r.id = json::string_field(v, "id");
  r.sandbox = json::string_field(v, "sandbox");
  r.bundle = json::string_field(v, "bundle");
  r.rootfs = json::string_field_or(v, "rootfs", "");
  r.created = json::string_field(v, "created");
  r.pid = static_cast<int>(json::uint_field(v, "pid", INT32_MAX));
  r.pid_start_time = json::uint_field_or(v, "pid_start_time", INT64_MAX, 0);
  r.hostname = json::string_field_or(v, "hostname", "");
  if (auto* a = v.find("annotations"); a && a->is_object())
    for (const auto& [k, val] : a->as_object())
      if (val.is_string()) r.annotations[k] = val.as_string();
  return r;
}

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
  const std::string sandbox = sandbox_id_for(req.id);
  if (fs::exists(store::sandbox_paths(rt.ctx.root, sandbox).dir))
    fail("a sandbox named " + sandbox + " exists already", "destroy it, or pick another id");
  fs::mkdir_p(rt.state_root, 0711);
  std::string dir = container_dir(rt, req.id);
  if (::mkdir(dir.c_str(), 0711) != 0) {
    if (errno == EEXIST) fail("container with id " + req.id + " already exists");
    throw_errno("mkdir " + dir);
  }
  try {
    RootfsImage image = rootfs_image(rt.ctx, spec.root_path);
    char times[96];
    std::snprintf(times, sizeof times, ": digest %.1f ms, import %.1f ms", image.digest_ms,
                  image.import_ms);
    log::info("rootfs " + spec.root_path + ": image " + image.name +
              (image.reused ? " (reused)" : " (imported)") + times);
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
  json::Value v = json::Value::object();
  v.set("ociVersion", kSpecVersion);
  v.set("id", r.id);
  v.set("status", status);
  v.set("sandbox", r.sandbox);
  v.set("pid", status == "stopped" ? 0 : r.pid);
  v.set("bundle", r.bundle);
  v.set("rootfs", r.rootfs);
  v.set("created", r.created);
  v.set("owner", "");
  v.set("annotations", annotations_json(r.annotations));
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
  if (!shim_alive(r)) fail("container " + id + " is not running");
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
  if (!shim || !shim->signal(sig)) fail("container " + id + " is not running");
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
  if (fs::exists(store::sandbox_paths(rt.ctx.root, sandbox).dir))
    core::destroy_sandbox(rt.ctx, sandbox, true);
  fs::remove_tree(dir);
}

void pause_container(const Runtime& rt, const std::string& id) {
  ContainerRecord r = read_record(rt, id);
  if (container_status(rt, r) != "running") fail("container " + id + " is not running");
  core::pause_sandbox(rt.ctx, r.sandbox);
}

void resume_container(const Runtime& rt, const std::string& id) {
  ContainerRecord r = read_record(rt, id);
  if (container_status(rt, r) != "paused") fail("container " + id + " is not paused");
  core::resume_sandbox(rt.ctx, r.sandbox);
}

int exec_container(const Runtime& given_rt, const ExecRequest& given) {
  const Runtime rt = absolute_runtime(given_rt);
  ExecRequest req = given;
  req.console_socket = absolute_or_empty(given.console_socket);
  req.pid_file = absolute_or_empty(given.pid_file);
  ContainerRecord r = read_record(rt, req.id);
  std::string status = container_status(rt, r);
  if (status != "running" && status != "created") fail("cannot exec in a " + status + " container");
  json::Value pv;
  try {
    pv = json::parse(fs::read_file(req.process_file, 4u << 20));
  } catch (Error& e) {
    e.add_context("--process " + req.process_file);
    throw;
  }
  Process p = parse_process(pv, "process.json");
  bool tty = req.tty.value_or(p.terminal);
  if (tty && req.console_socket.empty() && req.detach)
    fail("a detached exec with a terminal needs --console-socket");
  core::ExecOptions o = exec_options(r, p, tty);
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
      report(wr, std::string("error: ") + e.what());
      ::_exit(1);
    }
    report(wr, "ok");
    core::StdioFds io;
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
  json::Value v = json::Value::object();
  v.set("ociVersionMin", "1.0.0");
  v.set("ociVersionMax", kSpecVersion);
  v.set("hooks", json::Value::array());
  json::Value opts = json::Value::array();
  for (const char* o : {"bind", "rbind", "ro", "rw"}) opts.push_back(o);
  v.set("mountOptions", opts);
  json::Value lx = json::Value::object();
  lx.set("namespaces", json::Value::array());
  lx.set("capabilities", json::Value::array());
  json::Value cg = json::Value::object();
  cg.set("v1", true);
  cg.set("v2", true);
  cg.set("systemd", false);
  cg.set("systemdUser", false);
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

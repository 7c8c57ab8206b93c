// Host inspection for `space check`; see host_check.h. KVM access goes through vmm/kvm.h and
// host detection through vmm/host.h, the same code the VMM uses.
#include "report/host_check.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/template.h"
#include "jail/cgroup.h"
#include "jail/seccomp.h"
#include "jail/seccomp_prebuilt.h"
#include "launch/vmm_probe.h"
#include "store/config.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "vmm/host.h"
#include "vmm/kvm.h"
#include "vmm/kvm_api.h"

namespace space::report {

namespace {

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void check_kvm(HostReport& r) {
  static const std::pair<const char*, int> caps[] = {
      {"user_memory", KVM_CAP_USER_MEMORY},
      {"irqchip", KVM_CAP_IRQCHIP},
      {"irqfd", KVM_CAP_IRQFD},
      {"ioeventfd", KVM_CAP_IOEVENTFD},
      {"nr_vcpus", KVM_CAP_NR_VCPUS},
      {"max_vcpus", KVM_CAP_MAX_VCPUS},
      {"immediate_exit", KVM_CAP_IMMEDIATE_EXIT},
      {"adjust_clock", KVM_CAP_ADJUST_CLOCK},
  };
  try {
    vmm::Kvm kvm(r.kvm_device);
    r.kvm_ok = true;
    r.api_version = ::ioctl(kvm.fd(), KVM_GET_API_VERSION, 0);
    for (auto& [name, cap] : caps) r.extensions.emplace_back(name, kvm.check_extension(cap));
  } catch (const Error& e) {
    r.problems.push_back(std::string(e.what()) + (e.hint().empty() ? "" : " (" + e.hint() + ")"));
    return;
  }
  for (auto& [name, value] : r.extensions)
    if ((name == "user_memory" || name == "irqchip") && value == 0)
      r.problems.push_back("KVM lacks KVM_CAP_" + std::string(name) +
                           ", which the VMM needs (use a newer host kernel)");
}

// Runs `probe` in a forked child (it may change the child's namespaces or filters for good);
// "ok" when the child exits 0, else what failed.
template <class F>
std::string in_child(const char* what, unsigned long clone_flags, F probe) {
  pid_t pid =
      static_cast<pid_t>(::syscall(SYS_clone, clone_flags | SIGCHLD, nullptr, nullptr, nullptr, 0));
  if (pid < 0) return std::string(what) + ": " + std::strerror(errno);
  if (pid == 0) ::_exit(probe());
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return "ok";
  if (WIFEXITED(st)) return std::string(what) + ": " + std::strerror(WEXITSTATUS(st));
  return std::string(what) + ": the probe " + proc::describe_status(st);
}

// "v1 (blkio, cpu, ...)", "v2 (cpu memory pids)" or "none": the hierarchy and its controllers.
std::string cgroups_text(const jail::CgroupLayout& l) {
  std::string text = jail::version_name(l.version);
  std::vector<std::string> have;
  if (l.version == jail::CgroupVersion::V1)
    for (auto& [c, mnt] : l.v1) have.push_back(c);
  if (l.version == jail::CgroupVersion::V2) {
    try {
      std::string c = fs::read_file(l.v2 + "/cgroup.controllers", 4096);
      while (!c.empty() && c.back() == '\n') c.pop_back();
      have.push_back(c);
    } catch (const Error&) {
    }
  }
  if (have.empty()) return text;
  std::string list;
  for (auto& c : have) list += (list.empty() ? "" : ", ") + c;
  return text + " (" + list + ")";
}

void check_jail(HostReport& r, const store::Context& ctx, const store::HostConfig& hc) {
  r.jail_enabled = hc.jail_enable;
  r.cgroups_enabled = hc.jail_enable && hc.jail_cgroups;
  r.jail_uids = std::to_string(hc.jail_uid_first) + ".." +
                std::to_string(uint64_t(hc.jail_uid_first) + hc.jail_uid_count - 1);
  // A jail's namespaces: a new PID namespace (cloned), then mount, network, IPC and UTS.
  r.namespaces = in_child("new namespaces", CLONE_NEWPID, [] {
    return ::unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0 ? 0 : errno;
  });
  try {
    jail::Program p = jail::program(jail::Role::Init);
    r.seccomp = in_child("a seccomp filter", 0, [&p] { return jail::load(p); });
  } catch (const Error& e) {
    r.seccomp = e.what();
  }
  jail::CgroupLayout l = jail::detect_layout();
  r.cgroups = cgroups_text(l);
  if (!r.jail_enabled) {
    r.notes.push_back("[jail] enable = false: VMMs run as root, unconfined");
    return;
  }
  if (r.namespaces != "ok")
    r.problems.push_back("cannot make a jail's namespaces (" + r.namespaces +
                         "); run as root, or set [jail] enable = false in config.toml");
  if (r.seccomp != "ok")
    r.problems.push_back(
        "cannot install a seccomp filter (" + r.seccomp +
        "); use a kernel with CONFIG_SECCOMP_FILTER, or set [jail] enable = false");
  try {
    if (jail::unlisted_from_env() == jail::Unlisted::Log)
      r.problems.push_back(jail::kSeccompLogWarning);
  } catch (const Error& e) {
    r.problems.push_back(std::string(e.what()) + " (" + e.hint() + ")");
  }
  if (r.cgroups_enabled && l.version == jail::CgroupVersion::None)
    r.problems.push_back(
        "no cgroup hierarchy with the memory controller; mount one, or set [jail] cgroups = false");
  if (!r.cgroups_enabled) r.notes.push_back("[jail] cgroups = false: no per-sandbox limits");
  const jail::CgroupMoves moves = jail::detect_moves();
  r.cgroup_moves_fast = moves.favored;
  if (r.cgroups_enabled && l.version != jail::CgroupVersion::None && !moves.favored)
    r.notes.push_back(
        "cgroup moves wait for an RCU grace period after a quiet spell (no cgroup mount has "
        "favordynmods), and each create waits for its VMM's: " +
        (moves.cgroup2.empty()
             ? std::string("a kernel with CONFIG_CGROUP_FAVOR_DYNMODS avoids it")
             : "remounting " + moves.cgroup2 +
                   " with favordynmods added to its options avoids it (scripts/install.sh "
                   "does)"));
  // Each part works: now the whole, as a VMM starts (launch/vmm_probe.h).
  const bool parts_ok = r.namespaces == "ok" && r.seccomp == "ok" &&
                        !(r.cgroups_enabled && l.version == jail::CgroupVersion::None);
  if (!parts_ok) {
    r.jail_start = "not tried (see the problems)";
  } else if (::geteuid() != 0) {
    r.jail_start = "not tried (needs root)";
  } else {
    try {
      r.jail_start_ms = launch::probe_vmm_start(ctx, hc).ms;
      r.jail_start = "ok";
    } catch (const Error& e) {
      r.jail_start = e.what();
      r.problems.push_back("a jailed VMM cannot start here (" + r.jail_start +
                           "); or set [jail] enable = false in config.toml");
    }
  }
}

// Both engines, whether each can run here, and the default: the default engine's problems are
// the host's; the other's are notes.
void check_engines(HostReport& r, const store::HostConfig& hc,
                   const std::vector<std::string>& vm_problems) {
  launch::EngineStatus vm{launch::Engine::Vm, vm_problems.empty(), ""};
  for (const auto& p : vm_problems) vm.detail += (vm.detail.empty() ? "" : "; ") + p;
  if (vm.usable) vm.detail = r.kvm_device + " (" + r.host + ")";
  launch::EngineStatus gvisor = launch::probe_gvisor_engine(hc);
  launch::EngineChoice choice;
  try {
    choice = launch::choose_engine("", hc);
  } catch (const Error& e) {
    r.problems.push_back(std::string(e.what()) + " (" + e.hint() + ")");
  }
  r.default_engine = launch::engine_name(choice.engine);
  r.default_engine_source = choice.source;
  r.engines = {vm, gvisor};
  if (choice.engine == launch::Engine::Vm) {
    r.problems.insert(r.problems.end(), vm_problems.begin(), vm_problems.end());
    if (!vm.usable && gvisor.usable)
      r.notes.push_back(
          "the gvisor engine can run here (--engine gvisor, or config.toml [engine] default = "
          "\"gvisor\"): a user-space kernel, a weaker boundary than a VM's");
    return;
  }
  for (const auto& p : vm_problems) r.notes.push_back("the vm engine cannot run here: " + p);
  if (!gvisor.usable)
    r.problems.push_back("the gvisor engine (the default, from " + choice.source +
                         ") cannot run: " + gvisor.detail +
                         " (apt-get install -t bookworm-backports runsc)");
}

}  // namespace

HostReport check_host(const store::Context& ctx) {
  HostReport r;
  vmm::HostKind kind = vmm::detect_host();
  r.host = vmm::host_kind_name(kind);
  store::HostConfig hc;
  try {
    hc = store::load_host_config(ctx.root);
  } catch (const Error& e) {
    r.problems.push_back(e.what());
  }
  // The vm engine's own needs (KVM, the guest kernel, the jail) are set apart: they are problems
  // only when vm is the default engine.
  std::vector<std::string> vm_problems;
  auto set_apart = [&](size_t first) {
    vm_problems.insert(vm_problems.end(), r.problems.begin() + static_cast<long>(first),
                       r.problems.end());
    r.problems.resize(first);
  };
  size_t first = r.problems.size();
  check_kvm(r);
  r.kernel = store::resolve_kernel(hc, "");
  r.kernel_present = is_regular(r.kernel);
  if (!r.kernel_present)
    r.problems.push_back("no guest kernel at " + r.kernel +
                         " (run scripts/install.sh, or set [defaults] kernel in config.toml)");
  set_apart(first);
  r.rootfs = store::resolve_rootfs(hc, "");
  r.rootfs_present = is_regular(r.rootfs);
  if (!r.rootfs_present)
    r.problems.push_back("no rootfs image at " + r.rootfs +
                         " (run scripts/install.sh, or set [defaults] rootfs in config.toml)");

  r.root = fs::absolute(ctx.root);
  r.store = store::store_status(ctx, hc.store_size_gib);
  if (r.store.kind == "loopback" && !r.store.image_exists &&
      proc::find_program("mkfs.btrfs").empty())
    r.problems.push_back(
        "the root is not on btrfs and mkfs.btrfs is missing, so the loopback store "
        "cannot be made (apt-get install btrfs-progs)");
  r.default_template = hc.default_template;
  std::string tdir = store::template_dir(ctx.root, hc.default_template);
  r.default_template_present = fs::is_dir(tdir);
  if (!r.default_template_present) {
    r.notes.push_back("no template \"" + hc.default_template +
                      "\": create cold-boots (about 12 s on a PVM host) "
                      "until 'space template build " +
                      hc.default_template + "' makes one");
  } else {
    try {
      core::check_restorable(core::read_template_meta(tdir), hc.default_template);
    } catch (const Error& e) {
      r.default_template_problem = e.what();
      r.problems.push_back(std::string(e.what()) + " (" + e.hint() + ")");
    }
  }
  first = r.problems.size();
  check_jail(r, ctx, hc);
  set_apart(first);
  if (kind == vmm::HostKind::Unknown)
    r.notes.push_back("no vmx/svm CPU flags and no kvm_pvm module: KVM may be unusable or slow");
  check_engines(r, hc, vm_problems);
  r.pool_wanted = hc.gvisor_pool;
  try {
    r.pools = core::pool_status(ctx);
  } catch (const Error& e) {
    r.notes.push_back(std::string("the gvisor pools cannot be read: ") + e.what());
  }
  return r;
}

namespace {
// "off" or "N per gvisor template; base 2 ready, 0 starting; ..." (`space check`'s pool line).
std::string pools_text(const HostReport& r) {
  std::string out = r.pool_wanted ? std::to_string(r.pool_wanted) + " per gvisor template"
                                  : "off ([engine.gvisor] pool = 0)";
  for (const auto& p : r.pools) {
    if (!r.pool_wanted && !p.ready && !p.starting) continue;
    out += "; " + p.template_name + " " + std::to_string(p.ready) + " ready";
    if (p.starting) out += ", " + std::to_string(p.starting) + " starting";
    if (!p.memory_note.empty()) out += " (" + p.memory_note + ")";
  }
  return out;
}
}  // namespace

json::Value host_report_json(const HostReport& r) {
  json::Value v = json::Value::object();
  v.set("usable", r.usable());
  v.set("host", r.host);
  json::Value engines = json::Value::array();
  for (const auto& e : r.engines) {
    json::Value one = json::Object{{"name", launch::engine_name(e.engine)},
                                   {"usable", e.usable},
                                   {"detail", e.detail},
                                   {"default", r.default_engine == launch::engine_name(e.engine)}};
    engines.push_back(std::move(one));
  }
  v.set("engines", std::move(engines));
  v.set("default_engine", r.default_engine);
  v.set("default_engine_source", r.default_engine_source);
  json::Value kvm = json::Object{
      {"device", r.kvm_device}, {"accessible", r.kvm_ok}, {"api_version", r.api_version}};
  json::Value ext = json::Value::object();
  for (auto& [name, value] : r.extensions) ext.set(name, value);
  kvm.set("extensions", std::move(ext));
  v.set("kvm", std::move(kvm));
  auto file = [](const std::string& path, bool present) {
    json::Value f = json::Value::object();
    f.set("path", path);
    f.set("present", present);
    return f;
  };
  v.set("kernel", file(r.kernel, r.kernel_present));
  v.set("rootfs", file(r.rootfs, r.rootfs_present));
  json::Value root = json::Value::object();
  root.set("path", r.root);
  root.set("btrfs", r.store.kind == "btrfs-root");
  v.set("root", std::move(root));
  v.set("store", store::store_status_json(r.store));
  json::Value tmpl = json::Object{
      {"name", r.default_template},
      {"present", r.default_template_present},
      {"restorable", r.default_template_present && r.default_template_problem.empty()}};
  v.set("default_template", std::move(tmpl));
  json::Value pool = json::Value::object(), pools = json::Value::array();
  pool.set("per_template", r.pool_wanted);
  for (const auto& p : r.pools) {
    json::Value x = json::Object{{"template", p.template_name},
                                 {"ready", p.ready},
                                 {"starting", p.starting},
                                 {"memory_note", p.memory_note}};
    pools.push_back(std::move(x));
  }
  pool.set("templates", std::move(pools));
  v.set("gvisor_pool", std::move(pool));
  json::Value jail = json::Object{{"enabled", r.jail_enabled},
                                  {"uids", r.jail_uids},
                                  {"namespaces", r.namespaces},
                                  {"seccomp", r.seccomp}};
  json::Value allowed = json::Value::object();  // what each thread role's filter lets through
  for (jail::Role role : {jail::Role::Vmm, jail::Role::Vcpu, jail::Role::Init}) {
    json::Value names = json::Value::array();
    for (auto& name : jail::allowed_syscalls(role)) names.push_back(name);
    allowed.set(jail::role_name(role), std::move(names));
  }
  jail.set("seccomp_allowed", std::move(allowed));
  jail.set("cgroups_enabled", r.cgroups_enabled);
  jail.set("cgroups", r.cgroups);
  jail.set("cgroup_moves_fast", r.cgroup_moves_fast);
  jail.set("start", r.jail_start);
  jail.set("start_ms", r.jail_start_ms);
  v.set("jail", std::move(jail));
  json::Value notes = json::Value::array(), problems = json::Value::array();
  for (auto& n : r.notes) notes.push_back(n);
  for (auto& p : r.problems) problems.push_back(p);
  v.set("notes", std::move(notes));
  v.set("problems", std::move(problems));
  return v;
}

std::string host_report_text(const HostReport& r) {
  std::string out;
  auto line = [&](const std::string& k, const std::string& v) {
    out += k;
    out.append(k.size() < 14 ? 14 - k.size() : 1, ' ');
    out += v + "\n";
  };
  line("host", r.host);
  for (const auto& e : r.engines)
    line(std::string("engine ") + launch::engine_name(e.engine),
         std::string(e.usable ? "usable: " : "not usable: ") + e.detail +
             (r.default_engine == launch::engine_name(e.engine)
                  ? " [default, from " + r.default_engine_source + "]"
                  : ""));
  line("kvm", r.kvm_device + (r.kvm_ok ? ": ok, API version " + std::to_string(r.api_version)
                                       : ": not usable"));
  if (!r.extensions.empty()) {
    std::string caps;
    for (auto& [name, value] : r.extensions)
      caps += (caps.empty() ? "" : " ") + name + "=" + std::to_string(value);
    line("extensions", caps);
  }
  line("kernel", r.kernel + (r.kernel_present ? "" : " (missing)"));
  line("rootfs", r.rootfs + (r.rootfs_present ? "" : " (missing)"));
  line("root", r.root + (r.store.kind == "btrfs-root" ? " (btrfs)" : " (not btrfs)"));
  line("store", store::store_status_text(r.store));
  line("template", r.default_template + (r.default_template_present ? "" : " (missing)"));
  line("gvisor pool", pools_text(r));
  if (r.jail_enabled) {
    line("jail",
         "uids " + r.jail_uids + "; namespaces " + r.namespaces + "; seccomp " +
             (r.seccomp == "ok" ? "ok (kill on any call a role does not list)" : r.seccomp));
    line("cgroups", r.cgroups_enabled
                        ? r.cgroups + (r.cgroup_moves_fast ? "; moves fast (favordynmods)"
                                                           : "; moves wait (no favordynmods)")
                        : "off ([jail] cgroups = false)");
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", r.jail_start_ms);
    line("jail start", r.jail_start == "ok"
                           ? "ok: a jailed VMM without a VM started in " + std::string(ms) + " ms"
                           : r.jail_start);
  } else {
    line("jail", "off ([jail] enable = false)");
  }
  for (auto& n : r.notes) line("note", n);
  for (auto& p : r.problems) line("problem", p);
  line("usable", r.usable() ? "yes" : "no");
  return out;
}

}  // namespace space::report

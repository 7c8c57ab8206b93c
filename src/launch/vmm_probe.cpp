// The probe; see vmm_probe.h. Its files: vmm.log in <run base>/.vmm-probe-<pid>/, its run
// directory <run base>/vmm-probe-<pid>, removed at the end with its cgroup.
#include "launch/vmm_probe.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "launch/jail_setup.h"
#include "launch/launcher.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/process.h"
#include "util/socket.h"
#include "util/timing.h"

namespace space::launch {

namespace {

// What follows `marker` on the last line of `text` that has it, or "".
std::string logged_after(const std::string& text, const std::string& marker) {
  size_t at = text.rfind(marker);
  if (at == std::string::npos) return "";
  size_t end = text.find('\n', at);
  return text.substr(at + marker.size(),
                     end == std::string::npos ? std::string::npos : end - at - marker.size());
}

}  // namespace

ProbeResult probe_vmm_start(const store::Context& ctx, const store::HostConfig& hc) {
  const std::string id = "vmm-probe-" + std::to_string(::getpid());
  const std::string scratch = store::run_base() + "/." + id;
  store::SandboxPaths p = store::paths_in(scratch, store::run_base() + "/" + id);
  fs::ensure_private_dir(store::run_base(), 0700);
  fs::remove_tree(scratch);
  if (::mkdir(scratch.c_str(), 0700) != 0) throw_errno("mkdir " + scratch);
  std::optional<VmmLaunch> launch;
  auto cleanup = [&] {
    try {
      if (launch) {
        // SIGKILL and reap, unless reaped: the jail's PID 1, whose end ends its namespace.
        launch->child = proc::Child();
        remove_sandbox_cgroup(launch->cgroup);
        launch.reset();
      }
      fs::remove_tree(p.run_dir);
      fs::remove_tree(scratch);
    } catch (const Error& e) {
      log::warn("VMM probe: cleanup: " + std::string(e.what()));
    }
  };
  try {
    VmmMode mode;
    mode.explicit_paths = true;
    mode.probe = true;
    const int64_t t0_ns = timing::mono_ns();
    launch.emplace(launch_vmm(ctx, hc, p, id, mode, JailRequest{id, id, 1, 256}));
    wait_vmm_ready(launch->ready, net::Deadline::after_ms(10'000));
    ProbeResult r;
    r.ms = double(timing::mono_ns() - t0_ns) / 1e6;
    pollfd pf{launch->child.pidfd(), POLLIN, 0};
    if (::poll(&pf, 1, 5000) <= 0 || !launch->child.exited())
      fail("the probe VMM reported ready but did not exit within 5 s");
    int status = launch->child.wait();  // the jail's PID 1 exits with the probe's status
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail("the probe VMM " + proc::describe_status(status) + " after it reported ready");
    const std::string log_text = fs::tail_lines(p.vmm_log, 20);
    r.phases = logged_after(log_text, "probe: jail entered: ");
    // "probe: started at monotonic N ns": the same clock as t0_ns (the log line is written
    // before any namespace is entered, and a PID namespace does not change the clock).
    const std::string started = logged_after(log_text, "probe: started at monotonic ");
    char* end = nullptr;
    const long long started_ns = std::strtoll(started.c_str(), &end, 10);
    if (!started.empty() && end != started.c_str() && started_ns >= t0_ns)
      r.start_ms = double(started_ns - t0_ns) / 1e6;
    cleanup();
    return r;
  } catch (Error& e) {
    std::string tail = fs::tail_lines(p.vmm_log, 5);
    cleanup();
    e.add_context(hc.jail_enable ? "a jailed VMM start without a VM" : "a VMM start without a VM");
    if (!tail.empty())
      throw Error(std::string(e.what()) + "; its log:\n" + tail, e.err(), e.hint());
    throw;
  }
}

}  // namespace space::launch

// The gvisor monitor's host-side steps; see gvisor_host.h.
#include "monitor/gvisor_host.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

#include "jail/cgroup.h"
#include "store/loop.h"
#include "util/daemon.h"
#include "util/error.h"
#include "util/log.h"
#include "util/relay.h"
#include "util/socket.h"

namespace space::monitor {

Fd block_monitor_signals() {
  // SIGPIPE keeps its default: runsc, which the monitor runs, would inherit it ignored.
  return daemon::watch_signals({SIGTERM, SIGINT, SIGHUP, SIGCHLD}, /*ignore_sigpipe=*/false);
}

void join_cgroup(const std::string& rel) {
  if (rel.empty()) return;
  try {
    jail::join_group(jail::detect_layout(), rel);
  } catch (Error& e) {
    e.add_context("join the sandbox's cgroup");
    throw;
  }
}

Fd enter_own_mount_namespace() {
  Fd host(::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  if (!host) throw_errno("open /proc/self/ns/mnt");
  if (::unshare(CLONE_NEWNS) != 0) throw_errno("unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    throw_errno("make / private");
  return host;
}

void make_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) throw_errno("mkdir " + path);
}

void mount_read_only(const std::string& image, const std::string& target) {
  make_dir(target, 0700);
  // noload: no journal replay; the image was made by mkfs and never mounted writable.
  store::loop::mount_image(image, target, "ext4", MS_RDONLY | MS_NOSUID | MS_NODEV, "noload");
}

void forward_to_helper(Fd guest, std::string socket, std::atomic<int>& open) {
  open++;
  std::thread([g = std::move(guest), socket, &open]() mutable {
    try {
      Fd up = net::unix_connect(socket, net::Deadline::after_ms(5000));
      relay(g.get(), up.get(), -1, -1);
    } catch (const std::exception& e) {
      log::debug("guest connection to " + socket + ": " + e.what());
    }
    g.reset();
    open--;
  }).detach();
}

}  // namespace space::monitor

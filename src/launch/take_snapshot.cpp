// Snapshots through a handed-over directory; see take_snapshot.h.
#include "launch/take_snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "jail/privileges.h"
#include "launch/control_client.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "vmm/snapshot.h"

namespace space::launch {
namespace {

constexpr const char* kDrop = ".vm";

// Moves `name` from the drop directory into `dest`, if it is a regular file.
void collect(int drop, int dest, const char* name, const std::string& shown) {
  struct stat st {};
  if (::fstatat(drop, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    throw_errno("snapshot: the VMM wrote no " + std::string(name) + " in " + shown);
  if (!S_ISREG(st.st_mode))
    fail("snapshot: " + shown + "/" + name + " is not a regular file; refusing it");
  if (::renameat(drop, name, dest, name) != 0)
    throw_errno("snapshot: move " + std::string(name) + " out of " + shown);
  if (::fchownat(dest, name, 0, 0, AT_SYMLINK_NOFOLLOW) != 0)
    throw_errno("snapshot: chown " + std::string(name));
}

}  // namespace

proto::control::SnapshotReply take_snapshot(const store::SandboxPaths& p, pid_t vmm_pid, uid_t uid,
                                            const std::string& dest, int timeout_ms) {
  const std::string drop = dest + "/" + kDrop;
  fs::remove_tree(drop);  // the remains of an interrupted snapshot
  if (::mkdir(drop.c_str(), 0700) != 0) throw_errno("mkdir " + drop);
  try {
    Fd dest_fd(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    Fd drop_fd(::open(drop.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dest_fd || !drop_fd) throw_errno("open " + drop);
    if (uid && ::fchown(drop_fd.get(), uid, uid) != 0) throw_errno("chown " + drop);
    // The VMM's pagemap lets it write memory as a diff; without one it writes it whole. Opened
    // without CAP_SYS_ADMIN, so it shows the VMM which pages are present and dirty, never the
    // host's physical frame numbers (a help to attacks such as rowhammer).
    Fd pagemap(
        jail::open_without_sys_admin("/proc/" + std::to_string(vmm_pid) + "/pagemap", O_RDONLY));
    if (!pagemap) log::debug("no pagemap of VMM " + std::to_string(vmm_pid) + ": memory in full");
    std::vector<int> fds = {drop_fd.get()};
    if (pagemap) fds.push_back(pagemap.get());
    proto::control::SnapshotRequest req{drop, pagemap.valid()};
    auto reply = control_call(p.control_sock, req, timeout_ms, fds);
    // Ours again: the VMM's descriptor of the directory no longer lets it write there.
    if (::fchown(drop_fd.get(), 0, 0) != 0 || ::fchmod(drop_fd.get(), 0700) != 0)
      throw_errno("take back " + drop);
    collect(drop_fd.get(), dest_fd.get(), vmm::snapshot::kVmstateFile, drop);
    collect(drop_fd.get(), dest_fd.get(), vmm::snapshot::kMemoryFile, drop);
    fs::remove_tree(drop);
    if (::fsync(dest_fd.get()) != 0) throw_errno("fsync " + dest);
    return reply;
  } catch (...) {
    try {
      fs::remove_tree(drop);
    } catch (const Error& e) {
      log::warn(e.what());
    }
    throw;
  }
}

}  // namespace space::launch

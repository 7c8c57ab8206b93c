// Privilege drop; see privileges.h. Capabilities are read and checked with the raw capget(2)
// (version 3: 64 bits), so no libcap is needed.
#include "jail/privileges.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "util/error.h"

namespace space::jail {
namespace {

bool capget_v3(__user_cap_data_struct (&data)[2]) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  return ::syscall(SYS_capget, &hdr, data) == 0;
}

void set_limit(int resource, rlim_t value, const char* name) {
  rlimit rl{value, value};
  if (::setrlimit(resource, &rl) != 0) throw_errno(std::string("setrlimit ") + name);
}

}  // namespace

void drop(const Identity& who, uint64_t max_files, uint64_t max_file_bytes) {
  if (who.uid == 0 || who.gid == 0) fail("jail: refusing to run as uid or gid 0");
  // Limits first: raising a hard limit needs CAP_SYS_RESOURCE.
  set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE");
  set_limit(RLIMIT_NOFILE, max_files, "RLIMIT_NOFILE");
  if (max_file_bytes) {
    if (::signal(SIGXFSZ, SIG_IGN) == SIG_ERR) throw_errno("ignore SIGXFSZ");
    set_limit(RLIMIT_FSIZE, max_file_bytes, "RLIMIT_FSIZE");
  }
  // The bounding set, while we still hold CAP_SETPCAP. The kernel knows at most 64; stop at the
  // first it does not know (EINVAL).
  for (int cap = 0; cap < 64; cap++) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;
    throw_errno("drop capability " + std::to_string(cap) + " from the bounding set");
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    throw_errno("clear the ambient capabilities");
  if (::setgroups(0, nullptr) != 0) throw_errno("drop the supplementary groups");
  if (::setresgid(who.gid, who.gid, who.gid) != 0)
    throw_errno("set gid " + std::to_string(who.gid));
  if (::setresuid(who.uid, who.uid, who.uid) != 0)
    throw_errno("set uid " + std::to_string(who.uid));
  if (!has_no_capabilities()) fail("jail: capabilities survived the uid change");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw_errno("set no_new_privs");
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) throw_errno("clear the dumpable flag");
}

int open_without_sys_admin(const std::string& path, int flags) {
  __user_cap_data_struct data[2]{};
  if (!capget_v3(data)) throw_errno("capget");
  const uint32_t bit = 1u << (CAP_SYS_ADMIN % 32);
  __user_cap_data_struct& word = data[CAP_SYS_ADMIN / 32];
  const bool had = word.effective & bit;
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  if (had) {
    word.effective &= ~bit;
    if (::syscall(SYS_capset, &hdr, data) != 0) throw_errno("capset: drop CAP_SYS_ADMIN");
  }
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  const int err = errno;
  if (had) {
    word.effective |= bit;
    if (::syscall(SYS_capset, &hdr, data) != 0) throw_errno("capset: restore CAP_SYS_ADMIN");
  }
  errno = err;
  return fd;
}

bool has_no_capabilities() {
  __user_cap_data_struct data[2]{};
  if (!capget_v3(data)) return false;
  for (auto& d : data)
    if (d.effective || d.permitted || d.inheritable) return false;
  for (int cap = 0; cap < 64; cap++) {
    int r = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (r < 0) break;  // past the last capability the kernel knows
    if (r == 1) return false;
  }
  return true;
}

}  // namespace space::jail

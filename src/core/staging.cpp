// All-or-nothing builds in the store; see staging.h.
#include "core/staging.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "store/state.h"
#include "store/store.h"
#include "util/error.h"
#include "util/log.h"

namespace space::core {

Fd lock_dir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + dir);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Fd();
    throw_errno("lock " + dir);
  }
  return fd;
}

std::string build_dir_for(const std::string& parent, const std::string& name) {
  return parent + "/." + name + std::string(kBuildMarker) + store::generate_id().substr(0, 8);
}

void install_build(const std::string& build, const std::string& dest, const std::string& what,
                   const std::string& name, bool force) {
  if (::renameat2(AT_FDCWD, build.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno != EEXIST || !force) {
    if (errno == EEXIST) fail(what + " " + name + " already exists", "pass --force to replace it");
    throw_errno("rename " + build + " to " + dest);
  }
  if (::renameat2(AT_FDCWD, build.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0)
    throw_errno("exchange " + build + " and " + dest);
  try {
    store::remove_store_tree(build);
  } catch (const Error& e) {
    log::warn(what + " " + name + ": the replaced " + what + " is left at " + build + ": " +
              e.what());
  }
}

}  // namespace space::core

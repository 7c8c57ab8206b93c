// All-or-nothing builds in the store; see staging.h.
#include "image/staging.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "store/state.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::image {

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

void sweep_dead_builds(const std::string& parent, const std::string& what,
                       const std::function<void(const std::string&)>& before_remove) {
  for (const auto& entry : fs::list_dir(parent)) {
    if (entry.empty() || entry[0] != '.' || entry.rfind(kBuildMarker) == std::string::npos)
      continue;
    std::string dir = parent + "/" + entry;
    try {
      Fd held = lock_dir(dir);
      if (!held) continue;  // a build in progress
      log::info(what + ": removing " + dir + ", left by a build that did not finish");
      if (before_remove) before_remove(dir);
      store::remove_store_tree(dir);
    } catch (const Error& e) {
      log::warn(what + ": could not remove a dead build: " + e.what());
    }
  }
}

uint64_t allocated_bytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& name : fs::list_dir(dir)) {
    struct stat st {};
    if (::lstat((dir + "/" + name).c_str(), &st) == 0) total += uint64_t(st.st_blocks) * 512;
  }
  return total;
}

}  // namespace space::image

// MountBaseDir: a directory under /tmp for a test's own jails' base mount namespace
// (jail/mount_base.h, at <path>/ns), whose mounts (the namespace's and the directory's own
// private bind) are all undone when the test ends.
#pragma once
#include <sys/mount.h>

#include <string>

#include "support/temp_dir.h"

namespace space::test {

struct MountBaseDir {
  TempDir dir;
  std::string path = dir.path + "/mnt";
  explicit MountBaseDir(const std::string& tag) : dir(tag) {}
  ~MountBaseDir() {
    for (const std::string& p : {path + "/ns", path})
      while (::umount2(p.c_str(), MNT_DETACH) == 0) {
      }
  }
  MountBaseDir(const MountBaseDir&) = delete;
  MountBaseDir& operator=(const MountBaseDir&) = delete;
};

}  // namespace space::test

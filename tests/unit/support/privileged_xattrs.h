// PrivilegedXattrDir: a fresh directory on a file system that takes trusted.* and
// security.capability extended attributes from this process (root, and a file system that keeps
// them: ext4, btrfs, tmpfs), for the tests of what a copy keeps or drops; the first of /tmp,
// /var/tmp and /dev/shm that does. `path` is empty when none does (needs_privileged_xattrs()
// skips those tests then). Removed, with everything in it, when the test ends. cap_v2() is a valid
// file capability to set.
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "util/fd.h"
#include "util/fs.h"

namespace space::test {

// A v2 file capability blob: cap_net_bind_service in the permitted set.
inline std::string cap_v2() {
  std::string cap(20, '\0');
  cap[3] = 0x02;  // VFS_CAP_REVISION_2, little-endian magic_etc
  cap[5] = 0x04;  // permitted[0] bit 10
  return cap;
}

struct PrivilegedXattrDir {
  std::string path;
  std::string tried;  // why each candidate was passed over, for the skip message
  explicit PrivilegedXattrDir(const std::string& tag) {
    for (const char* base : {"/tmp", "/var/tmp", "/dev/shm"}) {
      std::string tmpl = std::string(base) + "/space-test-" + tag + "-XXXXXX";
      if (!::mkdtemp(tmpl.data())) continue;
      const std::string probe = tmpl + "/probe";
      Fd f(::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
      const std::string cap = cap_v2();
      if (f && ::fsetxattr(f.get(), "trusted.space-probe", "1", 1, 0) == 0 &&
          ::fsetxattr(f.get(), "security.capability", cap.data(), cap.size(), 0) == 0) {
        f.reset();
        ::unlink(probe.c_str());
        path = tmpl;
        return;
      }
      tried += std::string(tried.empty() ? "" : "; ") + base + ": " + std::strerror(errno);
      try {
        fs::remove_tree(tmpl);
      } catch (...) {
      }
    }
  }
  // Whether a directory took the attributes (needs_privileged_xattrs() skips the case otherwise).
  bool usable() const { return !path.empty(); }
  ~PrivilegedXattrDir() {
    if (path.empty()) return;
    try {
      fs::remove_tree(path);
    } catch (...) {
    }
  }
  PrivilegedXattrDir(const PrivilegedXattrDir&) = delete;
  PrivilegedXattrDir& operator=(const PrivilegedXattrDir&) = delete;
};

// Skipped unless this process is root and some directory takes those attributes (probed once,
// when the test binary starts): TEST_CASE("..." * test::needs_privileged_xattrs()).
inline doctest::skip needs_privileged_xattrs() {
  static const bool yes = ::geteuid() == 0 && PrivilegedXattrDir("probe").usable();
  return doctest::skip(!yes);
}

// The value of extended attribute `name` of `path` (not followed), or "<none>".
inline std::string xattr_of(const std::string& path, const char* name) {
  char buf[256];
  ssize_t n = ::lgetxattr(path.c_str(), name, buf, sizeof buf);
  return n < 0 ? std::string("<none>") : std::string(buf, static_cast<size_t>(n));
}

}  // namespace space::test

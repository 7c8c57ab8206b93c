// ImageRoot: the user's image as the root of every exec. A sandbox made with --image has its
// copy of the image's ext4 disk on /dev/vdb; a Hello with proto::Hello::kImage asks guest-init
// to make it usable, once:
//   - wait until the guest sees the disk's capacity (a restored template had an empty slot: the
//     VMM's configuration-change interrupt makes the kernel read the new size, asynchronously);
//   - mount it on /run/space/image (ext4, noinit_itable: no lazy inode-table zeroing, which is
//     guest kernel work and interpreted on PVM);
//   - put the API filesystems in place inside it (proc, sysfs, a recursive bind of /dev with its
//     pts and shm), a /tmp (1777), /etc/hostname and /etc/hosts bound from files guest-init keeps
//     under /run/space (so a branch's new id reaches them), and space-secret bound on
//     /usr/local/bin/space-secret so that it is on the image's PATH.
// Every path inside the image is resolved with openat2(RESOLVE_IN_ROOT): the image's own
// symlinks (an /etc/hosts pointing at /etc/shadow, say) stay inside the image, and mounts go onto
// the resolved descriptors (/proc/self/fd/N), never onto a path string.
// Execs then chroot into root_fd() in their child (exec_spawn.h); guest-init itself, its
// sockets and space-secret's original stay in the base root.
#pragma once
#include <mutex>
#include <string>

#include "console.h"
#include "util/fd.h"

namespace space::guest {

class ImageRoot {
 public:
  static constexpr const char* kDevice = "/dev/vdb";
  static constexpr const char* kMountPoint = "/run/space/image";

  // Mounts and prepares the image if that has not been done (retrying after a failure), and
  // keeps its /etc/hostname and /etc/hosts naming `hostname`. Thread-safe; never throws: a
  // failure is logged and kept for error().
  void ensure(const Console& con, const std::string& hostname) noexcept;
  // Under gVisor the image is already mounted at `dir` (by runsc): ensure() then prepares it
  // there instead of mounting /dev/vdb. Call before any ensure().
  void use_premounted(std::string dir) { premounted_ = std::move(dir); }
  // An O_PATH descriptor of the image's root once mounted, else -1.
  int root_fd() const;
  // Why the last ensure() failed ("" if it did not, or was never called).
  std::string error() const;

 private:
  void mount_image(const Console& con);
  void write_identity(const std::string& hostname);

  mutable std::mutex mu_;
  Fd root_;
  std::string error_;
  std::string hostname_;    // what /run/space/hostname holds
  std::string premounted_;  // gVisor: where the image already is; "" = /dev/vdb
};

}  // namespace space::guest

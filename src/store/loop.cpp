// Loop device set-up and mount; see loop.h. LOOP_CTL_GET_FREE only names a device that was free a
// moment ago: another process may configure it first, which shows as EBUSY, so we ask again.
#include "store/loop.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/fd.h"

namespace space::store::loop {

std::string mount_image(const std::string& image, const std::string& target,
                        const std::string& fstype, unsigned long flags,
                        const std::string& options) {
  Fd backing(::open(image.c_str(), O_RDWR | O_CLOEXEC));
  if (!backing) throw_errno("open " + image);
  Fd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control)
    throw Error(std::string("open /dev/loop-control: ") + std::strerror(errno), errno,
                "loopback mounts need root and the loop module ('modprobe loop')");
  std::string dev;
  Fd loop;
  for (int attempt = 0;; attempt++) {
    int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) throw_errno("find a free loop device");
    dev = "/dev/loop" + std::to_string(n);
    loop = Fd(::open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) throw_errno("open " + dev);
    loop_config cfg{};
    cfg.fd = static_cast<__u32>(backing.get());
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    std::strncpy(reinterpret_cast<char*>(cfg.info.lo_file_name), image.c_str(), LO_NAME_SIZE - 1);
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &cfg) == 0) break;
    if (errno != EBUSY || attempt >= 20) throw_errno("attach " + image + " to " + dev);
  }
  if (::mount(dev.c_str(), target.c_str(), fstype.c_str(), flags, options.c_str()) != 0)
    throw_errno("mount " + dev + " (" + image + ") on " + target);
  return dev;  // closing `loop` now leaves the device held by the mount alone
}

}  // namespace space::store::loop

// Loopback mounts without losetup: a free loop device from /dev/loop-control, configured over an
// image file in one LOOP_CONFIGURE call with LO_FLAGS_AUTOCLEAR, then mount(2). Autoclear ties the
// loop device's life to the mount: unmounting the filesystem detaches the device, so nothing is
// left to clean up, and a failed mount detaches it as soon as our fd closes.
#pragma once
#include <string>

namespace space::store::loop {

// Mounts the filesystem in `image` on the directory `target` (filesystem type `fstype`, mount(2)
// `flags` and `options`) through a fresh loop device; returns that device's path. Needs root.
std::string mount_image(const std::string& image, const std::string& target,
                        const std::string& fstype, unsigned long flags, const std::string& options);

}  // namespace space::store::loop

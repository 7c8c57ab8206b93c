// VmConfig: what one VM is made of (vCPUs, memory, kernel, disk images, extra kernel cmdline).
// `create` writes it to the sandbox's config.json; the VMM reads it at start. It is a private
// file between the two, so the reader is strict: unknown or mistyped fields are errors.
#pragma once
#include <cstdint>
#include <string>

#include "util/json.h"

namespace space::store {

struct VmConfig {
  std::string id;
  uint32_t vcpus = 1;
  uint32_t memory_mib = 256;
  std::string kernel;         // absolute path of the ELF vmlinux
  std::string rootfs;         // absolute path of the sandbox's private ext4 image
  std::string cmdline_extra;  // appended to the kernel command line the VMM builds
  // The credential directory (cred/paths.h): the VMM forwards guest connections to host port
  // proto::kCredentialPort to <cred_dir>/s/<id>.sock, starting the helper if needed. "" = none
  // (the guest's connections there are refused).
  std::string cred_dir;
  // The ext4 image on the second disk (/dev/vdb): the sandbox's copy of a user image, which
  // guest-init mounts and runs every exec in. "" = that slot has no medium (capacity 0).
  std::string image_disk;
  // The engine that runs it: "vm" (this file's other fields describe a VM) or "gvisor" (rootfs
  // and image_disk are read-only roots the monitor mounts; kernel is empty).
  std::string engine = "vm";
  // gvisor: where runsc's overlay keeps the sandbox's writes ("" = in memory, under the memory
  // limit; a directory of the sandbox's subvolume when --disk-size bounds it).
  std::string overlay_dir;
};

// Reads config.json; throws Error naming the file and the bad field.
VmConfig load_vm_config(const std::string& path);
// Writes config.json atomically, and durably unless `sync` is Volatile.
void save_vm_config(const std::string& path, const VmConfig& c, fs::Sync sync = fs::Sync::Durable);
// The JSON form, and back (strict: unknown keys, bad types and ranges throw).
json::Value vm_config_to_json(const VmConfig& c);
VmConfig vm_config_from_json(const json::Value& v);

}  // namespace space::store

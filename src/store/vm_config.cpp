// config.json (de)serialisation; see vm_config.h.
#include "store/vm_config.h"

#include "store/config.h"
#include "store/paths.h"
#include "util/error.h"

namespace space::store {

json::Value vm_config_to_json(const VmConfig& c) {
  json::Value v =
      json::Object{{"id", c.id},         {"vcpus", c.vcpus},   {"memory_mib", c.memory_mib},
                   {"kernel", c.kernel}, {"rootfs", c.rootfs}, {"cmdline_extra", c.cmdline_extra}};
  if (!c.cred_dir.empty()) v.set("cred_dir", c.cred_dir);
  if (!c.image_disk.empty()) v.set("image_disk", c.image_disk);
  if (c.engine != "vm") v.set("engine", c.engine);
  if (!c.overlay_dir.empty()) v.set("overlay_dir", c.overlay_dir);
  return v;
}

VmConfig vm_config_from_json(const json::Value& v) {
  if (!v.is_object()) fail("VM config must be a JSON object");
  for (auto& [key, _] : v.as_object()) {
    if (key != "id" && key != "vcpus" && key != "memory_mib" && key != "kernel" &&
        key != "rootfs" && key != "cmdline_extra" && key != "cred_dir" && key != "image_disk" &&
        key != "engine" && key != "overlay_dir")
      fail("unknown field \"" + key + "\"");
  }
  VmConfig c;
  c.id = json::string_field(v, "id");
  validate_id(c.id);
  c.vcpus = static_cast<uint32_t>(json::uint_field(v, "vcpus", kMaxCpus));
  c.memory_mib = static_cast<uint32_t>(json::uint_field(v, "memory_mib", kMaxMemoryMib));
  if (c.vcpus == 0) fail("field \"vcpus\": must be at least 1");
  if (c.memory_mib < kMinMemoryMib)
    fail("field \"memory_mib\": must be at least " + std::to_string(kMinMemoryMib));
  c.kernel = json::string_field(v, "kernel");
  c.rootfs = json::string_field(v, "rootfs");
  c.cmdline_extra = json::string_field_or(v, "cmdline_extra", "");
  c.cred_dir = json::string_field_or(v, "cred_dir", "");
  if (!c.cred_dir.empty() && c.cred_dir[0] != '/') fail("field \"cred_dir\": not an absolute path");
  c.image_disk = json::string_field_or(v, "image_disk", "");
  if (!c.image_disk.empty() && c.image_disk[0] != '/')
    fail("field \"image_disk\": not an absolute path");
  c.engine = json::string_field_or(v, "engine", "vm");
  if (c.engine != "vm" && c.engine != "gvisor")
    fail("field \"engine\": \"" + c.engine + "\" is neither \"vm\" nor \"gvisor\"");
  c.overlay_dir = json::string_field_or(v, "overlay_dir", "");
  if (!c.overlay_dir.empty() && c.overlay_dir[0] != '/')
    fail("field \"overlay_dir\": not an absolute path");
  return c;
}

VmConfig load_vm_config(const std::string& path) {
  return json::load_file(path, "VM config", vm_config_from_json);
}

void save_vm_config(const std::string& path, const VmConfig& c, fs::Sync sync) {
  json::save_file(path, vm_config_to_json(c), 0600, sync);
}

}  // namespace space::store

// Unit tests for store/vm_config (config.json): a round trip, strict reading, files.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "store/vm_config.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

using namespace space;

TEST_CASE("config.json: round trip and strictness") {
  store::VmConfig c{"box", 1, 128, "/k/vmlinux", "/s/rootfs.ext4", "quiet"};
  auto back = store::vm_config_from_json(store::vm_config_to_json(c));
  CHECK(back.id == c.id);
  CHECK(back.vcpus == c.vcpus);
  CHECK(back.memory_mib == c.memory_mib);
  CHECK(back.kernel == c.kernel);
  CHECK(back.rootfs == c.rootfs);
  CHECK(back.cmdline_extra == c.cmdline_extra);
  CHECK(back.image_disk.empty());
  CHECK_FALSE(store::vm_config_to_json(c).find("image_disk"));  // no medium: field left out
  c.image_disk = "/s/image.ext4";
  CHECK(store::vm_config_from_json(store::vm_config_to_json(c)).image_disk == "/s/image.ext4");
  auto rel = store::vm_config_to_json(c);
  rel.set("image_disk", "image.ext4");
  CHECK_THROWS_WITH_AS(store::vm_config_from_json(rel), doctest::Contains("image_disk"), Error);
  c.image_disk.clear();

  auto v = store::vm_config_to_json(c);
  v.set("disks", json::Value::array());
  CHECK_THROWS_WITH_AS(store::vm_config_from_json(v), "unknown field \"disks\"", Error);
  v = store::vm_config_to_json(c);
  v.set("vcpus", 0);
  CHECK_THROWS_AS(store::vm_config_from_json(v), Error);
  v = store::vm_config_to_json(c);
  v.set("memory_mib", "lots");
  CHECK_THROWS_AS(store::vm_config_from_json(v), Error);

  test::TempDir d("vmconfig");
  std::string dir = d.path;
  store::save_vm_config(dir + "/config.json", c);
  CHECK(store::load_vm_config(dir + "/config.json").kernel == "/k/vmlinux");
  CHECK_THROWS_WITH_AS(store::load_vm_config(dir + "/missing.json"),
                       doctest::Contains("read VM config"), Error);
}

// Unit tests for store/btrfs that need no btrfs: the filesystem magic, and the probes answering
// "no" off btrfs (skipped when /tmp is on btrfs).
#include <doctest/doctest.h>

#include "store/btrfs.h"
#include "support/temp_dir.h"

using namespace space;

TEST_CASE("btrfs magic and probes off btrfs") {
  CHECK(store::btrfs::is_btrfs_magic(0x9123683E));
  CHECK_FALSE(store::btrfs::is_btrfs_magic(0xEF53));  // ext4
  test::TempDir t("store");
  if (store::btrfs::on_btrfs(t.path)) return;  // the checks below assume /tmp is not btrfs
  CHECK_FALSE(store::btrfs::is_subvolume(t.path));
  CHECK_FALSE(store::btrfs::on_btrfs(t.path + "/missing"));
}

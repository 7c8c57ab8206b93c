// Unit tests for store/store without root or mounts: the set-up decision as a function of what
// the filesystem looks like, the kind `space check` reports, sizes for people, and the paths that
// need no btrfs (an Existing-use probe of a plain root, the refusal to hide
// pre-store sandboxes, removal of plain directories), and, as root with mkfs.btrfs, that a
// loopback store is mounted nosuid and nodev (and an older mount without them remounted).
// Mounting for sandboxes is covered by 40_template.sh.
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <string>

#include "store/btrfs.h"
#include "store/store.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

using namespace space;
using store::StoreAction;
using store::StoreUse;

namespace {
store::StoreProbe probe(bool store_btrfs, bool root_btrfs, bool image, bool plain) {
  store::StoreProbe p;
  p.store_btrfs = store_btrfs;
  p.root_btrfs = root_btrfs;
  p.image_exists = image;
  p.plain_sandboxes = plain;
  return p;
}
}  // namespace

TEST_CASE("plan_store: what set-up does for each state of the filesystem") {
  // In place already (btrfs root or mounted image): nothing, for any use.
  for (bool root : {false, true})
    for (bool image : {false, true}) {
      CHECK(store::plan_store(probe(true, root, image, false), StoreUse::Create) ==
            StoreAction::Ready);
      CHECK(store::plan_store(probe(true, root, image, false), StoreUse::Existing) ==
            StoreAction::Ready);
    }
  // Root on btrfs: plain directories, made only when something is to be created.
  CHECK(store::plan_store(probe(false, true, false, false), StoreUse::Create) ==
        StoreAction::MakeDirs);
  CHECK(store::plan_store(probe(false, true, false, false), StoreUse::Existing) ==
        StoreAction::Nothing);
  // Not btrfs, image present but not mounted (after a reboot): mount, for any use.
  CHECK(store::plan_store(probe(false, false, true, false), StoreUse::Create) ==
        StoreAction::Mount);
  CHECK(store::plan_store(probe(false, false, true, true), StoreUse::Existing) ==
        StoreAction::Mount);
  // Not btrfs, no image: make one, unless that would hide sandboxes made before the store.
  CHECK(store::plan_store(probe(false, false, false, false), StoreUse::Create) ==
        StoreAction::CreateImage);
  CHECK(store::plan_store(probe(false, false, false, true), StoreUse::Create) ==
        StoreAction::Refuse);
  CHECK(store::plan_store(probe(false, false, false, true), StoreUse::Existing) ==
        StoreAction::Nothing);
  CHECK(store::plan_store(probe(false, false, false, false), StoreUse::Existing) ==
        StoreAction::Nothing);
}

TEST_CASE("store_kind: btrfs root or loopback") {
  CHECK(store::store_kind(true, true, false) ==
        "btrfs-root");  // store is a directory on the btrfs root
  CHECK(store::store_kind(true, false, false) == "btrfs-root");  // not made yet
  CHECK(store::store_kind(false, true, true) == "loopback");     // image mounted
  CHECK(store::store_kind(false, false, false) == "loopback");   // image absent or unmounted
  CHECK(store::store_kind(true, true, true) == "loopback");      // something mounted on store/
}

TEST_CASE("human sizes") {
  CHECK(store::human_size(0) == "0 B");
  CHECK(store::human_size(1023) == "1023 B");
  CHECK(store::human_size(1024) == "1.0 KiB");
  CHECK(store::human_size(64ull << 20) == "64.0 MiB");
  CHECK(store::human_size((20ull << 30) + (512ull << 20)) == "20.5 GiB");
}

TEST_CASE(
    "ensure_store on a plain root: Existing makes nothing, Create refuses to hide old sandboxes") {
  test::TempDir t("store");
  if (store::btrfs::on_btrfs(t.path)) return;
  store::Context ctx{t.path + "/root"};
  auto sp = store::ensure_store(ctx, StoreUse::Existing);  // root missing: fine, nothing made
  CHECK_FALSE(fs::exists(t.path + "/root"));
  fs::mkdir_p(sp.sandboxes + "/old");
  store::ensure_store(ctx, StoreUse::Existing);
  CHECK_FALSE(fs::exists(sp.image));
  CHECK_THROWS_WITH_AS(store::ensure_store(ctx, StoreUse::Create),
                       doctest::Contains("holds sandboxes made before the btrfs store"), Error);
  CHECK_FALSE(fs::exists(sp.image));
  CHECK(fs::is_dir(sp.sandboxes + "/old"));
}

TEST_CASE("status of a store not made yet") {
  test::TempDir t("store");
  if (store::btrfs::on_btrfs(t.path)) return;
  auto s = store::store_status(store::Context{t.path}, 7);
  CHECK(s.kind == "loopback");
  CHECK_FALSE(s.ready);
  CHECK_FALSE(s.image_exists);
  CHECK_FALSE(s.mounted);
  CHECK(store::store_status_text(s).find("not created yet (7 GiB") != std::string::npos);
  auto j = store::store_status_json(s);
  CHECK(j.at("kind").as_string() == "loopback");
  CHECK(j.at("image").as_string() == t.path + "/store.img");
}

TEST_CASE("remove_store_tree removes plain directories (sandboxes made before the store)") {
  test::TempDir t("store");
  fs::mkdir_p(t.path + "/sb/x/y");
  fs::write_file_atomic(t.path + "/sb/x/y/f", "data");
  store::remove_store_tree(t.path + "/sb");
  CHECK_FALSE(fs::exists(t.path + "/sb"));
  CHECK_NOTHROW(store::remove_store_tree(t.path + "/sb"));  // missing is fine
}

// Needs root and mkfs.btrfs, and /tmp not on btrfs (there no loopback store is made).
TEST_CASE("a loopback store is mounted nosuid and nodev (an older mount is remounted so); quotas" *
          doctest::skip(::geteuid() != 0 || proc::find_program("mkfs.btrfs").empty() ||
                        store::btrfs::on_btrfs("/tmp"))) {
  test::TempDir t("store-flags");
  fs::write_file_atomic(t.path + "/config.toml", "[store]\nsize_gib = 1\n");
  store::Context ctx{t.path};
  auto sp = store::ensure_store(ctx, StoreUse::Create);
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{sp.dir};
  auto flags = [&] {
    struct statvfs vf {};
    REQUIRE(::statvfs(sp.dir.c_str(), &vf) == 0);
    return vf.f_flag;
  };
  CHECK((flags() & ST_NOSUID) != 0);
  CHECK((flags() & ST_NODEV) != 0);
  // As an earlier version mounted it: setuid files and device nodes would work there.
  REQUIRE(::mount(nullptr, sp.dir.c_str(), nullptr, MS_REMOUNT | MS_NOATIME, nullptr) == 0);
  REQUIRE((flags() & ST_NODEV) == 0);
  store::ensure_store(ctx, StoreUse::Existing);
  CHECK((flags() & ST_NOSUID) != 0);
  CHECK((flags() & ST_NODEV) != 0);
  // Quotas: off in a new store; on once enable_quota ran, and status and check say so.
  CHECK_FALSE(store::btrfs::quota_enabled(sp.dir));
  CHECK_FALSE(store::store_status(ctx, 1).quotas);
  store::btrfs::enable_quota(sp.dir);
  CHECK(store::btrfs::quota_enabled(sp.dir));
  store::StoreStatus st = store::store_status(ctx, 1);
  CHECK(st.quotas);
  CHECK(store::store_status_json(st).at("quotas").as_bool());
  CHECK(store::store_status_text(st).find("quotas on") != std::string::npos);
}

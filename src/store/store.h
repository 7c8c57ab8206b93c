// The store: <root>/store, the btrfs filesystem that holds templates and sandboxes as subvolumes
// (store/templates/<name>, store/sandboxes/<id>), so a sandbox is a copy-on-write snapshot of
// its template. Two cases: the root is on btrfs already, and the store is a plain directory in
// it; or the root is not, and the store is a sparse loopback image <root>/store.img (config.toml
// [store] size_gib) made with mkfs.btrfs on first use and mounted on <root>/store, again after a
// reboot. ensure_store() is called by every command that needs the store; once it is in place
// that costs one statfs. The set-up path is serialised by a flock on the root directory.
// Sandboxes made before the store existed are plain directories; remove_store_tree() and the
// listing code handle both kinds.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "store/context.h"
#include "store/paths.h"
#include "util/json.h"

namespace space::store {

// What ensure_store() found, and the decision it takes from it (plan_store, a pure function).
struct StoreProbe {
  bool store_btrfs = false;      // <root>/store/sandboxes is on btrfs: the store is in place
  bool root_btrfs = false;       // <root> (or its nearest existing parent) is on btrfs
  bool image_exists = false;     // <root>/store.img exists
  bool plain_sandboxes = false;  // a non-btrfs <root>/store/sandboxes has entries (pre-store)
};
enum class StoreUse { Create, Existing };  // make the store if missing / only mount an existing one
enum class StoreAction {
  Ready,        // nothing to do
  MakeDirs,     // btrfs root: create store/, store/templates, store/sandboxes as directories
  Mount,        // mount the existing image (after a reboot)
  CreateImage,  // make, format and mount a new image
  Refuse,       // making the image would hide sandboxes made before the store existed
  Nothing,      // no store and none wanted (StoreUse::Existing): callers see an empty store
};
StoreAction plan_store(const StoreProbe& p, StoreUse use);

// Makes sure the store is in place for `use` and returns its paths. Cheap once it is.
StorePaths ensure_store(const Context& ctx, StoreUse use);

// The store as `space check` reports it. Never creates or mounts anything.
struct StoreStatus {
  std::string kind;  // "btrfs-root" or "loopback"
  std::string dir, image;
  bool ready = false;         // btrfs is in place at <root>/store
  bool image_exists = false;  // loopback: store.img exists
  bool mounted = false;       // loopback: store.img is mounted on <root>/store
  uint64_t image_bytes = 0;   // loopback: the image's apparent size
  uint64_t image_used = 0;    // loopback: bytes the image occupies on the host disk
  uint64_t fs_bytes = 0;      // when ready: size of the btrfs filesystem
  uint64_t fs_free = 0;       // when ready: bytes available in it
  uint32_t size_gib = 0;      // config.toml [store] size_gib (the size of a new image)
  // When ready: btrfs quotas are on (a --disk-size or [limits] disk_size turned them on), which
  // every later create pays for in accounting (space-create(1)).
  bool quotas = false;
};
// "btrfs-root" or "loopback": which case applies (a pure function of the probe results).
std::string store_kind(bool root_btrfs, bool store_btrfs, bool store_is_mount);
StoreStatus store_status(const Context& ctx, uint32_t size_gib);
json::Value store_status_json(const StoreStatus& s);
// One line for `space check`, e.g. "loopback /r/store.img (20 GiB), mounted on /r/store, 19.8 GiB
// free".
std::string store_status_text(const StoreStatus& s);

// A size for people: "512 B", "64.0 MiB", "20.0 GiB" (binary units, one decimal).
std::string human_size(uint64_t bytes);

// Removes a sandbox or template directory: deletes it as a subvolume if it is one, else as a
// plain directory tree. A missing path is fine.
void remove_store_tree(const std::string& path);

// Makes `dst` a new subvolume (with `src`'s mode) holding a copy of directory `src`'s contents by
// fs::copy_tree: reflinks on btrfs, shared copy-on-write with `src`; names `skip` is true for are
// left out. A subvolume snapshot would share the same, but each one commits a btrfs transaction
// (milliseconds, serialised across concurrent callers), while a new subvolume and reflinks do
// not. On failure `dst` is removed. The error's errno is ENOENT when `src` does not exist,
// EEXIST when `dst` does.
void clone_into_subvolume(const std::string& src, const std::string& dst,
                          const std::function<bool(const std::string&)>& skip = {});

}  // namespace space::store

// Where a sandbox's files live, derived from the root and its id and nothing else, so every
// process (create, the VMM, destroy) computes the same paths. Persistent files sit under
// <root>/store/sandboxes/<id>; sockets sit under the short run directory <run base>/<id>
// (sun_path is 108 bytes), the run base being $SPACE_RUN_DIR or /run/space. A template build
// runs a VMM whose files are in a template directory instead: paths_in() names those.
#pragma once
#include <string>
#include <string_view>

namespace space::store {

struct StorePaths {       // all absolute
  std::string root;       // <root>
  std::string dir;        // <root>/store
  std::string image;      // <root>/store.img (used only when the root is not on btrfs)
  std::string templates;  // <root>/store/templates
  std::string sandboxes;  // <root>/store/sandboxes
  std::string images;     // <root>/store/images
  std::string pool;       // <root>/store/pool: <template>/<member>, core/pool.h
};

struct SandboxPaths {        // all absolute
  std::string dir;           // <root>/store/sandboxes/<id>: a subvolume (a plain directory
                             // for sandboxes made before the btrfs store)
  std::string state;         // <dir>/state.json
  std::string config;        // <dir>/config.json  (VmConfig written by create, read by the VMM)
  std::string rootfs;        // <dir>/rootfs.ext4  (private copy of the image)
  std::string image_disk;    // <dir>/image.ext4   (private copy of a user image, if any)
  std::string image_meta;    // <dir>/image.json   (that image's metadata and config)
  std::string console_log;   // <dir>/console.log
  std::string vmm_log;       // <dir>/vmm.log
  std::string lock;          // <dir>/lock  (flock target)
  std::string activity;      // <dir>/activity  (idle tracking: store/activity.h)
  std::string run_dir;       // <run base>/<id>
  std::string control_sock;  // <run_dir>/control.sock
  std::string vsock_sock;    // <run_dir>/vsock.sock
};

// The store paths under `root` (made absolute against the cwd if relative).
StorePaths store_paths(const std::string& root);
// Paths of sandbox `id` under `root` (made absolute against the cwd if relative). Validates id.
SandboxPaths sandbox_paths(const std::string& root, const std::string& id);
// <run base>/<id>: sandbox `id`'s run directory (its sockets); validates the id.
std::string sandbox_run_dir(const std::string& id);
// <dir>/<id><suffix>: sandbox `id`'s entry in a directory of one entry per sandbox (the broker's
// policies and audit logs, the helper's CAs, saved network namespaces); validates the id.
std::string sandbox_entry(const std::string& dir, const std::string& id,
                          std::string_view suffix = "");
// <root>/store/templates/<name> and <root>/store/images/<name>: the one place these are joined,
// so a name is validated (as a "template name", an "image name") before it becomes a path.
std::string template_dir(const std::string& root, const std::string& name);
std::string image_dir(const std::string& root, const std::string& name);
// <root>/store/pool/<template>: a gvisor template's warm pool (core/pool.h); validates the name.
std::string template_pool_dir(const std::string& root, const std::string& template_name);
// The same file names for a VMM whose files live in `dir` and sockets in `run_dir` (both absolute).
SandboxPaths paths_in(const std::string& dir, const std::string& run_dir);
// A gvisor pool member's paths (core/pool.h): <root>/store/pool/<template>/<member>, sockets in
// <run base>/.pool-<member>; both renamed to sandbox_paths(root, id)'s when create takes it.
SandboxPaths pool_member_paths(const std::string& root, const std::string& template_name,
                               const std::string& member);
// Removes the links a pool member handed out as sandbox `id` leaves in the run base
// (.pool-<member> -> <id>: core/pool.h); the rest is left. Throws only on a failed unlink.
void remove_run_aliases(const std::string& id);
// <root>/store/sandboxes: the directory holding one directory per sandbox.
std::string sandboxes_dir(const std::string& root);
// $SPACE_RUN_DIR, or /run/space when unset or empty.
std::string run_base();
// Throws space::Error with a hint unless id matches [a-z0-9][a-z0-9_.-]{0,63}. `what` names the
// kind of name in the message ("sandbox id", "template name").
void validate_id(const std::string& id, const std::string& what = "sandbox id");
// A fresh random id: 12 lowercase hex characters.
std::string generate_id();

}  // namespace space::store

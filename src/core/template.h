// Templates: pre-booted VMs that sandboxes start from. A template is a read-only subvolume
// store/templates/<name> holding rootfs.ext4 (the disk), memory and vmstate (the VMM's snapshot
// of the running guest, taken once guest-init answered) and template.toml (what it was built
// from). `create` snapshots it into store/sandboxes/<id> and restores the VMM from the copy.
// A build works in a hidden subvolume store/templates/.<name>.tmp-<rand>, flock'ed while it
// runs, and renames it into place only when complete; a later build sweeps the leftovers of
// builds that died (the flock is free).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/context.h"
#include "store/paths.h"
#include "util/json.h"

namespace space::core {

// template.toml's layout version. A file with a higher one was written by a newer space.
constexpr uint32_t kTemplateFormat = 1;

// template.toml.
struct TemplateMeta {
  uint32_t format = kTemplateFormat;
  std::string name;
  std::string created;           // RFC 3339, UTC
  std::string space_version;     // the space that built it
  uint32_t snapshot_format = 0;  // the VMM's vmstate format version
  uint32_t vcpus = 1;
  uint32_t memory_mib = 256;
  std::string kernel;  // the kernel it booted (absolute); "" for gvisor
  std::string rootfs;  // the image its rootfs.ext4 was copied from (absolute)
  // The engine its sandboxes run on (launch/engine.h). A gvisor template is its rootfs, image and
  // size, and no snapshot: runsc starts a sandbox afresh (`run --detach`, ~150 ms) sooner than
  // it restores a checkpoint (`restore --detach`, ~165 ms), so no memory or vmstate is kept.
  std::string engine = "vm";
};

// template.toml text for `m`.
std::string template_meta_to_toml(const TemplateMeta& m);
// Parses and checks template.toml text (strict: unknown keys, wrong types, out-of-range values
// and a newer format are errors); `source` names it in messages.
TemplateMeta parse_template_meta(std::string_view text, const std::string& source);
// Throws unless a sandbox can be restored from a template described by `m`: it was named
// `name` and its snapshot format is the one this VMM reads. The hint says to rebuild it.
void check_restorable(const TemplateMeta& m, const std::string& name);
// Reads <dir>/template.toml.
TemplateMeta read_template_meta(const std::string& dir);
// <dir>/template.toml.
std::string template_meta_path(const std::string& dir);

// True if `name` is a build's working directory (or anything else hidden) rather than a template.
bool is_build_dir_name(std::string_view entry);

struct TemplateInfo {
  std::string name;
  std::optional<TemplateMeta> meta;  // unset when template.toml is unreadable
  bool restorable = false;           // this space can create sandboxes from it
  std::string problem;               // why it is unreadable or not restorable
  uint64_t disk_bytes = 0;           // allocated size of its files (before any sharing)
};
// Every template, sorted by name. Does not create the store.
std::vector<TemplateInfo> list_templates(const store::Context& ctx);
// Deletes the working directories of template builds that died (SIGKILL), with their run
// directories, after killing a VMM that outlived its build; list_templates() does it first.
void sweep_dead_template_builds(const store::StorePaths& sp);
// The run directory (sockets) of the template build whose working directory ends in `rand`.
std::string template_build_run_dir(const std::string& rand);
// What is known of template `name` in directory `dir`: never throws.
TemplateInfo template_info(const std::string& name, const std::string& dir);
// Template `name`; throws (with a hint) if it does not exist.
TemplateInfo inspect_template(const store::Context& ctx, const std::string& name);
// The JSON form of `t` (template list and inspect --format json).
json::Value template_info_json(const TemplateInfo& t);
// Deletes template `name`. Sandboxes made from it are independent snapshots and keep working.
void remove_template(const store::Context& ctx, const std::string& name);

}  // namespace space::core

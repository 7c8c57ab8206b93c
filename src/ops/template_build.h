// Making templates: `space template build` boots a VM (or a gvisor sandbox), optionally runs a
// command in it and snapshots it as a template, all or nothing; `template export` and `import`
// copy one to and from a directory. What a template is, and reading the installed ones, is
// core/template.h.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/template.h"
#include "store/context.h"

namespace space::ops {

struct TemplateBuildOptions {
  std::string name;
  std::optional<uint32_t> vcpus;       // unset = config.toml, else 1
  std::optional<uint32_t> memory_mib;  // unset = config.toml, else 256
  std::string kernel;                  // "" = config.toml, else the cached default
  std::string rootfs;                  // "" = config.toml, else the cached default
  bool force = false;                  // replace an existing template of that name
  std::string image;                   // boot with this image attached ("" = none)
  uint64_t disk_bytes = 0;             // grow that image's copy (0 = as imported)
  std::string run;     // a shell command run in the booted VM (in the image) before the snapshot
  std::string engine;  // --engine: "" = launch/engine.h's choice
  std::function<void(const std::string&)> progress;  // one line per step, may be empty
};
// Boots a VM (with a copy of image o.image attached and mounted, if given), waits for
// guest-init, runs o.run (sh -c, output to our stderr; it must exit 0), snapshots the VM and
// installs the result as template `o.name`; all or nothing. Sandboxes made from a template built
// with an image get its image, as it was at the snapshot, through the template's snapshot.
// Waits at most $SPACE_BOOT_TIMEOUT seconds for the boot.
core::TemplateMeta build_template(const store::Context& ctx, const TemplateBuildOptions& o);

// The files of a template besides template.toml, as `template export` writes them.
inline constexpr const char* kTemplateDataFiles[] = {"rootfs.ext4", "memory", "vmstate"};
// The files only a template built with --image has (both or neither).
inline constexpr const char* kTemplateImageFiles[] = {"image.ext4", "image.json"};
// Copies template `name` into the new directory `dir` (template.toml, rootfs.ext4, memory,
// vmstate; sparse, reflinked where the filesystem allows): a portable copy another root or
// host of the same kind can import. All or nothing: `dir` appears only when complete.
void export_template(const store::Context& ctx, const std::string& name, const std::string& dir);
// Installs the exported template in `dir` as template `name` (its template.toml is rewritten
// with that name), after checking that this space can restore it (template.toml parses, the
// snapshot format is this VMM's, vmstate decodes, every file is a regular file). All or
// nothing, like build; `force` replaces an existing template of that name.
core::TemplateMeta import_template(const store::Context& ctx, const std::string& name,
                                   const std::string& dir, bool force);

}  // namespace space::ops

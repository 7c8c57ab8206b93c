// Using an image in a sandbox. A sandbox made with --image gets two files in its directory: a
// reflink of the image's disk (image.ext4, its private, writable copy, which the VMM serves as
// /dev/vdb and guest-init mounts as the root of every exec) and a copy of the image's image.json
// (whose config applies to each exec). A template built with --image holds the same two files,
// so its sandboxes get them through the template's snapshot. This file owns attaching those
// files and what the image's config means for an exec: Env under the exec's own -e, WorkingDir
// unless -w, User unless -u, and Entrypoint + Cmd as the command of `run --image` without one.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/exec_options.h"
#include "image/image.h"
#include "store/context.h"
#include "store/paths.h"

namespace space::core {

// Copies image `name` into a sandbox (or template) directory: its disk to p.image_disk (a
// reflink on btrfs, so it costs no data) and image.json to p.image_meta. `disk_bytes` larger than
// the image's capacity grows the copy (resize2fs on the host, before any guest sees it); 0 keeps
// it; smaller is an error. Throws (with a hint) if the image does not exist or is unreadable.
image::ImageMeta attach_image(const store::Context& ctx, const std::string& name,
                              const store::SandboxPaths& p, uint64_t disk_bytes = 0);
// The image a sandbox or template directory holds (p.image_meta), if any. Throws if the file
// exists but is unreadable.
std::optional<image::ImageMeta> attached_image(const store::SandboxPaths& p);
// Applies an image's config to an exec: its Env first and the exec's entries over it, its
// WorkingDir when the exec names none, its User when the exec gives no uid or gid.
void apply_image_config(const store::ImageConfig& c, agent::ExecOptions& o);
// What `run --image NAME` runs without a command: Entrypoint then Cmd. Throws (naming the fix)
// when the image has neither.
std::vector<std::string> image_command(const image::ImageMeta& m);

}  // namespace space::core

// Building something in the store all or nothing (a template, an image): the work happens in a
// hidden subvolume `.<name>.tmp-<rand>` next to its destination, flock'ed while it runs, and is
// renamed into place only when complete; a later build deletes the leftovers of builds that died
// (whose flock is free). Shared by template build/import and image import.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "util/fd.h"

namespace space::image {

// The marker between a name and the random part of a build directory's name.
inline constexpr std::string_view kBuildMarker = ".tmp-";

// An exclusive, non-blocking flock on a directory; invalid if another process holds it.
Fd lock_dir(const std::string& dir);
// `<parent>/.<name>.tmp-<8 random characters>`.
std::string build_dir_for(const std::string& parent, const std::string& name);
// Moves the finished build `build` to `dest` (`what` and `name` for messages, "template",
// "default"): fails if `dest` exists unless `force`, in which case the two are swapped
// atomically and the old one (now at `build`) is deleted.
void install_build(const std::string& build, const std::string& dest, const std::string& what,
                   const std::string& name, bool force);
// Deletes the build directories under `parent` whose builds died (their flock is free);
// `before_remove(dir)`, if given, runs first (a template build's stops its VMM).
void sweep_dead_builds(const std::string& parent, const std::string& what,
                       const std::function<void(const std::string&)>& before_remove = {});
// Bytes allocated to the files directly in `dir` (before any sharing between snapshots).
uint64_t allocated_bytes(const std::string& dir);
}  // namespace space::image

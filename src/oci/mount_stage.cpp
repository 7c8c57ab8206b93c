// stage_mounts: see mount_stage.h. One TreeWriter serves every mount, so a later mount beneath
// an earlier one (a volume at /data and another at /data/cache) lands inside it, and a symbolic
// link an earlier mount brought in is never a way out for a later one.
#include "oci/mount_stage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/tree_walker.h"
#include "util/tree_writer.h"

namespace space::oci {
namespace {

constexpr size_t kChunk = 1 << 20;

// `rel` + "/" + `name`, or `rel` for the walk's top ("").
std::string beneath(const std::string& rel, const std::string& name) {
  return name.empty() ? rel : rel + "/" + name;
}

// Copies the tree at `src` (an O_PATH descriptor, not a link) into `w` at `rel`.
void stage_one(TreeWriter& w, int src, const std::string& rel) {
  WalkOptions wo;
  walk_tree(src, wo, [&](const TreeEntry& from, int fd) {
    TreeEntry e = from;
    e.name = beneath(rel, from.name);
    if (e.kind == EntryKind::Hardlink) e.target = beneath(rel, from.target);
    const bool wants = w.begin_entry(e);
    if (e.kind != EntryKind::File) return;
    uint64_t off = 0;
    send_file_data(fd, e.size, kChunk, [&](const uint8_t* p, size_t n) {
      if (wants) w.data({p, n}, off);
      off += n;
    });
    if (wants) w.end_file();
  });
}

}  // namespace

StageStats stage_mounts(const Spec& spec, const std::string& stage) {
  StageStats st;
  if (::mkdir(stage.c_str(), 0700) != 0) throw_errno("create " + stage);
  try {
    Fd root(::open(stage.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root) throw_errno("open " + stage);
    TreeWriteOptions o;
    o.devices = false;
    o.skip_devices = true;
    TreeWriter w(root.get(), o, "staging the bundle's mounts");
    for (size_t i = 0; i < spec.mounts.size(); i++) {
      const Mount& m = spec.mounts[i];
      if (!mount_copied_in(m)) continue;
      const std::string what =
          "config.json: mounts[" + std::to_string(i) + "] (" + m.destination + ")";
      // Checked by parse_spec already; a Spec made otherwise is held to the same rule.
      std::string_view dest = m.destination;
      while (!dest.empty() && dest.front() == '/') dest.remove_prefix(1);
      std::vector<std::string> c;
      try {
        c = entry_components(dest);
      } catch (const Error& e) {
        throw Error(what + ": " + e.what(), e.err(),
                    "a mount's destination stays inside the container");
      }
      if (c.empty()) continue;  // "/": the container's root is the image, not a copy
      Fd src(::open(m.source.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (!src) {
        if (errno == ENOENT) {
          log::warn("mount " + m.destination + ": source " + m.source + " is missing; skipped");
          continue;
        }
        throw_errno(what + ": open source " + m.source);
      }
      struct stat sb {};
      if (::fstat(src.get(), &sb) != 0) throw_errno(what + ": stat " + m.source);
      if (S_ISLNK(sb.st_mode))
        fail(what + ": source " + m.source + " is a symbolic link",
             "space copies a mount's content into the VM as root and follows no link: name the "
             "link's target as the source");
      if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) {
        st.skipped++;  // a device or socket: the guest has its own
        continue;
      }
      try {
        stage_one(w, src.get(), join_components(c));
      } catch (const Error& e) {
        throw Error(what + ": " + e.what(), e.err(), e.hint());
      }
      st.mounts++;
    }
    w.finish();
    st.skipped += w.stats().skipped;
  } catch (...) {
    fs::remove_tree(stage);
    throw;
  }
  if (st.mounts == 0) fs::remove_tree(stage);
  return st;
}

}  // namespace space::oci

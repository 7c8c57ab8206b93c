// Attaching an image to a sandbox, and its config applied to execs; see image_use.h.
#include "core/image_use.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "store/paths.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/process.h"

namespace space::core {
namespace {

// Grows the ext4 filesystem in `disk` to `bytes`: a larger sparse file, then resize2fs.
void grow_disk(const std::string& disk, uint64_t from, uint64_t bytes) {
  if (bytes < from)
    fail("--disk-size " + store::human_size(bytes) + " is smaller than the image's disk (" +
             store::human_size(from) + ")",
         "pass --disk-size " + store::human_size(from) + " or more, or leave it out");
  if (bytes == from) return;
  if (::truncate(disk.c_str(), static_cast<off_t>(bytes)) != 0) throw_errno("grow " + disk);
  std::string resize = proc::find_program("resize2fs");
  if (resize.empty()) fail("resize2fs not found", "apt-get install e2fsprogs");
  auto r = proc::run({resize, "-f", disk});
  if (r.ok()) return;
  std::string out = r.output.size() > 600 ? r.output.substr(r.output.size() - 600) : r.output;
  fail("resize2fs " + proc::describe_status(r.status) + ": " + out);
}

}  // namespace

image::ImageMeta attach_image(const store::Context& ctx, const std::string& name,
                              const store::SandboxPaths& p, uint64_t disk_bytes) {
  try {
    image::ImageInfo info = image::inspect_image(ctx, name);
    if (!info.meta)
      fail("it is unreadable: " + info.problem,
           "import it again: space image import --force " + name + " SOURCE");
    std::string dir = store::image_dir(ctx.root, name);
    fs::copy_file(dir + "/disk.ext4", p.image_disk, 0600);
    fs::copy_file(dir + "/image.json", p.image_meta, 0600);
    if (disk_bytes) {
      grow_disk(p.image_disk, info.meta->disk_bytes, disk_bytes);
      info.meta->disk_bytes = disk_bytes;
    }
    return *info.meta;
  } catch (Error& e) {
    e.add_context("image " + name);
    throw;
  }
}

std::optional<image::ImageMeta> attached_image(const store::SandboxPaths& p) {
  struct stat st {};
  if (::stat(p.image_meta.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("stat " + p.image_meta);
  }
  return json::load_file(p.image_meta, "image metadata", [&](const json::Value& v) {
    return image::parse_image_meta(v, p.image_meta);
  });
}

void apply_image_config(const store::ImageConfig& c, agent::ExecOptions& o) {
  std::vector<std::string> env = c.env;
  env.insert(env.end(), o.env.begin(), o.env.end());  // later entries win in the guest
  o.env = std::move(env);
  if (o.cwd.empty()) o.cwd = c.working_dir;
  if (o.user.empty() && !o.uid && !o.gid) o.user = c.user;
}

std::vector<std::string> image_command(const image::ImageMeta& m) {
  std::vector<std::string> argv = m.config.entrypoint;
  argv.insert(argv.end(), m.config.cmd.begin(), m.config.cmd.end());
  if (argv.empty())
    fail("image " + m.name + " names no command (no Entrypoint or Cmd)",
         "give one: space run --image " + m.name + " -- CMD [ARG...]");
  return argv;
}

}  // namespace space::core

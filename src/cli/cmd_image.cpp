// `space image import|build|list|inspect|rm`: the users' own root filesystems (image/image.h).
// import and build print their progress on stderr ("image: applying layer 2/5 ...", a line per
// step; on a terminal also one status line: entries and bytes unpacked, or what mmdebstrap is
// doing) and the name on stdout.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cli/app.h"
#include "cli/errors.h"
#include "cli/table.h"
#include "image/debian.h"
#include "image/image.h"
#include "store/store.h"
#include "util/json.h"
#include "util/log.h"
#include "util/terminal.h"
#include "util/utf8.h"

namespace space::cli {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// Progress on stderr: a line per step; on a terminal, a status line under them that rewrites
// itself (at most ten times a second) and is cleared before the next step or the end.
class ProgressOut {
 public:
  ProgressOut() : tty_(::isatty(2) == 1) {}
  ~ProgressOut() { clear(); }
  ProgressOut(const ProgressOut&) = delete;
  ProgressOut& operator=(const ProgressOut&) = delete;
  void step(const std::string& line) {
    clear();
    std::fprintf(stderr, "image: %s\n", utf8::printable(line).c_str());
    std::fflush(stderr);
  }
  void status(const std::string& line) {
    if (!tty_) return;
    auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::string text = "image: " + line;
    auto size = term::window_size(2);
    if (size && size->cols > 1 && text.size() >= size->cols) text.resize(size->cols - 1);
    std::fprintf(stderr, "\r\033[K%s", utf8::printable(text).c_str());
    std::fflush(stderr);
    shown_ = true;
  }

 private:
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

// What import and build print: the image's name, or its image.json with --format json.
void print_image(const GlobalOptions& g, const image::ImageMeta& m) {
  if (g.json())
    print_json(image::image_meta_json(m));
  else
    std::printf("%s\n", m.name.c_str());
}

// --size and --force, which import and build share.
void add_disk_flags(CLI::App* cmd, std::string& size, bool& force) {
  cmd->add_option("--size", size, "Capacity of the image's disk (sparse), e.g. 8G")
      ->default_val("4G");
  cmd->add_flag("--force,-f", force, "Replace an existing image of that name");
}

void add_image_import(CLI::App& parent, GlobalOptions& g) {
  auto* cmd =
      add_command(parent, "import",
                  "Import an OCI layout or archive, a docker archive, a tarball or a directory");
  struct Args {
    image::ImageImportOptions opts;
    std::string size;
  };
  auto* a = g.hold<Args>();  // freed with GlobalOptions
  cmd->add_option("name", a->opts.name, "Image name")->required();
  cmd->add_option("source", a->opts.source, "What to import (a file or a directory)")->required();
  cmd->add_option("--platform", a->opts.platform,
                  "os/arch[/variant] to take from a multi-platform image")
      ->default_val("linux/amd64");
  add_disk_flags(cmd, a->size, a->opts.force);
  cmd->callback([&g, a] {
    a->opts.disk_bytes = image::parse_disk_size(a->size);
    ProgressOut out;
    a->opts.progress = [&out](const std::string& line) { out.step(line); };
    a->opts.status = [&out](const std::string& line) { out.status(line); };
    print_image(g, image::import_image(g.context(), a->opts));
  });
}

void add_image_build(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(
      parent, "build",
      "Build an image from Debian packages with mmdebstrap (needs root and the network)");
  struct Args {
    image::DebianBuildOptions opts;
    std::string packages, size;
  };
  auto* a = g.hold<Args>();  // freed with GlobalOptions
  cmd->add_option("name", a->opts.name, "Image name")->required();
  cmd->add_option("--debian", a->opts.suite,
                  "Debian suite to build from: bookworm, trixie, sid, stable, testing ...")
      ->required();
  cmd->add_option("--packages", a->packages,
                  "Packages to install on top of the essential set and apt, comma-separated "
                  "(NAME, NAME=VERSION or NAME/RELEASE)");
  cmd->add_option("--mirror", a->opts.mirror,
                  "Debian archive URL (default: the host's apt sources when SUITE is the host's "
                  "own release, else http://deb.debian.org/debian)");
  add_disk_flags(cmd, a->size, a->opts.force);
  cmd->callback([&g, a] {
    a->opts.disk_bytes = image::parse_disk_size(a->size);
    a->opts.packages = image::debian::split_packages(a->packages);
    ProgressOut out;
    a->opts.progress = [&out](const std::string& line) { out.step(line); };
    a->opts.status = [&out](const std::string& line) { out.status(line); };
    print_image(g, image::build_debian_image(g.context(), a->opts));
  });
}

void add_image_list(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(parent, "list", "List images");
  cmd->alias("ls");
  cmd->callback([&g] {
    auto all = image::list_images(g.context());
    auto row = [](const image::ImageInfo& i) -> std::vector<std::string> {
      if (!i.meta) {
        log::warn("image " + i.name + " is unreadable: " + i.problem);
        return {i.name, "-", "-", store::human_size(i.used_bytes), "(unreadable)"};
      }
      return {i.name, i.meta->kind, store::human_size(i.meta->disk_bytes),
              store::human_size(i.used_bytes), i.meta->created};
    };
    print_list(g.json(), all, image::image_info_json, {"NAME", "KIND", "SIZE", "USED", "CREATED"},
               row);
  });
}

void add_image_inspect(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(parent, "inspect", "Show one image's source, digest and config");
  auto* name = g.hold<std::string>();  // freed with GlobalOptions
  cmd->add_option("name", *name, "Image name")->required();
  cmd->callback([&g, name] {
    auto i = image::inspect_image(g.context(), *name);
    if (g.json()) {
      print_json(image::image_info_json(i), 2);
      return;
    }
    std::vector<std::pair<std::string, std::string>> rows = {{"name", i.name}};
    if (i.meta) {
      const auto& m = *i.meta;
      rows.insert(rows.end(), {{"kind", m.kind},
                               {"source", m.source},
                               {"digest", m.digest.empty() ? "-" : m.digest},
                               {"platform", m.platform.empty() ? "-" : m.platform},
                               {"created", m.created},
                               {"disk", store::human_size(m.disk_bytes)},
                               {"env", join(m.config.env)},
                               {"entrypoint", join(m.config.entrypoint)},
                               {"cmd", join(m.config.cmd)},
                               {"working dir", m.config.working_dir},
                               {"user", m.config.user}});
    } else {
      rows.push_back({"error", i.problem});
    }
    rows.push_back({"used", store::human_size(i.used_bytes)});
    print_pairs(rows, 12);
  });
}

void add_image_rm(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(parent, "rm", "Delete images");
  cmd->alias("remove");
  auto* names = g.hold<std::vector<std::string>>();  // freed with GlobalOptions
  cmd->add_option("name", *names, "Image names")->required();
  cmd->callback([&g, names] {
    each_item(*names, g, [&](const std::string& name) { image::remove_image(g.context(), name); });
  });
}

}  // namespace

void register_image(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "image", "Import, build, list, inspect and remove images");
  cmd->require_subcommand(1);
  add_image_import(*cmd, g);
  add_image_build(*cmd, g);
  add_image_list(*cmd, g);
  add_image_inspect(*cmd, g);
  add_image_rm(*cmd, g);
}

}  // namespace space::cli

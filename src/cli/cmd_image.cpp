// `space image import|list|inspect|rm`: the users' own root filesystems (core/image.h). import
// prints its progress on stderr ("image: applying layer 2/5 ...") and the name on stdout.
#include <cstdio>

#include "cli/app.h"
#include "cli/errors.h"
#include "cli/table.h"
#include "core/image.h"
#include "store/store.h"
#include "util/json.h"
#include "util/log.h"

namespace space::cli {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

void add_import(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = parent.add_subcommand(
      "import", "Import an OCI layout or archive, a docker archive, a tarball or a directory");
  cmd->fallthrough();
  struct Args {
    core::ImageImportOptions opts;
    std::string size;
  };
  auto* a = new Args;  // lives as long as the process, like the CLI11 tree
  cmd->add_option("name", a->opts.name, "Image name")->required();
  cmd->add_option("source", a->opts.source, "What to import (a file or a directory)")->required();
  cmd->add_option("--platform", a->opts.platform,
                  "os/arch[/variant] to take from a multi-platform image")
      ->default_val("linux/amd64");
  cmd->add_option("--size", a->size, "Capacity of the image's disk (sparse), e.g. 8G")
      ->default_val("4G");
  cmd->add_flag("--force,-f", a->opts.force, "Replace an existing image of that name");
  cmd->callback([&g, a] {
    a->opts.disk_bytes = core::parse_disk_size(a->size);
    a->opts.progress = [](const std::string& line) {
      std::fprintf(stderr, "image: %s\n", line.c_str());
      std::fflush(stderr);
    };
    auto m = core::import_image({g.root, g.log_level, g.log_format}, a->opts);
    if (g.format == "json")
      std::printf("%s\n", json::serialize(core::image_meta_json(m)).c_str());
    else
      std::printf("%s\n", m.name.c_str());
  });
}

void add_list(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = parent.add_subcommand("list", "List images");
  cmd->fallthrough();
  cmd->alias("ls");
  cmd->callback([&g] {
    auto all = core::list_images({g.root, g.log_level, g.log_format});
    if (g.format == "json") {
      json::Value arr = json::Value::array();
      for (const auto& i : all) arr.push_back(core::image_info_json(i));
      std::printf("%s\n", json::serialize(arr, 2).c_str());
      return;
    }
    std::vector<std::vector<std::string>> rows = {{"NAME", "KIND", "SIZE", "USED", "CREATED"}};
    for (const auto& i : all) {
      if (!i.meta) {
        log::warn("image " + i.name + " is unreadable: " + i.problem);
        rows.push_back({i.name, "-", "-", store::human_size(i.used_bytes), "(unreadable)"});
        continue;
      }
      rows.push_back({i.name, i.meta->kind, store::human_size(i.meta->disk_bytes),
                      store::human_size(i.used_bytes), i.meta->created});
    }
    std::printf("%s", format_table(rows).c_str());
  });
}

void add_inspect(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = parent.add_subcommand("inspect", "Show one image's source, digest and config");
  cmd->fallthrough();
  auto* name = new std::string;  // lives as long as the process
  cmd->add_option("name", *name, "Image name")->required();
  cmd->callback([&g, name] {
    auto i = core::inspect_image({g.root, g.log_level, g.log_format}, *name);
    if (g.format == "json") {
      std::printf("%s\n", json::serialize(core::image_info_json(i), 2).c_str());
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
    for (const auto& [k, v] : rows) std::printf("%-12s %s\n", (k + ":").c_str(), v.c_str());
  });
}

void add_rm(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = parent.add_subcommand("rm", "Delete images");
  cmd->fallthrough();
  cmd->alias("remove");
  auto* names = new std::vector<std::string>;  // lives as long as the process
  cmd->add_option("name", *names, "Image names")->required();
  cmd->callback([&g, names] {
    each_item(*names, g, [&](const std::string& name) {
      core::remove_image({g.root, g.log_level, g.log_format}, name);
    });
  });
}

}  // namespace

void register_image(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand("image", "Import, list, inspect and remove images");
  cmd->fallthrough();
  cmd->require_subcommand(1);
  add_import(*cmd, g);
  add_list(*cmd, g);
  add_inspect(*cmd, g);
  add_rm(*cmd, g);
}

}  // namespace space::cli

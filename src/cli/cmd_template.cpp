// `space template build|list|inspect|rm|export|import|pool`: the pre-booted VMs that `create`
// restores sandboxes from. build prints its progress on stderr ("template: booting the VM ...")
// and the name on stdout; import prints the name too; export prints nothing. pool shows, fills
// or drains the gvisor templates' warm pools (core/pool.h).
#include <cstdio>

#include "cli/app.h"
#include "cli/boot_flags.h"
#include "cli/errors.h"
#include "cli/table.h"
#include "core/pool.h"
#include "core/pool_members.h"
#include "core/template.h"
#include "image/image.h"
#include "ops/template_build.h"
#include "store/config.h"
#include "store/store.h"
#include "util/error.h"
#include "util/json.h"
#include "util/log.h"
#include "util/utf8.h"

namespace space::cli {

namespace {

// What build and import print: the template's name, or {"name": ...} with --format json.
void print_name(const GlobalOptions& g, const std::string& name) {
  if (g.json()) {
    json::Value v = json::Value::object();
    v.set("name", name);
    print_json(v);
  } else {
    std::printf("%s\n", name.c_str());
  }
}

struct BuildFlags {
  ops::TemplateBuildOptions opts;
  BootFlags boot;
  std::string disk_size;
};

void add_template_build(CLI::App& parent, GlobalOptions& g) {
  auto* cmd =
      add_command(parent, "build",
                  "Boot a VM once and save it as a template (gvisor: record its rootfs and size)");
  auto* f = g.hold<BuildFlags>();  // freed with GlobalOptions
  cmd->add_option("name", f->opts.name, "Template name (create uses \"default\" unless told)")
      ->required();
  f->boot.add(cmd, f->opts.kernel, f->opts.rootfs, "");
  add_engine_option(cmd, f->opts.engine);
  cmd->add_flag("--force,-f", f->opts.force, "Replace an existing template of that name");
  cmd->add_option("--image", f->opts.image,
                  "Boot with a copy of this image attached; its sandboxes start inside it");
  cmd->add_option("--disk-size", f->disk_size,
                  "Grow the template's copy of the image's disk to this size, e.g. 20G");
  cmd->add_option("--run", f->opts.run,
                  "Shell command to run in the booted VM before the snapshot (start a server, "
                  "warm a cache); it must exit 0");
  cmd->callback([&g, f] {
    f->boot.apply(f->opts.vcpus, f->opts.memory_mib);
    if (!f->disk_size.empty()) {
      if (f->opts.image.empty())
        fail("--disk-size sizes the copy of an image's disk", "pass --image NAME with it");
      f->opts.disk_bytes = image::parse_disk_size(f->disk_size);
    }
    f->opts.progress = [](const std::string& line) {
      std::fprintf(stderr, "template: %s\n", utf8::printable(line).c_str());
      std::fflush(stderr);
    };
    auto m = ops::build_template(g.context(), f->opts);
    print_name(g, m.name);
  });
}

void add_template_list(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(parent, "list", "List templates");
  cmd->alias("ls");
  cmd->callback([&g] {
    auto all = core::list_templates(g.context());
    auto row = [](const core::TemplateInfo& t) -> std::vector<std::string> {
      if (!t.meta) {
        log::warn("template " + t.name + " is unreadable: " + t.problem);
        return {t.name, "-", "-", "-", store::human_size(t.disk_bytes), "(unreadable)"};
      }
      return {t.name,
              t.meta->engine,
              std::to_string(t.meta->vcpus),
              std::to_string(t.meta->memory_mib) + "MiB",
              store::human_size(t.disk_bytes),
              t.meta->created};
    };
    print_list(g.json(), all, core::template_info_json,
               {"NAME", "ENGINE", "CPUS", "MEMORY", "SIZE", "CREATED"}, row);
  });
}

void add_template_inspect(CLI::App& parent, GlobalOptions& g) {
  auto* cmd =
      add_command(parent, "inspect", "Show one template's metadata and whether it is restorable");
  auto* name = g.hold<std::string>();  // freed with GlobalOptions
  cmd->add_option("name", *name, "Template name")->required();
  cmd->callback([&g, name] {
    auto t = core::inspect_template(g.context(), *name);
    if (g.json()) {
      print_json(core::template_info_json(t), 2);
      return;
    }
    std::vector<std::pair<std::string, std::string>> rows;
    auto row = [&](const char* k, std::string v) { rows.emplace_back(k, std::move(v)); };
    row("name", t.name);
    if (t.meta) {
      row("created", t.meta->created);
      row("engine", t.meta->engine);
      row("cpus", std::to_string(t.meta->vcpus));
      row("memory", std::to_string(t.meta->memory_mib) + "MiB");
      if (t.meta->engine == "vm") row("kernel", t.meta->kernel);
      row("rootfs", t.meta->rootfs);
      row("space", t.meta->space_version);
      if (t.meta->engine == "vm") row("snapshot format", std::to_string(t.meta->snapshot_format));
    }
    row("size", store::human_size(t.disk_bytes));
    row("restorable", t.restorable ? "yes" : "no: " + t.problem);
    print_pairs(rows, 16);
  });
}

void add_template_rm(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(parent, "rm", "Delete templates (sandboxes made from them keep working)");
  cmd->alias("remove");
  auto* names = g.hold<std::vector<std::string>>();  // freed with GlobalOptions
  cmd->add_option("name", *names, "Template names")->required();
  cmd->callback([&g, names] {
    each_item(*names, g,
              [&](const std::string& name) { core::remove_template(g.context(), name); });
  });
}

void add_template_export(CLI::App& parent, GlobalOptions& g) {
  auto* cmd =
      add_command(parent, "export",
                  "Copy a template into a new directory that another root or host can import");
  auto* args = g.hold<std::pair<std::string, std::string>>();  // freed with GlobalOptions
  cmd->add_option("name", args->first, "Template name")->required();
  cmd->add_option("dir", args->second, "Directory to create (must not exist)")->required();
  cmd->callback([&g, args] { ops::export_template(g.context(), args->first, args->second); });
}

void add_template_import(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(parent, "import",
                          "Install a template from a directory written by 'template export'");
  struct Args {
    std::string name, dir;
    bool force = false;
  };
  auto* a = g.hold<Args>();  // freed with GlobalOptions
  cmd->add_option("name", a->name, "Name to give the template")->required();
  cmd->add_option("dir", a->dir, "Directory written by 'space template export'")->required();
  cmd->add_flag("--force,-f", a->force, "Replace an existing template of that name");
  cmd->callback([&g, a] {
    auto m = ops::import_template(g.context(), a->name, a->dir, a->force);
    print_name(g, m.name);
  });
}

json::Value pool_json(const core::PoolStatus& s) {
  json::Value v = json::Object{
      {"template", s.template_name}, {"wanted", s.wanted},   {"ready", s.ready},
      {"starting", s.starting},      {"filling", s.filling}, {"memory_mib", s.memory_mib},
      {"memory_note", s.memory_note}};
  return v;
}

void print_pools(const GlobalOptions& g, const std::vector<core::PoolStatus>& all) {
  print_list(g.json(), all, pool_json,
             {"TEMPLATE", "WANTED", "READY", "STARTING", "REFILL", "NOTE"},
             [](const core::PoolStatus& s) -> std::vector<std::string> {
               return {s.template_name,
                       std::to_string(s.wanted),
                       std::to_string(s.ready),
                       std::to_string(s.starting),
                       s.filling ? "running" : "-",
                       s.memory_note.empty() ? "-" : s.memory_note};
             });
}

void add_template_pool(CLI::App& parent, GlobalOptions& g) {
  auto* cmd = add_command(
      parent, "pool",
      "Show the gvisor templates' warm pools ([engine.gvisor] pool), fill one now, or drain them");
  struct Args {
    std::vector<std::string> names;
    bool drain = false;
  };
  auto* a = g.hold<Args>();  // freed with GlobalOptions
  cmd->add_option("name", a->names,
                  "Templates to fill to [engine.gvisor] pool now (or drain); none: show them all");
  cmd->add_flag("--drain", a->drain,
                "Remove every ready sandbox of these templates' pools (all pools without names)");
  cmd->callback([&g, a] {
    const auto ctx = g.context();
    if (a->drain) {
      std::vector<std::string> names = a->names;
      if (names.empty())
        for (const auto& s : core::pool_status(ctx)) names.push_back(s.template_name);
      each_item(names, g, [&](const std::string& name) {
        uint32_t n = core::drain_pool(ctx, name);
        log::info("pool of " + name + ": " + std::to_string(n) + " removed");
      });
      return;
    }
    if (a->names.empty()) {
      print_pools(g, core::pool_status(ctx));
      return;
    }
    std::vector<core::PoolStatus> filled;
    each_item(a->names, g,
              [&](const std::string& name) { filled.push_back(core::fill_pool(ctx, name)); });
    print_pools(g, filled);
  });
}

}  // namespace

void register_template(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "template",
                          "Build, list, inspect, remove, export and import templates; their pools");
  cmd->require_subcommand(1);
  add_template_build(*cmd, g);
  add_template_list(*cmd, g);
  add_template_inspect(*cmd, g);
  add_template_rm(*cmd, g);
  add_template_export(*cmd, g);
  add_template_import(*cmd, g);
  add_template_pool(*cmd, g);
}

}  // namespace space::cli

// Template metadata (template.toml), listing, inspection and removal; the build is in
// template_build.cpp. template.toml is written with toml++'s formatter (after one comment line)
// and read back with toml++, strictly: each key is checked against the list below, so a damaged
// or foreign file is reported rather than half-used.
#include "core/template.h"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <sstream>

#include "core/pool_members.h"
#include "core/sandbox.h"
#include "image/staging.h"
#include "store/config.h"
#include "store/paths.h"
#include "store/state.h"
#include "store/store.h"
#include "store/toml_fields.h"
#include "util/error.h"
#include "util/fs.h"
#include "vmm/snapshot.h"

namespace space::core {

// Basic ("double-quoted") strings only, as earlier versions wrote them: a line such as
// name = "base" reads the same to people and tools whichever version wrote the file.
constexpr auto kTomlFlags =
    toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings;

std::string template_meta_to_toml(const TemplateMeta& m) {
  toml::table t{
      {"format", int64_t{m.format}}, {"name", m.name},
      {"created", m.created},        {"space_version", m.space_version},
      {"vcpus", int64_t{m.vcpus}},   {"memory_mib", int64_t{m.memory_mib}},
      {"rootfs", m.rootfs},
  };
  if (m.engine == "vm") {  // a gvisor template holds no VM snapshot and boots no kernel
    t.insert("snapshot_format", int64_t{m.snapshot_format});
    t.insert("kernel", m.kernel);
  } else {
    t.insert("engine", m.engine);
  }
  std::ostringstream out;
  out << "# Written by 'space template build'. Do not edit: sandboxes restore from this.\n"
      << toml::toml_formatter(t, kTomlFlags) << "\n";
  return out.str();
}

TemplateMeta parse_template_meta(std::string_view text, const std::string& source) {
  const store::TomlFields f{source,
                            "rebuild the template with 'space template build --force NAME'"};
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    f.bad(std::to_string(at.line) + ":" + std::to_string(at.column), std::string(e.description()));
  }
  TemplateMeta m;
  unsigned seen = 0;
  static const char* keys[] = {"format",          "name",  "created",    "space_version",
                               "snapshot_format", "vcpus", "memory_mib", "kernel",
                               "rootfs",          "engine"};
  for (auto&& [k, n] : doc) {
    std::string key(k.str());
    auto it = std::find(std::begin(keys), std::end(keys), key);
    if (it == std::end(keys)) f.bad(key, "unknown key");
    seen |= 1u << (it - std::begin(keys));
    if (key == "format") {
      m.format = f.uint(n, key, 1, UINT32_MAX);
      if (m.format > kTemplateFormat)
        f.bad(key, "format " + std::to_string(m.format) +
                       " comes from a newer space (this one reads " +
                       std::to_string(kTemplateFormat) + ")");
    } else if (key == "name") {
      m.name = f.str(n, key);
      try {
        store::validate_id(m.name, "template name");
      } catch (const Error& e) {
        f.bad(key, e.what());
      }
    } else if (key == "created") {
      m.created = f.str(n, key);
    } else if (key == "space_version") {
      m.space_version = f.str(n, key);
    } else if (key == "snapshot_format") {
      m.snapshot_format = f.uint(n, key, 1, UINT32_MAX);
    } else if (key == "vcpus") {
      m.vcpus = f.uint(n, key, 1, store::kMaxCpus);
    } else if (key == "memory_mib") {
      m.memory_mib = f.uint(n, key, store::kMinMemoryMib, store::kMaxMemoryMib);
    } else if (key == "engine") {
      m.engine = f.str(n, key);
      if (m.engine != "vm" && m.engine != "gvisor") f.bad(key, "expected \"vm\" or \"gvisor\"");
    } else if (key == "kernel" || key == "rootfs") {
      std::string v = f.str(n, key);
      if (v[0] != '/') f.bad(key, "expected an absolute path");
      (key == "kernel" ? m.kernel : m.rootfs) = v;
    }
  }
  // engine is optional (vm); a gvisor template has no snapshot_format and no kernel.
  for (size_t i = 0; i < std::size(keys); i++) {
    std::string_view k = keys[i];
    bool vm_only = k == "snapshot_format" || k == "kernel";
    if (k == "engine" || (vm_only && m.engine == "gvisor")) {
      if (vm_only && (seen & (1u << i))) f.bad(keys[i], "a gvisor template has none");
      continue;
    }
    if (!(seen & (1u << i))) f.bad(keys[i], "missing");
  }
  return m;
}

void check_restorable(const TemplateMeta& m, const std::string& name) {
  std::string hint = "rebuild it: space template build --force " + name;
  if (m.name != name)
    fail("template " + name + " says it is named \"" + m.name + "\" (was it copied by hand?)",
         hint);
  if (m.engine == "vm" && m.snapshot_format != vmm::snapshot::kFormatVersion)
    fail("template " + name + " holds a snapshot in format " + std::to_string(m.snapshot_format) +
             ", and this space reads format " + std::to_string(vmm::snapshot::kFormatVersion),
         hint);
}

std::string template_meta_path(const std::string& dir) {
  return dir + "/template.toml";
}

TemplateMeta read_template_meta(const std::string& dir) {
  std::string path = template_meta_path(dir);
  return parse_template_meta(fs::read_file(path, 64u << 10), path);
}

bool is_build_dir_name(std::string_view entry) {
  return !entry.empty() && entry[0] == '.';
}

std::vector<TemplateInfo> list_templates(const store::Context& ctx) {
  store::StorePaths sp = store::ensure_store(ctx, store::StoreUse::Existing);
  if (fs::is_dir(sp.templates)) sweep_dead_template_builds(sp);
  std::vector<TemplateInfo> out;
  for (const auto& name : fs::list_dir(sp.templates)) {
    if (is_build_dir_name(name)) continue;
    TemplateInfo t;
    t.name = name;
    std::string dir = sp.templates + "/" + name;
    out.push_back(template_info(name, dir));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

TemplateInfo template_info(const std::string& name, const std::string& dir) {
  TemplateInfo t;
  t.name = name;
  try {
    t.meta = read_template_meta(dir);
    check_restorable(*t.meta, name);
    t.restorable = true;
  } catch (const Error& e) {
    t.problem = e.what();
  }
  t.disk_bytes = image::allocated_bytes(dir);
  return t;
}

TemplateInfo inspect_template(const store::Context& ctx, const std::string& name) {
  std::string dir = store::template_dir(ctx.root, name);
  store::ensure_store(ctx, store::StoreUse::Existing);
  if (!fs::is_dir(dir))
    throw Error(
        "template " + name + " does not exist", ENOENT,
        "'space template list' shows the templates; 'space template build " + name + "' makes it");
  return template_info(name, dir);
}

json::Value template_info_json(const TemplateInfo& t) {
  json::Value v = json::Value::object();
  v.set("name", t.name);
  if (t.meta) {
    v.set("created", t.meta->created);
    v.set("engine", t.meta->engine);
    v.set("vcpus", t.meta->vcpus);
    v.set("memory_mib", t.meta->memory_mib);
    v.set("kernel", t.meta->kernel);
    v.set("rootfs", t.meta->rootfs);
    v.set("space_version", t.meta->space_version);
    v.set("snapshot_format", t.meta->snapshot_format);
  }
  if (!t.problem.empty()) v.set("error", t.problem);
  v.set("restorable", t.restorable);
  v.set("disk_bytes", t.disk_bytes);
  return v;
}

void remove_template(const store::Context& ctx, const std::string& name) {
  std::string dir = store::template_dir(ctx.root, name);
  store::ensure_store(ctx, store::StoreUse::Existing);
  if (!fs::is_dir(dir))
    throw Error("template " + name + " does not exist", ENOENT,
                "'space template list' shows the templates");
  try {
    drain_pool(ctx, name);  // its warm pool's sandboxes (gvisor) go first
    store::remove_store_tree(dir);
  } catch (Error& e) {
    e.add_context("remove template " + name);
    throw;
  }
}

std::string template_build_run_dir(const std::string& rand) {
  return store::run_base() + "/.template-" + rand;
}

void sweep_dead_template_builds(const store::StorePaths& sp) {
  image::sweep_dead_builds(sp.templates, "template", [](const std::string& dir) {
    auto mark = dir.rfind(image::kBuildMarker);
    store::SandboxPaths p =
        store::paths_in(dir, template_build_run_dir(dir.substr(mark + image::kBuildMarker.size())));
    if (fs::exists(p.state)) stop_vmm(store::read_state(p.state), p, 0);
    fs::remove_tree(p.run_dir);
  });
}

}  // namespace space::core

// Unit tests for core/template: template.toml round trip and strict validation, the restore
// checks, build-directory names, and listing/removal over plain directories (no btrfs needed).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/template.h"
#include "store/paths.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "vmm/snapshot.h"

using namespace space;

namespace {
core::TemplateMeta sample() {
  core::TemplateMeta m;
  m.name = "py3";
  m.created = "2026-01-02T03:04:05Z";
  m.space_version = "0.1.0";
  m.snapshot_format = vmm::snapshot::kFormatVersion;
  m.vcpus = 2;
  m.memory_mib = 512;
  m.kernel = "/k/vmlinux";
  m.rootfs = "/images/with \"quotes\" and \\ back\tslash.ext4";
  return m;
}

std::string error_of(const std::string& text) {
  try {
    core::parse_template_meta(text, "t.toml");
  } catch (const Error& e) {
    CHECK(e.hint().find("space template build --force") != std::string::npos);
    return e.what();
  }
  return "";
}

// sample()'s TOML with `key`'s line replaced by `line` ("" drops it).
std::string with(const std::string& key, const std::string& line) {
  std::string text = core::template_meta_to_toml(sample()), out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string l = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (l.rfind(key + " = ", 0) == 0) l = line;
    if (!l.empty()) out += l + "\n";
  }
  return out;
}
}  // namespace

TEST_CASE("template.toml round trip") {
  auto m = sample();
  auto back = core::parse_template_meta(core::template_meta_to_toml(m), "t.toml");
  CHECK(back.format == core::kTemplateFormat);
  CHECK(back.name == m.name);
  CHECK(back.created == m.created);
  CHECK(back.space_version == m.space_version);
  CHECK(back.snapshot_format == m.snapshot_format);
  CHECK(back.vcpus == 2u);
  CHECK(back.memory_mib == 512u);
  CHECK(back.kernel == m.kernel);
  CHECK(back.rootfs == m.rootfs);  // quotes, backslashes and control characters survive
}

TEST_CASE("template.toml is read strictly") {
  CHECK(error_of(with("vcpus", "")) == "t.toml: vcpus: missing");
  CHECK(error_of(with("vcpus", "vcpus = 0")) == "t.toml: vcpus: 0 is out of range 1..64");
  CHECK(error_of(with("vcpus", "vcpus = \"1\"")) == "t.toml: vcpus: expected an integer");
  CHECK(error_of(with("memory_mib", "memory_mib = 8")).find("out of range") != std::string::npos);
  CHECK(error_of(with("kernel", "kernel = \"rel/vmlinux\"")) ==
        "t.toml: kernel: expected an absolute path");
  CHECK(error_of(with("name", "name = \"Bad Name\"")).find("invalid template name") !=
        std::string::npos);
  CHECK(error_of(with("created", "created = \"\"")) ==
        "t.toml: created: expected a non-empty string");
  CHECK(error_of(with("format", "format = 99")).find("comes from a newer space") !=
        std::string::npos);
  CHECK(error_of(core::template_meta_to_toml(sample()) + "extra = 1\n") ==
        "t.toml: extra: unknown key");
  CHECK(error_of("name = [").rfind("t.toml: 1:", 0) == 0);  // syntax error with its position
  CHECK(error_of("") == "t.toml: format: missing");
}

TEST_CASE("check_restorable: the name and the snapshot format must match") {
  auto m = sample();
  CHECK_NOTHROW(core::check_restorable(m, "py3"));
  CHECK_THROWS_WITH_AS(core::check_restorable(m, "other"),
                       doctest::Contains("says it is named \"py3\""), Error);
  m.snapshot_format = vmm::snapshot::kFormatVersion + 1;
  try {
    core::check_restorable(m, "py3");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("snapshot in format") != std::string::npos);
    CHECK(e.hint() == "rebuild it: space template build --force py3");
  }
}

TEST_CASE("template names and build directories") {
  CHECK(store::template_dir("/r", "default") == "/r/store/templates/default");
  CHECK_THROWS_WITH_AS(store::template_dir("/r", "../x"),
                       doctest::Contains("invalid template name"), Error);
  CHECK(core::is_build_dir_name(".default.tmp-1a2b3c4d"));
  CHECK_FALSE(core::is_build_dir_name("default"));
  CHECK_FALSE(core::is_build_dir_name("a.tmp-1"));  // a legal template name, not a build
}

TEST_CASE("list and remove templates (plain directories)") {
  test::TempDir t("template");
  store::Context ctx{t.path};
  std::string tdir = store::template_dir(t.path, "py3");
  fs::mkdir_p(tdir);
  fs::write_file_atomic(core::template_meta_path(tdir), core::template_meta_to_toml(sample()));
  fs::write_file_atomic(tdir + "/memory", std::string(8192, 'x'));
  fs::mkdir_p(store::template_dir(t.path, "broken"));
  fs::mkdir_p(store::store_paths(t.path).templates + "/.py3.tmp-12345678");  // a build: hidden
  auto all = core::list_templates(ctx);
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "broken");
  CHECK_FALSE(all[0].meta.has_value());
  CHECK(all[0].problem.find("template.toml") != std::string::npos);
  CHECK(core::template_info_json(all[0]).find("error") != nullptr);
  CHECK(all[1].name == "py3");
  REQUIRE(all[1].meta.has_value());
  CHECK(all[1].meta->memory_mib == 512u);
  CHECK(all[1].disk_bytes >= 8192);
  CHECK(core::template_info_json(all[1]).at("vcpus").as_int() == 2);

  core::remove_template(ctx, "py3");
  CHECK_FALSE(fs::exists(tdir));
  try {
    core::remove_template(ctx, "py3");
    FAIL("removed twice");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("template py3 does not exist") != std::string::npos);
    CHECK(e.hint().find("space template list") != std::string::npos);
  }
}

TEST_CASE("template.toml as earlier versions wrote it (by hand, fixed key order) still loads") {
  const std::string old_text =
      "# Written by 'space template build'. Do not edit: sandboxes restore from this.\n"
      "format = 1\n"
      "name = \"default\"\n"
      "created = \"2026-11-29T18:00:00Z\"\n"
      "space_version = \"0.1.0\"\n"
      "snapshot_format = 1\n"
      "vcpus = 1\n"
      "memory_mib = 256\n"
      "kernel = \"/var/cache/space/kernel/abc/vmlinux\"\n"
      "rootfs = \"/var/cache/space/rootfs/d\\u0009e/rootfs.ext4\"\n";
  auto m = core::parse_template_meta(old_text, "old.toml");
  CHECK(m.name == "default");
  CHECK(m.memory_mib == 256);
  CHECK(m.rootfs == "/var/cache/space/rootfs/d\te/rootfs.ext4");
  // This version writes the same lines for the same values (basic strings, one key a line).
  std::string now = core::template_meta_to_toml(m);
  CHECK(now.find("\nname = \"default\"\n") != std::string::npos);
  CHECK(now.find("\nmemory_mib = 256\n") != std::string::npos);
  // And what this version writes reads back the same.
  auto again = core::parse_template_meta(core::template_meta_to_toml(m), "new.toml");
  CHECK(again.rootfs == m.rootfs);
  CHECK(again.created == m.created);
}

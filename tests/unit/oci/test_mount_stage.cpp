// Unit tests for oci/mount_stage.h, driven the hostile way a pod's volume and a bundle can: a
// destination climbing out of the stage, a later mount written through a symbolic link an earlier
// mount brought in, a source that is itself a link, links inside a volume pointing at host files.
// Each checks that nothing was written or read outside the stage, and the ordinary case (files,
// modes, hard links, a file mount, nested mounts) lands where the destinations say.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "oci/mount_stage.h"
#include "oci/spec.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

namespace {

oci::Mount bind_mount(const std::string& source, const std::string& destination) {
  oci::Mount m;
  m.type = "bind";
  m.source = source;
  m.destination = destination;
  return m;
}

std::string error_of(const oci::Spec& s, const std::string& stage) {
  try {
    oci::stage_mounts(s, stage);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("mount stage: files, modes, hard links, a file mount and a nested mount land in place") {
  test::TempDir t("mount-stage");
  fs::mkdir_p(t.path + "/vol/sub");
  fs::write_file_atomic(t.path + "/vol/sub/a", "alpha", 0640);
  REQUIRE(::link((t.path + "/vol/sub/a").c_str(), (t.path + "/vol/b").c_str()) == 0);
  REQUIRE(::symlink("sub/a", (t.path + "/vol/l").c_str()) == 0);
  fs::write_file_atomic(t.path + "/app.conf", "conf", 0600);
  fs::mkdir_p(t.path + "/cache");
  fs::write_file_atomic(t.path + "/cache/c", "cached");
  oci::Spec s;
  s.mounts = {
      bind_mount(t.path + "/vol", "/data"), bind_mount(t.path + "/app.conf", "/etc/app/app.conf"),
      bind_mount(t.path + "/cache", "/data/sub/cache"), bind_mount(t.path + "/nosuch", "/gone")};
  oci::Mount proc = bind_mount(t.path + "/vol", "/proc/x");  // the guest's own: not copied
  s.mounts.push_back(proc);
  const std::string stage = t.path + "/stage";
  oci::StageStats st = oci::stage_mounts(s, stage);
  CHECK(st.mounts == 3);
  CHECK(fs::read_file(stage + "/data/sub/a") == "alpha");
  struct stat a {
  }, b{};
  REQUIRE(::lstat((stage + "/data/sub/a").c_str(), &a) == 0);
  REQUIRE(::lstat((stage + "/data/b").c_str(), &b) == 0);
  CHECK((a.st_mode & 07777) == 0640);
  CHECK(a.st_ino == b.st_ino);  // still one file with two names
  char target[64] = {};
  CHECK(::readlink((stage + "/data/l").c_str(), target, sizeof target - 1) == 5);
  CHECK(std::string(target) == "sub/a");
  CHECK(fs::read_file(stage + "/etc/app/app.conf") == "conf");
  CHECK(fs::read_file(stage + "/data/sub/cache/c") == "cached");
  CHECK_FALSE(fs::exists(stage + "/proc"));
  CHECK_FALSE(fs::exists(stage + "/gone"));
  struct stat sd {};
  REQUIRE(::stat(stage.c_str(), &sd) == 0);
  CHECK((sd.st_mode & 0777) == 0700);
}

TEST_CASE("mount stage: a destination with '..' is refused before anything is written") {
  test::TempDir t("mount-stage-dotdot");
  fs::mkdir_p(t.path + "/vol");
  fs::write_file_atomic(t.path + "/vol/evil", "* * * * * root sh /tmp/x\n");
  fs::mkdir_p(t.path + "/stagebox/a/b");
  oci::Spec s;
  s.mounts = {bind_mount(t.path + "/vol", "/../../escaped")};
  const std::string stage = t.path + "/stagebox/a/b/stage";
  CHECK(error_of(s, stage).find("mounts[0] (/../../escaped)") != std::string::npos);
  CHECK_FALSE(fs::exists(t.path + "/stagebox/escaped"));
  CHECK_FALSE(fs::exists(t.path + "/stagebox/a/escaped"));
  CHECK_FALSE(fs::exists(stage));  // the stage went with the failure
}

TEST_CASE("mount stage: a later mount is never written through a link an earlier one brought") {
  test::TempDir t("mount-stage-link");
  fs::mkdir_p(t.path + "/outside");
  fs::mkdir_p(t.path + "/vol1");
  REQUIRE(::symlink((t.path + "/outside").c_str(), (t.path + "/vol1/l").c_str()) == 0);
  fs::mkdir_p(t.path + "/vol2");
  fs::write_file_atomic(t.path + "/vol2/planted", "x");
  oci::Spec s;
  s.mounts = {bind_mount(t.path + "/vol1", "/data"),
              bind_mount(t.path + "/vol2", "/data/l/cron.d")};
  const std::string stage = t.path + "/stage";
  std::string err = error_of(s, stage);
  CHECK(err.find("mounts[1] (/data/l/cron.d)") != std::string::npos);
  CHECK(err.find("symbolic link") != std::string::npos);
  CHECK(fs::list_dir(t.path + "/outside").empty());
  CHECK_FALSE(fs::exists(stage));
}

TEST_CASE("mount stage: links in a volume are copied as links, a source that is a link refused") {
  test::TempDir t("mount-stage-src");
  fs::write_file_atomic(t.path + "/host-secret", "root's secret");
  fs::mkdir_p(t.path + "/vol");
  REQUIRE(::symlink((t.path + "/host-secret").c_str(), (t.path + "/vol/s").c_str()) == 0);
  oci::Spec s;
  s.mounts = {bind_mount(t.path + "/vol", "/data")};
  oci::stage_mounts(s, t.path + "/stage");
  struct stat st {};
  REQUIRE(::lstat((t.path + "/stage/data/s").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));  // the link itself: the host file's content was not read

  REQUIRE(::symlink((t.path + "/host-secret").c_str(), (t.path + "/link").c_str()) == 0);
  s.mounts = {bind_mount(t.path + "/link", "/etc/app.conf")};
  std::string err = error_of(s, t.path + "/stage2");
  CHECK(err.find("config.json: mounts[0] (/etc/app.conf): source " + t.path +
                 "/link is a symbolic link") == 0);
  CHECK_FALSE(fs::exists(t.path + "/stage2"));
}

TEST_CASE("oci spec: a mount destination with '..' is refused, '.' and '//' are cleaned") {
  test::TempDir t("oci-spec-dest");
  fs::mkdir_p(t.path + "/rootfs");
  auto with_mount = [](const std::string& dest) {
    return R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": ["sh"]},
               "mounts": [{"destination": ")" +
           dest + R"(", "type": "bind", "source": "/x"}]})";
  };
  try {
    oci::parse_spec(with_mount("/../../../../etc/cron.d"), t.path);
    FAIL("a destination with '..' was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "config.json: mounts[0].destination: \"/../../../../etc/cron.d\" has a '..' component");
    CHECK_FALSE(e.hint().empty());
  }
  CHECK_THROWS_AS(oci::parse_spec(with_mount("/data/../../x"), t.path), Error);
  CHECK(oci::parse_spec(with_mount("//proc/./sys/"), t.path).mounts[0].destination == "/proc/sys");
  CHECK_FALSE(oci::mount_copied_in(oci::parse_spec(with_mount("//proc/./x"), t.path).mounts[0]));
  CHECK(oci::parse_spec(with_mount("/a..b/..c"), t.path).mounts[0].destination == "/a..b/..c");
}

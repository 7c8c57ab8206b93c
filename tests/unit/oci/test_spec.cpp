// Unit tests for oci/spec.h: a podman-like config.json parses into the fields space uses
// (relative root and bind sources resolved against the bundle, annotations, memory limit, the
// network namespace); malformed documents fail naming the field; which mounts are copied in.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <string>

#include "oci/spec.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;

namespace {

std::string error_of(const std::string& text, const std::string& bundle) {
  try {
    oci::parse_spec(text, bundle);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("oci spec: a podman-like config.json") {
  test::TempDir t("oci-spec");
  fs::mkdir_p(t.path + "/rootfs");
  const std::string text = R"({
    "ociVersion": "1.0.2-dev",
    "process": {"terminal": true, "user": {"uid": 1000, "gid": 100, "umask": 18,
                "additionalGids": [10]},
                "args": ["sh", "-c", "echo hi"], "env": ["PATH=/bin", "A=b=c"], "cwd": "/srv",
                "capabilities": {"bounding": ["CAP_CHOWN"]},
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}]},
    "root": {"path": "rootfs", "readonly": true},
    "hostname": "box",
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/etc/resolv.conf", "type": "bind", "source": "/run/r.conf",
                "options": ["bind", "rprivate"]},
               {"destination": "/data", "source": "vol", "options": ["rbind", "ro"]}],
    "annotations": {"space.template": "small", "io.kubernetes.cri-o.Foo": "x"},
    "linux": {"resources": {"memory": {"limit": 536870912}, "cpu": {"quota": 50000, "period": 100000}},
              "namespaces": [{"type": "pid"}, {"type": "network", "path": "/run/netns/n1"}],
              "seccomp": {"defaultAction": "SCMP_ACT_ERRNO"}}
  })";
  oci::Spec s = oci::parse_spec(text, t.path);
  CHECK(s.oci_version == "1.0.2-dev");
  CHECK(s.process.terminal);
  CHECK(s.process.args == std::vector<std::string>{"sh", "-c", "echo hi"});
  CHECK(s.process.env == std::vector<std::string>{"PATH=/bin", "A=b=c"});
  CHECK(s.process.cwd == "/srv");
  CHECK(s.process.uid == 1000);
  CHECK(s.process.gid == 100);
  CHECK(s.process.additional_gids == std::vector<uint32_t>{10});
  CHECK(s.process.umask == 18u);
  REQUIRE(s.process.rlimits.size() == 1);
  CHECK(s.process.rlimits[0].resource == RLIMIT_NOFILE);
  CHECK(s.process.rlimits[0].soft == 1024);
  CHECK(s.process.rlimits[0].hard == 1024);
  CHECK(s.root_path == t.path + "/rootfs");
  CHECK(s.root_readonly);
  CHECK(s.hostname == "box");
  REQUIRE(s.mounts.size() == 3);
  CHECK_FALSE(oci::mount_copied_in(s.mounts[0]));
  CHECK(oci::mount_copied_in(s.mounts[1]));
  CHECK(s.mounts[2].source == t.path + "/vol");  // relative bind sources are the bundle's
  CHECK(s.mounts[2].is_bind());
  CHECK(s.mounts[2].read_only());
  CHECK(s.annotations.at("space.template") == "small");
  CHECK(s.memory_limit == 536870912u);
  CHECK(s.cpu_quota == 50000u);
  CHECK(s.cpu_period == 100000u);
  CHECK(s.netns_path == "/run/netns/n1");
  CHECK_FALSE(s.new_netns);
}

TEST_CASE("oci spec: mounts the guest provides are not copied in") {
  for (const char* d :
       {"/dev/shm", "/dev", "/proc/sys", "/sys/fs/cgroup", "/etc/hosts", "/etc/hostname"}) {
    oci::Mount m{d, "bind", "/x", {"rbind"}};
    CHECK_MESSAGE(!oci::mount_copied_in(m), d);
  }
  for (const char* d : {"/devices", "/run/.containerenv", "/etc/resolv.conf", "/system"}) {
    oci::Mount m{d, "bind", "/x", {"rbind"}};
    CHECK_MESSAGE(oci::mount_copied_in(m), d);
  }
  oci::Mount tmpfs{"/tmp", "tmpfs", "tmpfs", {"nosuid"}};
  CHECK_FALSE(oci::mount_copied_in(tmpfs));
}

TEST_CASE("oci spec: malformed documents name the field") {
  test::TempDir t("oci-spec-bad");
  fs::mkdir_p(t.path + "/rootfs");
  auto with_process = [](const std::string& process) {
    return R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": )" + process + "}";
  };
  CHECK(error_of("{", t.path).find("config.json") != std::string::npos);
  CHECK(error_of("[]", t.path) == "config.json: expected an object");
  CHECK(error_of(R"({"root": {"path": "rootfs"}, "process": {"args": ["sh"]}})", t.path) ==
        "config.json: ociVersion: missing");
  CHECK(error_of(R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"}})", t.path) ==
        "config.json: process: missing");
  CHECK(error_of(with_process(R"({"args": []})"), t.path) ==
        "config.json: process.args: empty: there is no command to run");
  CHECK(error_of(with_process(R"({"args": "sh"})"), t.path)
            .find("config.json: process.args: expected an array") == 0);
  CHECK(error_of(with_process(R"({"args": ["sh"], "cwd": "srv"})"), t.path) ==
        "config.json: process.cwd: \"srv\" is not an absolute path");
  CHECK(error_of(with_process(R"({"args": ["sh"], "env": ["NOEQUALS"]})"), t.path) ==
        "config.json: process.env: \"NOEQUALS\" is not NAME=VALUE");
  CHECK(error_of(with_process(R"({"args": ["sh"], "user": {"uid": -1}})"), t.path)
            .find("config.json: process.user.uid: expected an integer") == 0);
  CHECK(error_of(
            with_process(
                R"({"args": ["sh"], "rlimits": [{"type": "RLIMIT_NOPE", "soft": 1, "hard": 1}]})"),
            t.path) == "config.json: process.rlimits[0].type: unknown resource \"RLIMIT_NOPE\"");
  CHECK(
      error_of(
          with_process(
              R"({"args": ["sh"], "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 2, "hard": 1}]})"),
          t.path) == "config.json: process.rlimits[0]: soft is above hard");
  CHECK(error_of(
            with_process(R"({"args": ["sh"], "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1}]})"),
            t.path) == "config.json: process.rlimits[0]: soft and hard are both required");
  CHECK(
      oci::parse_process(
          json::parse(
              R"({"args": ["sh"], "rlimits": [{"type": "RLIMIT_AS", "soft": 18446744073709551615, "hard": 18446744073709551615}]})"),
          "p")
          .rlimits[0]
          .hard == UINT64_MAX);
  CHECK(error_of(with_process(R"({"args": ["sh"], "terminal": "yes"})"), t.path) ==
        "config.json: process.terminal: expected true or false");
  CHECK(error_of(R"({"ociVersion": "1.0.2", "process": {"args": ["sh"]}})", t.path) ==
        "config.json: root: missing");
  CHECK(error_of(
            R"({"ociVersion": "1.0.2", "root": {"path": "nosuch"}, "process": {"args": ["sh"]}})",
            t.path)
            .find("is not a directory") != std::string::npos);
  CHECK(error_of(R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": ["sh"]},
                    "mounts": [{"destination": "rel", "type": "bind", "source": "/x"}]})",
                 t.path) == "config.json: mounts[0].destination: \"rel\" is not an absolute path");
  CHECK(error_of(R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": ["sh"]},
                    "annotations": {"a": 1}})",
                 t.path) == "config.json: annotations.a: expected a string, got an integer");
}

TEST_CASE("oci spec: load_spec reads the bundle's config.json") {
  test::TempDir t("oci-spec-load");
  fs::mkdir_p(t.path + "/root");
  fs::write_file_atomic(
      t.path + "/config.json",
      R"({"ociVersion": "1.0.2", "root": {"path": "root"}, "process": {"args": ["true"]}})");
  CHECK(oci::load_spec(t.path).root_path == t.path + "/root");
  test::TempDir empty("oci-spec-none");
  CHECK_THROWS_WITH_AS(oci::load_spec(empty.path), doctest::Contains("bundle"), Error);
}

TEST_CASE("oci spec: a pod's sandbox (pause) container, as containerd and CRI-O annotate it") {
  oci::Spec s;
  CHECK_FALSE(oci::is_pod_sandbox(s));
  s.annotations["io.kubernetes.cri.container-type"] = "container";
  CHECK_FALSE(oci::is_pod_sandbox(s));
  s.annotations["io.kubernetes.cri.container-type"] = "sandbox";
  CHECK(oci::is_pod_sandbox(s));
  oci::Spec crio;
  crio.annotations["io.kubernetes.cri-o.ContainerType"] = "sandbox";
  CHECK(oci::is_pod_sandbox(crio));
  crio.annotations["io.kubernetes.cri-o.ContainerType"] = "container";
  CHECK_FALSE(oci::is_pod_sandbox(crio));
}

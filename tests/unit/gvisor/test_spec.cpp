// Unit tests for gvisor/spec: the OCI spec a gvisor sandbox runs under. What matters for the
// boundary: no network namespace path (a new, empty one), the host directory bound read-only,
// guest-init as the process with the sandbox's id, the memory limit and cgroup (and no CPU quota),
// and every host path absolute.
#include <doctest/doctest.h>

#include <string>

#include "gvisor/spec.h"
#include "proto/agent.h"
#include "util/error.h"
#include "util/json.h"

using namespace space;

namespace {

gvisor::SandboxSpec sample() {
  gvisor::SandboxSpec s;
  s.id = "box1";
  s.root = "/run/space/box1/gvisor/base";
  s.host_dir = "/run/space/box1/gvisor/host";
  s.memory_bytes = 512ull << 20;
  s.cgroups_path = "space/box1";
  return s;
}

const json::Value* mount_at(const json::Value& spec, const std::string& dest) {
  for (const auto& m : spec.at("mounts").as_array())
    if (m.at("destination").as_string() == dest) return &m;
  return nullptr;
}

bool has_option(const json::Value& mount, const std::string& opt) {
  if (!mount.find("options")) return false;
  for (const auto& o : mount.at("options").as_array())
    if (o.as_string() == opt) return true;
  return false;
}

}  // namespace

TEST_CASE("gvisor spec: process, root, mounts and resources") {
  json::Value spec = gvisor::sandbox_spec(sample());
  const auto& args = spec.at("process").at("args").as_array();
  REQUIRE(args.size() == 4);
  CHECK(args[0].as_string() == "/sbin/init");
  CHECK(args[1].as_string() == "--gvisor");
  CHECK(args[3].as_string() == "box1");
  CHECK(spec.at("hostname").as_string() == "box1");
  CHECK(spec.at("root").at("path").as_string() == "/run/space/box1/gvisor/base");
  const json::Value* host = mount_at(spec, proto::kGvisorHostDir);
  REQUIRE(host);
  CHECK(host->at("source").as_string() == "/run/space/box1/gvisor/host");
  CHECK(has_option(*host, "ro"));
  CHECK_FALSE(mount_at(spec, proto::kGvisorImageDir));  // no image
  for (const char* dest : {"/proc", "/dev", "/dev/pts", "/sys", "/tmp", "/run"})
    CHECK(mount_at(spec, dest));
  // A new network namespace of its own (no path): only lo inside.
  bool network = false;
  for (const auto& ns : spec.at("linux").at("namespaces").as_array()) {
    if (ns.at("type").as_string() != "network") continue;
    network = true;
    CHECK_FALSE(ns.find("path"));
  }
  CHECK(network);
  const auto& res = spec.at("linux").at("resources");
  CHECK(res.at("memory").at("limit").as_int() == int64_t{512} << 20);
  // No CPU quota: runsc's start would run throttled under it (the monitor sets it afterwards).
  CHECK_FALSE(res.find("cpu"));
  CHECK(spec.at("linux").at("cgroupsPath").as_string() == "/space/box1");
}

TEST_CASE("gvisor spec: an image is bound at its mount point") {
  auto s = sample();
  s.image = "/run/space/box1/gvisor/image";
  json::Value spec = gvisor::sandbox_spec(s);
  const json::Value* image = mount_at(spec, proto::kGvisorImageDir);
  REQUIRE(image);
  CHECK(image->at("source").as_string() == s.image);
}

TEST_CASE("gvisor spec: relative host paths and a missing id are refused") {
  auto s = sample();
  s.root = "base";
  CHECK_THROWS_WITH_AS(gvisor::sandbox_spec(s), doctest::Contains("not absolute"), Error);
  s = sample();
  s.host_dir = "";
  CHECK_THROWS_AS(gvisor::sandbox_spec(s), Error);
  s = sample();
  s.image = "img";
  CHECK_THROWS_AS(gvisor::sandbox_spec(s), Error);
  s = sample();
  s.id = "";
  CHECK_THROWS_WITH_AS(gvisor::sandbox_spec(s), doctest::Contains("no sandbox id"), Error);
}

// Unit tests for core/engine: which engine a command gets (flag, SPACE_ENGINE, config.toml, the
// built-in vm, in that order), and the fail-closed rule: an engine that cannot run here is an
// error that names the other engine, never a quiet switch to it. The probes run against files
// the test makes (a missing device, fake runsc scripts), so no KVM or runsc is needed.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <string>

#include "launch/engine.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;
using launch::Engine;

namespace {

// A fake runsc that prints `version` for --version.
std::string fake_runsc(const test::TempDir& t, const std::string& name,
                       const std::string& version) {
  std::string path = t.path + "/" + name;
  fs::write_file_atomic(path, "#!/bin/sh\necho '" + version + "'\necho 'spec: 1.0.2-dev'\n", 0755);
  return path;
}

}  // namespace

TEST_CASE("engine: names") {
  CHECK(launch::parse_engine("vm") == Engine::Vm);
  CHECK(launch::parse_engine("gvisor") == Engine::Gvisor);
  CHECK_FALSE(launch::parse_engine("kvm"));
  CHECK_FALSE(launch::parse_engine(""));
  CHECK(std::string(launch::engine_name(Engine::Gvisor)) == "gvisor");
  CHECK(std::string(launch::engine_name(Engine::Vm)) == "vm");
}

TEST_CASE("engine: --engine, then SPACE_ENGINE, then config.toml, then vm") {
  store::HostConfig hc;
  test::ScopedEnv unset("SPACE_ENGINE", nullptr);
  auto c = launch::choose_engine("", hc);
  CHECK(c.engine == Engine::Vm);
  CHECK(c.source == "the built-in default");
  hc.engine_default = "gvisor";
  c = launch::choose_engine("", hc);
  CHECK(c.engine == Engine::Gvisor);
  CHECK(c.source == "config.toml [engine] default");
  {
    test::ScopedEnv env("SPACE_ENGINE", "vm");
    c = launch::choose_engine("", hc);
    CHECK(c.engine == Engine::Vm);
    CHECK(c.source == "SPACE_ENGINE");
    c = launch::choose_engine("gvisor", hc);
    CHECK(c.engine == Engine::Gvisor);
    CHECK(c.source == "--engine");
  }
  {
    test::ScopedEnv env("SPACE_ENGINE", "firecracker");
    CHECK_THROWS_WITH_AS(launch::choose_engine("", hc),
                         doctest::Contains("SPACE_ENGINE names engine \"firecracker\""), Error);
  }
  CHECK_THROWS_WITH_AS(launch::choose_engine("qemu", hc), doctest::Contains("--engine"), Error);
}

TEST_CASE("engine: a chosen engine that cannot run fails closed, naming the other") {
  store::HostConfig hc;
  test::TempDir t("engine");
  test::ScopedEnv cache("SPACE_CACHE", t.path.c_str());  // runsc's version is kept there
  // vm without a usable device: the error names gvisor and what it trades, and nothing picks it.
  launch::EngineStatus vm = launch::probe_vm_engine(t.path + "/no-kvm");
  CHECK_FALSE(vm.usable);
  CHECK(vm.detail.find("no-kvm") != std::string::npos);
  launch::EngineChoice want_vm{Engine::Vm, "--engine"};
  try {
    launch::require_usable(want_vm, vm);
    FAIL("an unusable vm engine was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("the vm engine (chosen by --engine) cannot run") !=
          std::string::npos);
    CHECK(e.hint().find("--engine gvisor") != std::string::npos);
    CHECK(e.hint().find("weaker boundary") != std::string::npos);
  }
  // gvisor without runsc, and with Debian 12's own (too old): refused, naming the fix.
  hc.gvisor_runsc = t.path + "/missing-runsc";
  launch::EngineStatus gv = launch::probe_gvisor_engine(hc);
  CHECK_FALSE(gv.usable);
  hc.gvisor_runsc = fake_runsc(t, "old-runsc", "runsc version 0.0~20221219.0");
  gv = launch::probe_gvisor_engine(hc);
  CHECK_FALSE(gv.usable);
  CHECK(gv.detail.find("older than 20240729") != std::string::npos);
  launch::EngineChoice want_gvisor{Engine::Gvisor, "SPACE_ENGINE"};
  CHECK_THROWS_WITH_AS(launch::require_usable(want_gvisor, gv),
                       doctest::Contains("the gvisor engine (chosen by SPACE_ENGINE) cannot run"),
                       Error);
  try {
    launch::require_usable(want_gvisor, gv);
  } catch (const Error& e) {
    CHECK(e.hint().find("bookworm-backports") != std::string::npos);
    CHECK(e.hint().find("--engine vm") != std::string::npos);
  }
  // A recent runsc: usable, and require_usable lets the choice through unchanged.
  hc.gvisor_runsc = fake_runsc(t, "new-runsc", "runsc version 0.0~20240729.0");
  gv = launch::probe_gvisor_engine(hc);
  CHECK(gv.usable);
  CHECK(gv.detail.find("20240729") != std::string::npos);
  CHECK_NOTHROW(launch::require_usable(want_gvisor, gv));
  // engine_for_new_sandbox with SPACE_ENGINE=gvisor and that runsc: gvisor, from SPACE_ENGINE.
  test::ScopedEnv env("SPACE_ENGINE", "gvisor");
  auto c = launch::engine_for_new_sandbox("", hc);
  CHECK(c.engine == Engine::Gvisor);
  CHECK(c.source == "SPACE_ENGINE");
}

TEST_CASE("engine: runsc's version is asked once per binary, and again when the binary changes") {
  store::HostConfig hc;
  test::TempDir t("engine");
  test::ScopedEnv cache_dir("SPACE_CACHE", t.path.c_str());
  hc.gvisor_runsc = fake_runsc(t, "runsc", "runsc version 0.0~20221219.0");
  CHECK_FALSE(launch::probe_gvisor_engine(hc).usable);
  const std::string cache = t.path + "/runsc-version";
  std::string kept = fs::read_file(cache);
  CHECK(kept.find("20221219") != std::string::npos);
  // The kept answer is what the next probe reads, without running the binary: a doctored one
  // (same key) shows it.
  std::string key = kept.substr(0, kept.find('\n'));
  fs::write_file_atomic(cache, key + "\nrunsc version 0.0~20240729.0\n", 0600);
  CHECK(launch::probe_gvisor_engine(hc).usable);
  // Another binary at the same path (an upgrade): asked again.
  fake_runsc(t, "runsc", "runsc version 0.0~20221219.0 ");
  CHECK_FALSE(launch::probe_gvisor_engine(hc).usable);
}

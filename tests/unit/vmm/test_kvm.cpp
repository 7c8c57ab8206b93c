// Unit tests for vmm/kvm's device opening, which runs before any VM exists: a missing device
// names the fix (the message every create and template build shows on a host without KVM, and
// another where kvm_pvm is loaded but made no device, as in a nested PVM guest), and
// a file that is not the KVM device is refused by its API check. Neither needs /dev/kvm.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "support/temp_dir.h"
#include "util/error.h"
#include "vmm/kvm.h"

using namespace space;

TEST_CASE("open_kvm_device: a host without the device gets ENOENT and a hint naming the fix") {
  test::TempDir dir("kvm");
  const std::string missing = dir.path + "/kvm";
  try {
    vmm::open_kvm_device(missing, dir.path);  // no kvm_pvm module there
    FAIL("opened a device that does not exist");
  } catch (const Error& e) {
    CHECK(e.err() == ENOENT);
    CHECK(std::string(e.what()).find("open " + missing) != std::string::npos);
    CHECK(e.hint().find("kvm_intel/kvm_amd") != std::string::npos);
  }
}

TEST_CASE(
    "open_kvm_device: kvm_pvm loaded without a device is named as such (a nested PVM guest)") {
  test::TempDir dir("kvm");
  const std::string modules = dir.path + "/module";
  REQUIRE(::mkdir(modules.c_str(), 0755) == 0);
  REQUIRE(::mkdir((modules + "/kvm_pvm").c_str(), 0755) == 0);
  try {
    vmm::open_kvm_device(dir.path + "/kvm", modules);
    FAIL("opened a device that does not exist");
  } catch (const Error& e) {
    CHECK(e.err() == ENOENT);
    CHECK(e.hint().find("kvm_pvm is loaded but made no KVM device") != std::string::npos);
    CHECK(e.hint().find("dmesg | grep kvm-pvm") != std::string::npos);
    CHECK(e.hint().find("kvm_intel/kvm_amd") == std::string::npos);
  }
}

TEST_CASE("Kvm: a device that does not answer KVM_GET_API_VERSION is refused") {
  CHECK_THROWS_WITH_AS(vmm::Kvm("/dev/null"), doctest::Contains("unsupported KVM API version"),
                       Error);
}

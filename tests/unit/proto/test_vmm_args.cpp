// Unit tests for proto/vmm_args: the VMM's launch arguments round-trip through the one encoder
// and decoder, their spelling stays the flags today's VMMs are started with, and a malformed
// command line (an unknown flag, a missing or bad number, a broken pairing) is an Error naming it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proto/vmm_args.h"
#include "proto/wire.h"

using namespace space;
using Args = std::vector<std::string>;

namespace {

std::string error_of(const Args& a) {
  try {
    proto::decode_vmm_args(a);
  } catch (const proto::ProtoError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("vmm_args: a restore, jailed, with an expiry: the flags as launched, and back") {
  proto::VmmArgs a;
  a.id = "s1";
  a.ready_fd = 3;
  a.restore_dir = "/store/sandboxes/s1";
  a.shared_memory_dir = "/store/templates/t";
  a.jail_uid = 1000000007;
  a.jail_netns_fd = 4;
  a.jail_mntns_fd = 5;
  a.jail_placed_fd = 6;
  a.expires_at = 1796601600;
  a.on_expiry = "checkpoint";
  const Args wire = proto::encode_vmm_args(a);
  CHECK(wire == Args{"s1", "--ready-fd", "3", "--restore", "/store/sandboxes/s1", "--shared-memory",
                     "/store/templates/t", "--jail-uid", "1000000007", "--jail-netns-fd", "4",
                     "--jail-mntns-fd", "5", "--jail-placed-fd", "6", "--expires-at", "1796601600",
                     "--on-expiry", "checkpoint"});
  proto::VmmArgs b = proto::decode_vmm_args(wire);
  CHECK(b.id == a.id);
  CHECK(b.ready_fd == 3);
  CHECK(b.restore_dir == a.restore_dir);
  CHECK(b.shared_memory_dir == a.shared_memory_dir);
  CHECK(b.dir.empty());
  CHECK(b.jail_uid == a.jail_uid);
  CHECK(b.jail_netns_fd == 4);
  CHECK(b.jail_mntns_fd == 5);
  CHECK(b.jail_placed_fd == 6);
  CHECK(b.expires_at == a.expires_at);
  CHECK(b.on_expiry == "checkpoint");
  CHECK_FALSE(b.probe);
}

TEST_CASE("vmm_args: a template build's cold boot and a probe") {
  proto::VmmArgs a;
  a.id = "t";
  a.ready_fd = 3;
  a.dir = "/store/templates/.build-t";
  a.run_dir = "/run/space/t";
  CHECK(proto::encode_vmm_args(a) ==
        Args{"t", "--ready-fd", "3", "--dir", a.dir, "--run-dir", a.run_dir});
  a.probe = true;
  const Args wire = proto::encode_vmm_args(a);
  CHECK(wire.back() == "--probe");
  proto::VmmArgs b = proto::decode_vmm_args(wire);
  CHECK(b.probe);
  CHECK(b.dir == a.dir);
  CHECK(b.run_dir == a.run_dir);
  CHECK(b.jail_uid == 0u);
  CHECK(b.jail_netns_fd == -1);
  CHECK(b.expires_at == 0);
  CHECK(proto::decode_vmm_args({"only-an-id"}).ready_fd == -1);
}

TEST_CASE("vmm_args: malformed command lines are errors that name the problem") {
  CHECK(error_of({}) == "__vmm: the first argument must be the sandbox's id");
  CHECK(error_of({"--ready-fd", "3"}) == "__vmm: the first argument must be the sandbox's id");
  CHECK(error_of({"s", "--readyfd", "3"}) == "__vmm: unknown argument '--readyfd'");
  CHECK(error_of({"s", "--ready-fd"}) == "__vmm: --ready-fd needs a value");
  CHECK(error_of({"s", "--ready-fd", "3x"}) == "__vmm: --ready-fd: '3x' is not a valid number");
  CHECK(error_of({"s", "--ready-fd", "-1"}) == "__vmm: --ready-fd: '-1' is not a valid number");
  CHECK(error_of({"s", "--jail-uid", "99999999999"}) ==
        "__vmm: --jail-uid: '99999999999' is not a valid number");
  CHECK(error_of({"s", "--dir", "/d"}) == "__vmm: --dir and --run-dir go together");
  CHECK(error_of({"s", "--run-dir", "/r"}) == "__vmm: --dir and --run-dir go together");
  CHECK(error_of({"s", "--probe"}) == "__vmm: --probe needs --dir");
  CHECK(error_of({"s", "--on-expiry", "destroy"}) == "__vmm: --on-expiry needs --expires-at");
  CHECK(error_of({"s", "--shared-memory", "/t"}) == "__vmm: --shared-memory needs --restore");
}

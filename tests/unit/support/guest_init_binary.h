// Where the guest-init binary is, for the tests that run it in its --serve-unix mode (a real
// agent on a Unix socket, spawning on this machine): $SPACE_GUEST_INIT (ctest sets it), else
// guest-init next to the test binary (build/ after a plain `ninja`). "" when neither exists;
// those tests are then skipped (needs_guest_init(), a doctest decorator: counted as skipped).
#pragma once
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace space::test {

inline std::string guest_init_binary() {
  std::error_code ec;
  if (const char* env = ::getenv("SPACE_GUEST_INIT"); env && *env)
    return std::filesystem::exists(env, ec) ? std::string(env) : std::string();
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  auto p = self.parent_path() / "guest-init";
  return std::filesystem::exists(p, ec) ? p.string() : std::string();
}

// Skipped when there is no guest-init binary: TEST_CASE("..." * test::needs_guest_init()).
// (One skip decorator per case: a second one would override the first, so `as_root` folds in
// skip.h's needs_root.)
inline doctest::skip needs_guest_init(bool as_root = false) {
  return doctest::skip(guest_init_binary().empty() || (as_root && ::geteuid() != 0));
}

}  // namespace space::test

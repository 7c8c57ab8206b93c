// Unit tests for guest-init/cmdline.h: the sandbox id grammar, kernel command-line parameters
// (last occurrence wins, quotes, bare keys) and the hostname taken from space.id.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "guest-init/cmdline.h"

using namespace space::guest;

TEST_CASE("valid_sandbox_id follows [a-z0-9][a-z0-9_.-]{0,63}") {
  CHECK(valid_sandbox_id("a"));
  CHECK(valid_sandbox_id("0"));
  CHECK(valid_sandbox_id("sbx-1.test_2"));
  CHECK(valid_sandbox_id(std::string(64, 'a')));
  CHECK_FALSE(valid_sandbox_id(""));
  CHECK_FALSE(valid_sandbox_id(std::string(65, 'a')));
  CHECK_FALSE(valid_sandbox_id("-a"));
  CHECK_FALSE(valid_sandbox_id(".a"));
  CHECK_FALSE(valid_sandbox_id("_a"));
  CHECK_FALSE(valid_sandbox_id("Abc"));
  CHECK_FALSE(valid_sandbox_id("a b"));
  CHECK_FALSE(valid_sandbox_id("a/b"));
  CHECK_FALSE(valid_sandbox_id(std::string("a\0b", 3)));
  CHECK_FALSE(valid_sandbox_id("é"));
}

TEST_CASE("cmdline_param finds the last occurrence, handles quotes and bare keys") {
  std::string c = "console=ttyS0 root=/dev/vda rw space.id=one quiet space.id=two\n";
  CHECK(cmdline_param(c, "space.id") == "two");
  CHECK(cmdline_param(c, "root") == "/dev/vda");
  CHECK(cmdline_param(c, "rw") == "");
  CHECK_FALSE(cmdline_param(c, "space"));  // a prefix of a key is not the key
  CHECK_FALSE(cmdline_param(c, "space.i"));
  CHECK_FALSE(cmdline_param(c, "missing"));
  CHECK(cmdline_param("a=\"x y\" b=2", "a") == "x y");
  CHECK(cmdline_param("a=\"x y\" b=2", "b") == "2");
  CHECK(cmdline_param("\"space.id=q\"", "space.id") == "q");
  CHECK(cmdline_param("", "a") == std::nullopt);
  CHECK(cmdline_param("   \t ", "a") == std::nullopt);
  CHECK(cmdline_param("a=\"unterminated", "a") == "unterminated");
  CHECK(cmdline_param("x=1=2", "x") == "1=2");
}

TEST_CASE("hostname_from_cmdline validates space.id and defaults to 'space'") {
  std::string warn;
  CHECK(hostname_from_cmdline("console=ttyS0 space.id=test1", &warn) == "test1");
  CHECK(warn.empty());
  CHECK(hostname_from_cmdline("console=ttyS0", &warn) == "space");
  CHECK(warn.empty());
  CHECK(hostname_from_cmdline("space.id=Bad!", &warn) == "space");
  CHECK(warn.find("invalid space.id") != std::string::npos);
  CHECK(hostname_from_cmdline("space.id=", nullptr) == "space");
  CHECK(hostname_from_cmdline("space.id=" + std::string(65, 'a')) == "space");
}

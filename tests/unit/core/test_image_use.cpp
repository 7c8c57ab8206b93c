// Unit tests for core/image_use.h: how an image's config applies to an exec (Env under -e,
// WorkingDir unless -w, User unless -u) and what `run --image` runs without a command.
#include <doctest/doctest.h>

#include "core/image_use.h"
#include "util/error.h"

using namespace space;

namespace {
store::ImageConfig sample_config() {
  store::ImageConfig c;
  c.env = {"PATH=/opt/bin:/usr/bin", "LANG=C.UTF-8"};
  c.working_dir = "/srv";
  c.user = "app";
  c.entrypoint = {"/entry.sh"};
  c.cmd = {"serve", "--port", "80"};
  return c;
}
}  // namespace

TEST_CASE("apply_image_config: the image's Env first, the exec's entries after (they win)") {
  agent::ExecOptions o;
  o.env = {"LANG=fr_FR.UTF-8"};
  core::apply_image_config(sample_config(), o);
  CHECK(o.env ==
        std::vector<std::string>{"PATH=/opt/bin:/usr/bin", "LANG=C.UTF-8", "LANG=fr_FR.UTF-8"});
  CHECK(o.cwd == "/srv");
  CHECK(o.user == "app");
}

TEST_CASE("apply_image_config: -w and -u given on the command line are kept") {
  agent::ExecOptions o;
  o.cwd = "/tmp";
  o.uid = 0;
  core::apply_image_config(sample_config(), o);
  CHECK(o.cwd == "/tmp");
  CHECK(o.user.empty());  // numeric ids exclude the image's User
  agent::ExecOptions named;
  named.user = "root";
  core::apply_image_config(sample_config(), named);
  CHECK(named.user == "root");
  agent::ExecOptions bare;  // an image with no config changes nothing
  core::apply_image_config(store::ImageConfig{}, bare);
  CHECK(bare.env.empty());
  CHECK(bare.cwd.empty());
  CHECK(bare.user.empty());
}

TEST_CASE("image_command: Entrypoint then Cmd, or an error that names the fix") {
  image::ImageMeta m;
  m.name = "web";
  m.config = sample_config();
  CHECK(core::image_command(m) == std::vector<std::string>{"/entry.sh", "serve", "--port", "80"});
  m.config.entrypoint.clear();
  CHECK(core::image_command(m) == std::vector<std::string>{"serve", "--port", "80"});
  m.config.cmd.clear();
  try {
    core::image_command(m);
    FAIL("accepted an image with no command");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("no Entrypoint or Cmd") != std::string::npos);
    CHECK(e.hint() == "give one: space run --image web -- CMD [ARG...]");
  }
}

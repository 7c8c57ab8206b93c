// Unit tests for cli/oci_app.h: the runc grammar is chosen only by the name space-oci or a first
// --oci (so `space state X` stays space's own); its errors exit 1 and go to --log as JSON lines,
// as conmon reads them; --version names the spec; list and state of what is not there.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/oci_app.h"
#include "support/temp_dir.h"
#include "util/fs.h"
#include "util/json.h"

using namespace space;

namespace {

bool is_oci(std::vector<const char*> args) {
  return cli::oci_invocation(static_cast<int>(args.size()), args.data());
}

int run(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::run_oci(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("oci cli: which command lines are runc's") {
  CHECK(is_oci({"space-oci", "state", "x"}));
  CHECK(is_oci({"/usr/local/bin/space-oci", "create", "--bundle", "b", "x"}));
  CHECK(is_oci({"space", "--oci", "state", "x"}));
  CHECK_FALSE(is_oci({"space", "state", "x"}));
  CHECK_FALSE(is_oci({"/usr/bin/space", "create", "x"}));
  CHECK_FALSE(is_oci({"space", "exec", "x", "--", "--oci"}));
  CHECK_FALSE(is_oci({"space-ocix", "state", "x"}));
  CHECK_FALSE(is_oci({"space"}));
}

TEST_CASE("oci cli: errors exit 1 and are logged as JSON for the engine") {
  test::TempDir t("oci-cli");
  const std::string log = t.path + "/log.json";
  CHECK(run({"space-oci", "--root", t.path + "/state", "--log", log, "--log-format", "json",
             "state", "nosuch"}) == 1);
  std::string text = fs::read_file(log);
  json::Value line = json::parse(text.substr(0, text.find('\n')));
  CHECK(line.at("level").as_string() == "error");
  CHECK(line.at("msg").as_string().find("container nosuch does not exist") == 0);
  CHECK_FALSE(line.at("time").as_string().empty());
  // A usage error is an error too, with the same exit code.
  CHECK(run({"space-oci", "--root", t.path, "--log", log, "--log-format", "json", "kill"}) == 1);
  CHECK(run({"space-oci", "--root", t.path, "nosuchcommand"}) == 1);
  // Text format: logfmt.
  const std::string tlog = t.path + "/log.txt";
  CHECK(run({"space-oci", "--root", t.path, "--log", tlog, "delete", "nosuch"}) == 1);
  CHECK(fs::read_file(tlog).find("level=error msg=\"container nosuch does not exist") !=
        std::string::npos);
  // Nothing there: an empty list.
  CHECK(run({"space-oci", "--root", t.path + "/none", "list", "-q"}) == 0);
  CHECK(run({"space-oci", "--version"}) == 0);
  CHECK(run({"space-oci", "features"}) == 0);
  CHECK(run({"space", "--oci", "--root", t.path, "list", "--format", "json"}) == 0);
}

// Unit tests for cli/app.h: which command a command line names (global flags and their values
// skipped), and that a run builds only that command, but every command for top-level help and
// `completion`; an unknown name is an error listing the commands; the command built alone parses as
// it does in the full tree; cp's --keep-privileges needs -a.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/app.h"
#include "util/error.h"

using namespace space;

namespace {

std::string named(std::vector<const char*> args) {
  args.insert(args.begin(), "space");
  return cli::invoked_command(static_cast<int>(args.size()), args.data());
}

// The top-level commands built for this command line.
std::vector<std::string> built(std::vector<const char*> args) {
  args.insert(args.begin(), "space");
  CLI::App app{"space"};
  cli::GlobalOptions g;
  cli::build_app_for(app, g, static_cast<int>(args.size()), args.data());
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(s->get_name());
  return names;
}

size_t all_commands() {
  CLI::App app{"space"};
  cli::GlobalOptions g;
  cli::build_app(app, g);
  return app.get_subcommands([](const CLI::App*) { return true; }).size();
}

}  // namespace

TEST_CASE("invoked_command skips global flags and their values") {
  CHECK(named({"list"}) == "list");
  CHECK(named({"--root", "/tmp/r", "--format", "json", "state", "a"}) == "state");
  CHECK(named({"--root=/tmp/r", "--log-level=debug", "pause", "x"}) == "pause");
  CHECK(named({"--log-format", "json", "--log-level", "info", "exec", "a", "--", "ls"}) == "exec");
  CHECK(named({"--version"}).empty());
  CHECK(named({}).empty());
  CHECK(named({"--", "list"}).empty());
}

TEST_CASE("a run builds only the command it names") {
  CHECK(built({"--root", "/r", "pause", "a"}) == std::vector<std::string>{"pause"});
  CHECK(built({"template", "list"}) == std::vector<std::string>{"template"});
  CHECK(built({"--version"}).empty());
  const size_t all = all_commands();
  CHECK(all > 20);
  CHECK(built({"--help"}).size() == all);
  CHECK(built({"--help", "create"}).size() == all);  // the top-level help, listing every command
  CHECK(built({"create", "--help"}) == std::vector<std::string>{"create"});
  CHECK(built({"completion", "bash"}).size() == all);
}

TEST_CASE("an unknown command is an error that lists the commands") {
  try {
    built({"--root", "/r", "pasue", "a"});
    FAIL("no error for an unknown command");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "unknown command 'pasue'");
    CHECK(e.hint().find("pause") != std::string::npos);
    CHECK(e.hint().find("__vmm") == std::string::npos);  // internal commands are not offered
  }
}

TEST_CASE("the command built alone parses its flags and the global ones after it") {
  std::vector<const char*> args = {"space", "destroy", "--force", "a", "b", "--format", "json"};
  CLI::App app{"space"};
  cli::GlobalOptions g;
  cli::build_app_for(app, g, static_cast<int>(args.size()), args.data());
  CLI::App* destroy = app.get_subcommand("destroy");
  destroy->callback({});  // parse only: no store to destroy in
  app.parse(static_cast<int>(args.size()), args.data());
  CHECK(destroy->parsed());
  CHECK(destroy->get_option("--force")->as<bool>());
  CHECK(g.format == "json");
}

TEST_CASE("cp --keep-privileges parses with -a and is an error without it") {
  auto parse = [](std::vector<const char*> args) {
    args.insert(args.begin(), "space");
    CLI::App app{"space"};
    cli::GlobalOptions g;
    cli::build_app_for(app, g, static_cast<int>(args.size()), args.data());
    CLI::App* cp = app.get_subcommand("cp");
    cp->callback({});  // parse only: no sandbox to copy from
    app.parse(static_cast<int>(args.size()), args.data());
    return cp->get_option("--keep-privileges")->as<bool>();
  };
  CHECK(parse({"cp", "-a", "--keep-privileges", "sb:/bin", "out"}));
  CHECK_FALSE(parse({"cp", "-a", "sb:/bin", "out"}));
  CHECK_THROWS_WITH_AS(parse({"cp", "--keep-privileges", "sb:/bin", "out"}),
                       doctest::Contains("--archive"), CLI::RequiresError);
}

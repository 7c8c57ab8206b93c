// runc's command line over oci/runtime.h. Global flags: --root (the engine's state directory),
// --log, --log-format text|json, and the flags engines pass that mean nothing for a microVM
// (--systemd-cgroup, --debug, --rootless, --criu), accepted. The space store comes from
// $SPACE_ROOT or /var/lib/space, as for space itself.
#include "cli/oci_app.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "cli/app.h"
#include "cli/errors.h"
#include "oci/runtime.h"
#include "oci/spec.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/utc.h"
#include "util/utf8.h"

namespace space::cli {
namespace {

// Every command's flags: parsed into here, kept as long as the parse.
struct OciArgs {
  oci::CreateRequest cr;
  std::string id, sig = "TERM", cwd, format = "table", ignored_value;
  bool all = false, force = false, tty = false, quiet = false, ignored = false, debug = false;
  int preserve_fds = 0;
  oci::ExecRequest er;
  std::vector<std::string> env;
};

struct OciGlobals {
  oci::Runtime rt;
  OciArgs a;
  std::string log_file, log_format = "text";
  int exit_code = 0;
};

// An error as runc reports it: on stderr, and as one JSON line {"level","msg","time"} (or a
// logfmt line) appended to --log, where conmon looks for it.
void report_error(const OciGlobals& g, const std::string& msg) {
  std::fprintf(stderr, "space-oci: error: %s\n", utf8::printable(msg).c_str());
  if (g.log_file.empty()) return;
  FILE* f = std::fopen(g.log_file.c_str(), "ae");
  if (!f) return;
  std::string now = utc::rfc3339(::time(nullptr));
  if (g.log_format == "json")
    std::fprintf(f, "{\"level\":\"error\",\"msg\":%s,\"time\":%s}\n", json::quote(msg).c_str(),
                 json::quote(now).c_str());
  else
    std::fprintf(f, "time=%s level=error msg=%s\n", json::quote(now).c_str(),
                 json::quote(msg).c_str());
  std::fclose(f);
}

std::string with_hint(const std::exception& e) {
  std::string m = e.what();
  if (const auto* se = dynamic_cast<const Error*>(&e); se && !se->hint().empty())
    m += " (hint: " + se->hint() + ")";
  return m;
}

void add_id(CLI::App* c, std::string& id) {
  c->add_option("id", id, "Container id")->required();
}

void add_lifecycle(CLI::App& app, OciGlobals& g);
void add_exec(CLI::App& app, OciGlobals& g);
void add_list(CLI::App& app, OciGlobals& g);

// The whole command line: global flags, then each command's.
void build(CLI::App& app, OciGlobals& g) {
  app.set_version_flag("-v,--version", std::string("space-oci version ") + SPACE_VERSION +
                                           "\nspec: " + oci::kSpecVersion);
  app.require_subcommand(1);
  app.add_option("--root", g.rt.state_root, "State directory of the containers")
      ->capture_default_str();
  app.add_option("--log", g.log_file, "Append errors to this file");
  app.add_option("--log-format", g.log_format, "Format of --log: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  auto& a = g.a;
  bool& ignored = a.ignored;
  std::string& ignored_value = a.ignored_value;
  app.add_flag("--systemd-cgroup", ignored, "Accepted; the VM gets space's own cgroup");
  app.add_flag("--debug", a.debug, "Log what create does (the root's digest and import) on stderr");
  app.add_option("--rootless", ignored_value, "Accepted (space-oci runs as root)");
  app.add_option("--criu", ignored_value, "Accepted; checkpoints are space checkpoint's");

  add_lifecycle(app, g);
  add_exec(app, g);
  add_list(app, g);
  auto* feat = app.add_subcommand("features", "Print what this runtime supports, as JSON");
  feat->callback([] { print_json(oci::features(), 2); });
}

// create, start, state, kill, delete, pause and resume.
void add_lifecycle(CLI::App& app, OciGlobals& g) {
  auto& a = g.a;
  bool& ignored = a.ignored;
  oci::CreateRequest& cr = a.cr;
  auto* create =
      app.add_subcommand("create", "Create a container: restore its VM, do not start its process");
  cr.bundle = ".";
  create->add_option("-b,--bundle", cr.bundle, "The bundle directory (config.json and the root)")
      ->capture_default_str();
  create->add_option("--pid-file", cr.pid_file, "Write the container's host pid here");
  create->add_option("--console-socket", cr.console_socket,
                     "Unix socket that receives the pty master for a terminal");
  create->add_flag("--no-pivot", ignored, "Accepted");
  create->add_flag("--no-new-keyring", ignored, "Accepted");
  create->add_option("--preserve-fds", a.preserve_fds, "Accepted; only stdio reaches the process");
  add_id(create, cr.id);
  create->callback([&g] { oci::create_container(g.rt, g.a.cr); });

  std::string& id = a.id;
  auto* start = app.add_subcommand("start", "Start a created container's process");
  add_id(start, id);
  start->callback([&g] { oci::start_container(g.rt, g.a.id); });

  auto* state = app.add_subcommand("state", "Print a container's OCI state as JSON");
  add_id(state, id);
  state->callback([&g] { print_json(oci::container_state(g.rt, g.a.id), 2); });

  std::string& sig = a.sig;
  auto* kill = app.add_subcommand("kill", "Send a signal (default TERM) to a container's process");
  kill->add_flag("-a,--all", a.all, "Every process of the container");
  add_id(kill, id);
  kill->add_option("signal", sig, "Signal name or number")->capture_default_str();
  kill->callback([&g] { oci::kill_container(g.rt, g.a.id, oci::parse_signal(g.a.sig), g.a.all); });

  auto* del = app.add_subcommand("delete", "Remove a stopped container (and its VM)");
  del->add_flag("-f,--force", a.force, "Kill a container that still runs");
  add_id(del, id);
  del->callback([&g] { oci::delete_container(g.rt, g.a.id, g.a.force); });

  auto* pause = app.add_subcommand("pause", "Pause a container's VM");
  add_id(pause, id);
  pause->callback([&g] { oci::pause_container(g.rt, g.a.id); });
  auto* resume = app.add_subcommand("resume", "Resume a paused container's VM");
  add_id(resume, id);
  resume->callback([&g] { oci::resume_container(g.rt, g.a.id); });
}

// exec: a process from --process FILE, or from the command line.
void add_exec(CLI::App& app, OciGlobals& g) {
  auto& a = g.a;
  oci::ExecRequest& er = a.er;
  auto* exec = app.add_subcommand("exec", "Run another process in a container");
  exec->add_option("-p,--process", er.process_file, "process.json describing the process");
  exec->add_option("--pid-file", er.pid_file, "Write the process's host pid here");
  exec->add_option("--console-socket", er.console_socket,
                   "Unix socket that receives the pty master for a terminal");
  exec->add_flag("-t,--tty", a.tty, "Give the process a terminal");
  exec->add_flag("-d,--detach", er.detach, "Return once it runs");
  exec->add_option("-e,--env", a.env, "NAME=VALUE (without --process; repeatable)")
      ->allow_extra_args(false);  // one value each time, as runc's
  exec->add_option("--cwd", a.cwd, "Working directory (without --process)");
  add_id(exec, er.id);
  // The command is everything after the id, its own flags too (sh -c ...), as with runc.
  exec->prefix_command();
  exec->footer("Without --process: space-oci exec [OPTIONS] ID COMMAND [ARG...]");
  exec->callback([&g, exec] {
    auto& er = g.a.er;
    if (exec->count("--tty")) er.tty = g.a.tty;
    const std::vector<std::string> cmd = exec->remaining();
    if (!er.process_file.empty() && !cmd.empty())
      fail("exec takes --process FILE or a command after the id, not both");
    if (er.process_file.empty()) {  // the process from the command line, as process.json has it
      if (cmd.empty()) fail("exec needs --process FILE or a command after the id");
      json::Value p = json::Value::object();
      json::Value args = json::Value::array();
      for (const auto& a : cmd) args.push_back(a);
      p.set("args", args);
      json::Value e = json::Value::array();
      for (const auto& kv : g.a.env) e.push_back(kv);
      p.set("env", e);
      if (!g.a.cwd.empty()) p.set("cwd", g.a.cwd);
      p.set("terminal", g.a.tty);
      er.process = std::move(p);
    }
    g.exit_code = oci::exec_container(g.rt, er);
  });
}

// list, as a table or JSON.
void add_list(CLI::App& app, OciGlobals& g) {
  auto& a = g.a;
  auto* list = app.add_subcommand("list", "List containers");
  list->add_option("-f,--format", a.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  list->add_flag("-q,--quiet", a.quiet, "Ids only");
  list->callback([&g] {
    const bool quiet = g.a.quiet;
    auto cs = oci::list_containers(g.rt);
    if (g.a.format == "json") {
      json::Value a = json::Value::array();
      for (auto& c : cs) a.push_back(c);
      print_json(a);
      return;
    }
    if (!quiet)
      std::printf("%-20s %-8s %-10s %-40s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED");
    for (const auto& c : cs) {
      if (quiet) {
        std::printf("%s\n", c.at("id").as_string().c_str());
        continue;
      }
      std::printf("%-20s %-8lld %-10s %-40s %s\n", c.at("id").as_string().c_str(),
                  static_cast<long long>(c.at("pid").as_int()), c.at("status").as_string().c_str(),
                  c.at("bundle").as_string().c_str(), c.at("created").as_string().c_str());
    }
  });
}

}  // namespace

bool oci_invocation(int argc, const char* const* argv) {
  if (argc < 1 || !argv[0]) return false;
  const char* base = std::strrchr(argv[0], '/');
  base = base ? base + 1 : argv[0];
  if (std::strcmp(base, "space-oci") == 0) return true;
  return argc > 1 && std::strcmp(argv[1], "--oci") == 0;
}

int run_oci(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && std::strcmp(args[1], "--oci") == 0) args.erase(args.begin() + 1);
  CLI::App app{
      "space-oci: an OCI runtime (runc's command line) that runs containers in space "
      "microVMs",
      "space-oci"};
  OciGlobals g;
  const char* env_root = std::getenv("SPACE_ROOT");
  g.rt.ctx.root = env_root && *env_root ? env_root : "/var/lib/space";
  return parse_and_run(
      app,
      [&] {
        build(app, g);
        app.parse_complete_callback([&g] {
          if (g.a.debug) log::configure(log::parse_level("info"), log::parse_format("text"));
        });
        app.parse(static_cast<int>(args.size()), args.data());
        return g.exit_code;
      },
      [&g](const std::string& what) {
        report_error(g, what);
        return 1;
      },
      [&g](const std::exception& e) {
        report_error(g, with_hint(e));
        return 1;
      });
}

}  // namespace space::cli

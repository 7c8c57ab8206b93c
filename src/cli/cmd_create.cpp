// `space create [--template NAME | --cold] [--image NAME [--disk-size SIZE]] [--cpus N]
// [--memory MiB] [--kernel PATH] [--rootfs PATH] [--secret NAME[:ttl=D][:uses=N]]...
// [--copy HOST:GUEST]... [--net none|allow=RULE,...] [--ttl D [--on-expiry destroy|checkpoint]]
// [--idle-pause D] [--idle-checkpoint D]
// [ID]`: makes a sandbox, from a template (restored) or by a cold boot, with the --secret names
// granted and the --copy files copied in (core's create transaction: all or nothing), and prints
// its id once it runs.
#include <cstdio>

#include "cli/app.h"
#include "cli/boot_flags.h"
#include "cli/content_flags.h"
#include "cli/expiry_flags.h"
#include "core/sandbox.h"
#include "store/config.h"
#include "util/json.h"

namespace space::cli {

namespace {
struct CreateFlags {
  core::CreateOptions opts;
  BootFlags boot;
  ExpiryFlags expiry;
  IdleFlags idle;
  ContentFlags content;
};
}  // namespace

void register_create(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(
      app, "create", "Create a sandbox (restored from a template, or cold-booted); prints its id");
  auto* f = g.hold<CreateFlags>();  // freed with GlobalOptions
  cmd->add_option(
      "--template,-t", f->opts.template_name,
      "Template to restore (default: config.toml [defaults] template, else \"default\"; "
      "when that one is missing, a cold boot)");
  cmd->add_flag(
      "--cold", f->opts.cold,
      "Boot the kernel instead of restoring a template (seconds: about 12 s on a PVM host)");
  f->boot.add(cmd, f->opts.kernel, f->opts.rootfs, ", for a cold boot");
  add_engine_option(cmd, f->opts.engine);
  cmd->add_option("--image", f->opts.image,
                  "Attach a copy of this image (space image list) and run every exec inside it");
  f->content.add(cmd, "before it is handed over, as space cp does");
  cmd->add_option(
      "--net", f->opts.net,
      "Network: none (the default, or config.toml [net] allow), or allow=RULE[,RULE...]: names "
      "(pypi.org:443), wildcards (*.example.com), addresses or CIDRs (127.0.0.2:8080, 10.0.0.0/8)");
  f->expiry.add(cmd, "the sandbox");
  f->idle.add(cmd);
  cmd->add_option("id", f->opts.id, "Sandbox id (default: 12 random hex digits)");
  cmd->callback([&g, f] {
    f->boot.apply(f->opts.vcpus, f->opts.memory_mib);
    f->opts.ttl_ms = f->expiry.ttl_ms();
    f->opts.on_expiry = f->expiry.on_expiry;
    f->opts.idle = f->idle.options();
    f->content.apply(f->opts);
    auto st = core::create_sandbox(g.context(), f->opts);
    if (g.json()) {
      json::Value v = json::Value::object();
      v.set("id", st.id);
      print_json(v);
    } else {
      std::printf("%s\n", st.id.c_str());
    }
  });
}

}  // namespace space::cli

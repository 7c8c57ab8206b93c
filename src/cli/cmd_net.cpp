// `space net allow ID RULE...`, `space net deny ID RULE... | --all`, `space net show ID` and
// `space net log ID [--follow]`: a sandbox's network policy and its audit log (core/net.h).
// Changes apply to the sandbox's next connection. allow and deny print the rules now in force,
// one a line (the show JSON with --format json); show prints JSON; log prints the audit log's
// JSON lines, and with --follow keeps printing new ones until Ctrl-C or the sandbox is gone.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli/app.h"
#include "core/net.h"
#include "core/sandbox.h"
#include "store/paths.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_lines.h"
#include "util/process.h"

namespace space::cli {

namespace {

struct NetFlags {
  std::string id;
  std::vector<std::string> rules;
  bool all = false, follow = false;
};

void print_rules(const GlobalOptions& g, const store::Context& ctx, const std::string& id,
                 const egress::Policy& p) {
  if (g.json()) {
    print_json(core::net_show(ctx, id));
    return;
  }
  for (const auto& t : egress::to_texts(p)) std::printf("%s\n", t.c_str());
  if (p.empty()) std::fprintf(stderr, "space: sandbox %s now allows no connection\n", id.c_str());
}

// Prints what `fd` holds from `pos` on, up to its last complete line; advances `pos`.
void print_from(int fd, off_t& pos, std::string& partial) {
  if (::lseek(fd, pos, SEEK_SET) != pos) return;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    pos += n;
    partial.append(buf, size_t(n));
    size_t nl = partial.rfind('\n');
    if (nl != std::string::npos) {
      std::fwrite(partial.data(), 1, nl + 1, stdout);
      partial.erase(0, nl + 1);
      std::fflush(stdout);
    }
  }
}

// Prints the log from `path` (its previous generation first) as it grows, until a signal or the
// sandbox is gone. When the broker rotates it (egress/audit.h), the rest of the file followed so
// far is read from its new name, then the new file from its start.
void follow_log(const store::Context& ctx, const std::string& id, const std::string& path) {
  proc::SignalGuard sig;
  off_t pos = 0;
  ino_t ino = 0;
  std::string partial;
  if (Fd prev(::open(jsonl::previous(path).c_str(), O_RDONLY | O_CLOEXEC)); prev)
    print_from(prev.get(), pos, partial);
  pos = 0;
  partial.clear();
  for (;;) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (fd && ::fstat(fd.get(), &st) == 0) {
      if (ino != 0 && st.st_ino != ino) {
        Fd old(::open(jsonl::previous(path).c_str(), O_RDONLY | O_CLOEXEC));
        struct stat ost {};
        if (old && ::fstat(old.get(), &ost) == 0 && ost.st_ino == ino)
          print_from(old.get(), pos, partial);
        pos = 0;
        partial.clear();
      }
      ino = st.st_ino;
      print_from(fd.get(), pos, partial);
    }
    if (!fs::exists(store::sandbox_paths(ctx.root, id).state)) return;
    pollfd p{sig.fd(), POLLIN, 0};
    if (::poll(&p, 1, 250) > 0) return;  // Ctrl-C: done
  }
}

}  // namespace

void register_net(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(app, "net", "Show or change a sandbox's network policy; its audit log");
  cmd->require_subcommand(1);
  auto* f = g.hold<NetFlags>();  // freed with GlobalOptions

  auto* allow =
      add_command(*cmd, "allow",
                  "Allow connections to more destinations (gives a sandbox without one a network)");
  allow->add_option("id", f->id, "Sandbox id")->required();
  allow
      ->add_option("rules", f->rules,
                   "Rules: pypi.org[:PORT], *.example.com[:PORT], *, ADDR[/LEN][:PORT], "
                   "[V6ADDR[/LEN]]:PORT; commas also separate them")
      ->required();
  allow->callback([&g, f] {
    store::Context ctx = g.context();
    print_rules(g, ctx, f->id, core::net_allow(ctx, f->id, f->rules));
  });

  auto* deny = add_command(*cmd, "deny", "Remove rules (or, with --all, the sandbox's network)");
  deny->add_option("id", f->id, "Sandbox id")->required();
  deny->add_option("rules", f->rules, "Rules to remove, as net show prints them");
  deny->add_flag("--all", f->all, "Take the network away: no proxy variables, no connection");
  deny->callback([&g, f] {
    if (f->all == !f->rules.empty())
      fail("give either rules or --all", "space net show " + f->id + " lists the rules");
    store::Context ctx = g.context();
    egress::Policy p = core::net_deny(ctx, f->id, f->rules, f->all);
    if (f->all) {
      if (g.json()) print_json(core::net_show(ctx, f->id));
      return;
    }
    print_rules(g, ctx, f->id, p);
  });

  auto* show = add_command(*cmd, "show", "Print a sandbox's policy as JSON");
  show->add_option("id", f->id, "Sandbox id")->required();
  show->callback([&g, f] {
    store::Context ctx = g.context();
    print_json(core::net_show(ctx, f->id), 2);
  });

  auto* log = add_command(*cmd, "log",
                          "Print a sandbox's network audit log (JSON lines; kept after destroy)");
  log->add_option("id", f->id, "Sandbox id")->required();
  log->add_flag("--follow,-f", f->follow, "Keep printing new lines until Ctrl-C or destroy");
  log->callback([&g, f] {
    store::Context ctx = g.context();
    std::string path = core::net_log_path(ctx, f->id);  // validates the id
    if (!f->follow) {
      if (!fs::exists(path) && !fs::exists(store::sandbox_paths(ctx.root, f->id).state))
        fail("sandbox " + f->id + " does not exist and has no network log",
             "'space list' shows the sandboxes");
      for (const auto& v : core::net_log(ctx, f->id)) print_json(v);
      return;
    }
    core::require_sandbox(store::sandbox_paths(ctx.root, f->id), f->id);
    follow_log(ctx, f->id, path);
  });
}

}  // namespace space::cli

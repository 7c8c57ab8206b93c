// `space cp [-a [--keep-privileges]] [-L] [--max-size SIZE] SRC... ID:DEST` and `space cp ...
// ID:SRC DEST`: files into and out of a sandbox (core/copy.h); `-` is a tar stream on stdin or
// stdout. On a terminal stderr shows the bytes copied and the rate; after a copy out with -a
// that dropped privileges, stderr says how many; --format json prints a summary on stdout.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cli/app.h"
#include "core/copy.h"
#include "proto/fields.h"
#include "store/config.h"
#include "util/json.h"
#include "util/size.h"

namespace space::cli {

namespace {
struct CpFlags {
  std::vector<std::string> paths;
  bool archive = false, follow = false, keep_privileges = false;
  std::string max_size;
};

std::string human(double bytes) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (bytes >= 1024 && i < 4) bytes /= 1024, i++;
  char buf[32];
  std::snprintf(buf, sizeof buf, i ? "%.1f %s" : "%.0f %s", bytes, unit[i]);
  return buf;
}

// A status line on stderr, rewritten at most ten times a second, when stderr is a terminal.
class Progress {
 public:
  Progress() : tty_(::isatty(2) == 1), t0_(std::chrono::steady_clock::now()) {}
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  void update(uint64_t bytes) {
    if (!tty_) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    double s = std::chrono::duration<double>(now - t0_).count();
    std::fprintf(stderr, "\r\033[Kcp: %s, %s/s", human(static_cast<double>(bytes)).c_str(),
                 human(s > 0 ? static_cast<double>(bytes) / s : 0).c_str());
    std::fflush(stderr);
    shown_ = true;
  }

 private:
  bool tty_, shown_ = false;
  std::chrono::steady_clock::time_point t0_, last_;
};
}  // namespace

void register_cp(CLI::App& app, GlobalOptions& g) {
  auto* cmd = add_command(
      app, "cp",
      "Copy files into (SRC... ID:DEST) or out of (ID:SRC DEST) a sandbox; - is a tar stream");
  auto* f = g.hold<CpFlags>();  // freed with GlobalOptions
  auto* archive =
      cmd->add_flag("--archive,-a", f->archive,
                    "Keep owners (numeric), setuid bits and extended attributes (copying "
                    "out, see --keep-privileges); by default files copied in belong to "
                    "the sandbox's user, files copied out to you");
  cmd->add_flag("--keep-privileges", f->keep_privileges,
                "With -a, copying out: keep setuid/setgid bits and security.* and trusted.* "
                "extended attributes (file capabilities, SELinux labels) too; without it they are "
                "dropped, with a warning that counts them")
      ->needs(archive);
  cmd->add_flag("--follow-link,-L", f->follow,
                "Copy what SRC points to when SRC itself is a symbolic link");
  cmd->add_option("--max-size", f->max_size,
                  "Most file data a copy out may write, e.g. 512M or 0 for no limit "
                  "(default: [cp] max_size_mib in config.toml, 1024 MiB)");
  cmd->add_option("paths", f->paths, "SRC... DEST: one side is ID:PATH, '-' is a tar stream")
      ->required()
      ->expected(2, -1);
  cmd->callback([&g, f] {
    store::Context ctx = g.context();
    core::CopyOptions o;
    o.sources.assign(f->paths.begin(), f->paths.end() - 1);
    o.dest = f->paths.back();
    o.archive = f->archive;
    o.keep_privileges = f->keep_privileges;
    o.follow_link = f->follow;
    o.max_bytes = f->max_size.empty()
                      ? uint64_t{store::load_host_config(g.root).cp_max_size_mib} << 20
                      : parse_size(f->max_size);
    core::CopyStats s;
    {
      Progress progress;  // its line is gone before the warning below
      o.progress = [&progress](uint64_t bytes) { progress.update(bytes); };
      s = core::copy_files(ctx, o);
      o.progress = nullptr;
    }
    if (std::string w = core::privileges_warning(o, s); !w.empty())
      std::fprintf(stderr, "%s\n", w.c_str());
    if (g.json()) print_json(proto::fields_json(s));
  });
}

}  // namespace space::cli

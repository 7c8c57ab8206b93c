// `image build --debian`: mmdebstrap makes a Debian root filesystem in a nested subvolume of the
// image's staging (image/image_make.h), contained in namespaces of its own (image/contained.h) so
// that Ctrl-C or an error leaves no process and no mount behind; its output goes to
// mmdebstrap.log beside it (kept in the image) and feeds the progress lines. The rest is the
// import pipeline: mkfs.ext4 -d, image.json, install.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/contained.h"
#include "image/debian.h"
#include "image/image.h"
#include "image/image_make.h"
#include "store/btrfs.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/process.h"

extern char** environ;

namespace space::image {
namespace {

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::vector<std::string> host_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; e++) env.emplace_back(*e);
  return env;
}

// Runs mmdebstrap into `rootfs` (an empty directory); throws with its output's tail if it fails.
void run_mmdebstrap(ImageStage& st, const std::string& program, const DebianBuildOptions& o,
                    const debian::Sources& sources, const std::string& rootfs) {
  const std::string log_path = st.dir() + "/mmdebstrap.log";
  Fd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  if (!log) throw_errno("create " + log_path);
  st.say("mmdebstrap " + o.suite + " from " + sources.described +
         (o.packages.empty() ? "" : " with " + join(o.packages, ",")) + " (log: " + log_path + ")");
  debian::Progress progress;
  int code = run_contained(debian::mmdebstrap_argv(program, o.suite, o.packages, sources, rootfs),
                           debian::mmdebstrap_env(host_environment()), log.get(), st.signals(),
                           [&](std::string_view line) {
                             if (auto phase = progress.feed(line))
                               st.say(*phase);
                             else if (o.status)
                               o.status(progress.status());
                           });
  if (code == 0) return;
  std::string text = fs::tail_lines(log_path, 400);
  auto f = debian::explain_failure(text, o.suite, sources);
  fail(f.what + ": mmdebstrap exited with status " + std::to_string(code) +
           "; the end of its output:\n" + debian::tail(text, 12),
       f.hint);
}

// What every Debian image has; a success without it is mmdebstrap's bug, not an image.
void check_userland(const std::string& rootfs) {
  for (const char* p : {"/etc/passwd", "/bin/sh", "/usr/bin/apt-get"}) {
    struct stat st {};
    if (::lstat((rootfs + p).c_str(), &st) != 0)
      fail("mmdebstrap succeeded but the root filesystem has no " + std::string(p));
  }
}

}  // namespace

ImageMeta build_debian_image(const store::Context& ctx, const DebianBuildOptions& o) {
  try {
    debian::check_suite(o.suite);
    for (const auto& p : o.packages) debian::check_package(p);
    if (!o.mirror.empty()) debian::check_mirror(o.mirror);
    const std::string program = proc::find_program("mmdebstrap");
    if (program.empty())
      fail("mmdebstrap not found", "apt-get install mmdebstrap (it builds Debian images)");
    std::string codename;
    try {
      codename = debian::os_codename(fs::read_file("/etc/os-release", 1 << 20));
    } catch (const Error&) {
    }
    const auto sources = debian::choose_sources(
        o.suite, o.mirror, codename,
        o.mirror.empty() ? debian::host_apt_sources() : std::vector<std::string>{});
    ImageTarget t{o.name, o.disk_bytes, o.force, o.progress};
    return make_image(ctx, t, [&](ImageStage& st) {
      ImageMeta& m = st.meta();
      m.kind = "debian";
      m.source = "debian:" + o.suite;
      m.platform = "linux/amd64";
      m.config.env = {std::string(debian::kPath)};
      m.config.cmd = {"/bin/bash"};
      const std::string rootfs = st.dir() + "/rootfs";
      store::btrfs::create_subvolume(rootfs, 0755);
      st.set_rootfs(rootfs);
      run_mmdebstrap(st, program, o, sources, rootfs);
      check_userland(rootfs);
    });
  } catch (Error& e) {
    e.add_context("build image " + o.name + " from debian:" + o.suite);
    throw;
  }
}

}  // namespace space::image

// The pure parts of `image build --debian`: checking what the user asked for, choosing the apt
// sources, the mmdebstrap command line, reading mmdebstrap's output for progress, and turning its
// failure into an error that names the fix. No I/O but host_apt_sources; see image_debian.cpp for
// the build itself.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace space::image::debian {

// The mirror used when neither --mirror nor the host's own sources apply.
inline constexpr std::string_view kDefaultMirror = "http://deb.debian.org/debian";
// The Env of a Debian image.
inline constexpr std::string_view kPath =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Throws (with a hint) unless `suite` is a plain suite name (bookworm, stable, sid ...).
void check_suite(const std::string& suite);
// Throws unless `p` is a package name, optionally with =VERSION or /RELEASE (no apt patterns,
// globs or options).
void check_package(const std::string& p);
// Throws unless `url` is an http, https or file URL without spaces.
void check_mirror(const std::string& url);
// "a,b,,c" -> {"a", "b", "c"}, each checked; spaces around names are dropped.
std::vector<std::string> split_packages(const std::string& list);

// VERSION_CODENAME of an /etc/os-release text; "" if none.
std::string os_codename(std::string_view os_release);
// The host's apt source files under `etc_apt` that hold an entry: sources.list, then
// sources.list.d/*.list and *.sources, sorted. Unreadable ones are left out.
std::vector<std::string> host_apt_sources(const std::string& etc_apt = "/etc/apt");

// What mmdebstrap is given as MIRROR arguments, and how to name them in messages.
struct Sources {
  std::vector<std::string> mirrors;  // URLs or source files; empty: mmdebstrap's default
  std::string described;
};
// `mirror` when given; else the host's source files when `suite` is the host's codename and it
// has some; else the default mirror (mmdebstrap adds updates and security for a stable suite).
Sources choose_sources(const std::string& suite, const std::string& mirror,
                       const std::string& host_codename,
                       const std::vector<std::string>& host_sources);

// The mmdebstrap command line: root mode (run in namespaces of our own), the apt variant
// (Essential: yes packages and apt: a shell, coreutils, /etc/passwd) plus `packages`, verbose,
// a directory `target`. An https mirror brings ca-certificates.
std::vector<std::string> mmdebstrap_argv(const std::string& program, const std::string& suite,
                                         const std::vector<std::string>& packages,
                                         const Sources& sources, const std::string& target);

// mmdebstrap's environment: `host_env` without the locale (its messages are read in English)
// and with a PATH that has the sbin directories, LC_ALL=C.UTF-8, DEBIAN_FRONTEND=noninteractive.
std::vector<std::string> mmdebstrap_env(const std::vector<std::string>& host_env);

// Follows mmdebstrap's output a line at a time: its phase changes ("I: running apt-get
// update...") and a count of the packages fetched, unpacked and set up.
class Progress {
 public:
  // The new phase's description if `line` starts one, else nullopt.
  std::optional<std::string> feed(std::string_view line);
  // The current phase with its counts, e.g. "downloading packages (57 fetched)".
  std::string status() const;

 private:
  std::string phase_;
  int fetched_ = 0, unpacked_ = 0, set_up_ = 0;
};

// What went wrong, from mmdebstrap's output (its whole log or a tail of it).
struct Failure {
  std::string what;
  std::string hint;
};
Failure explain_failure(std::string_view log, const std::string& suite, const Sources& sources);
// The last `n` non-empty lines of `log`, each indented by two spaces, newline-separated.
std::string tail(std::string_view log, size_t n);

}  // namespace space::image::debian

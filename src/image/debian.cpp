// The pure parts of a Debian image build; see debian.h. mmdebstrap's messages are apt's and
// dpkg's, read in the C locale (the build sets LC_ALL).
#include "image/debian.h"

#include <algorithm>
#include <cctype>

#include "util/error.h"
#include "util/fs.h"

namespace space::image::debian {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

bool all_of(std::string_view s, std::string_view allowed_punct) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) ||
           allowed_punct.find(c) != std::string_view::npos;
  });
}

std::string trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(a, b - a + 1));
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

// True if the source file at `path` has an entry: a line that is neither blank nor a comment.
bool has_entry(const std::string& path) {
  try {
    const std::string text = fs::read_file(path, 1 << 20);  // outlives the views into it
    for (auto l : lines_of(text)) {
      std::string t = trim(l);
      if (!t.empty() && t[0] != '#') return true;
    }
  } catch (const Error&) {
  }
  return false;
}

// The text after `prefix` in `line` up to the end or the first of `stops`.
std::string after(std::string_view line, std::string_view prefix, std::string_view stops = "") {
  size_t at = line.find(prefix);
  if (at == std::string_view::npos) return "";
  std::string_view rest = line.substr(at + prefix.size());
  size_t end = stops.empty() ? std::string_view::npos : rest.find_first_of(stops);
  return trim(rest.substr(0, end));
}

}  // namespace

void check_suite(const std::string& suite) {
  if (suite.empty() || suite.size() > 64 || !std::isalnum(static_cast<unsigned char>(suite[0])) ||
      !all_of(suite, "-."))
    fail("invalid suite '" + suite + "'",
         "name a Debian release: bookworm, trixie, sid, or stable, testing, unstable");
}

void check_package(const std::string& p) {
  size_t cut = p.find_first_of("=/");
  std::string name = p.substr(0, cut);
  bool ok = name.size() >= 2 && name.size() <= 128 &&
            std::isalnum(static_cast<unsigned char>(name[0])) && all_of(name, "+-.") &&
            name.back() != '-';  // apt reads a trailing '-' as "remove"
  if (ok && cut != std::string::npos) {
    std::string rest = p.substr(cut + 1);
    ok = !rest.empty() && rest.size() <= 128 && std::all_of(rest.begin(), rest.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("+-.~:").find(c) != std::string_view::npos;
    });
  }
  if (!ok)
    fail("invalid package '" + p + "'",
         "give Debian package names separated by commas (NAME, NAME=VERSION or NAME/RELEASE)");
}

void check_mirror(const std::string& url) {
  bool scheme =
      starts_with(url, "http://") || starts_with(url, "https://") || starts_with(url, "file:///");
  bool clean = std::none_of(url.begin(), url.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) ||
           std::iscntrl(static_cast<unsigned char>(c));
  });
  if (!scheme || !clean || url.size() > 1024 || url.find("://", 0) + 3 >= url.size())
    fail("invalid mirror '" + url + "'",
         "give the URL of a Debian archive, for example " + std::string(kDefaultMirror));
}

std::vector<std::string> split_packages(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string p = trim(std::string_view(list).substr(pos, comma - pos));
    if (!p.empty()) {
      check_package(p);
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
    pos = comma + 1;
  }
  return out;
}

std::string os_codename(std::string_view os_release) {
  for (auto l : lines_of(os_release)) {
    if (!starts_with(l, "VERSION_CODENAME=")) continue;
    std::string v = trim(l.substr(17));
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
      v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

std::vector<std::string> host_apt_sources(const std::string& etc_apt) {
  std::vector<std::string> out;
  if (has_entry(etc_apt + "/sources.list")) out.push_back(etc_apt + "/sources.list");
  std::vector<std::string> more;
  const std::string dir = etc_apt + "/sources.list.d";
  for (const auto& name : fs::list_dir(dir)) {
    bool list = name.size() > 5 && name.compare(name.size() - 5, 5, ".list") == 0;
    bool deb822 = name.size() > 8 && name.compare(name.size() - 8, 8, ".sources") == 0;
    std::string path = dir + "/" + name;
    if ((list || deb822) && has_entry(path)) more.push_back(std::move(path));
  }
  std::sort(more.begin(), more.end());
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

Sources choose_sources(const std::string& suite, const std::string& mirror,
                       const std::string& host_codename,
                       const std::vector<std::string>& host_sources) {
  if (!mirror.empty()) return {{mirror}, mirror};
  if (!host_codename.empty() && suite == host_codename && !host_sources.empty()) {
    std::string d = "the host's apt sources (";
    for (size_t i = 0; i < host_sources.size(); i++) d += (i ? ", " : "") + host_sources[i];
    return {host_sources, d + ")"};
  }
  return {{}, std::string(kDefaultMirror)};
}

std::vector<std::string> mmdebstrap_argv(const std::string& program, const std::string& suite,
                                         const std::vector<std::string>& packages,
                                         const Sources& sources, const std::string& target) {
  std::vector<std::string> pkgs = packages;
  bool https = std::any_of(sources.mirrors.begin(), sources.mirrors.end(),
                           [](const std::string& m) { return starts_with(m, "https://"); });
  if (https && std::find(pkgs.begin(), pkgs.end(), "ca-certificates") == pkgs.end())
    pkgs.push_back("ca-certificates");
  std::vector<std::string> argv = {program, "--mode=root", "--variant=apt", "--format=directory",
                                   "--verbose"};
  if (!pkgs.empty()) {
    std::string inc = "--include=";
    for (size_t i = 0; i < pkgs.size(); i++) inc += (i ? "," : "") + pkgs[i];
    argv.push_back(inc);
  }
  argv.push_back("--");
  argv.push_back(suite);
  argv.push_back(target);
  argv.insert(argv.end(), sources.mirrors.begin(), sources.mirrors.end());
  return argv;
}

std::vector<std::string> mmdebstrap_env(const std::vector<std::string>& host_env) {
  std::vector<std::string> out;
  for (const auto& kv : host_env) {
    std::string_view k = std::string_view(kv).substr(0, kv.find('='));
    if (k == "LANG" || k == "LANGUAGE" || starts_with(k, "LC_") || k == "PATH" ||
        k == "DEBIAN_FRONTEND")
      continue;
    out.push_back(kv);
  }
  out.push_back(std::string(kPath));
  out.push_back("LC_ALL=C.UTF-8");
  out.push_back("DEBIAN_FRONTEND=noninteractive");
  return out;
}

std::optional<std::string> Progress::feed(std::string_view line) {
  static const std::pair<std::string_view, std::string_view> kPhases[] = {
      {"I: running apt-get update", "resolving packages (apt-get update)"},
      {"I: downloading packages", "downloading packages"},
      {"I: extracting archives", "unpacking packages"},
      {"I: installing essential packages", "installing the essential packages"},
      {"I: installing remaining packages", "downloading and installing the requested packages"},
      {"I: cleaning package lists", "cleaning up"},
  };
  if (starts_with(line, "Get:"))
    fetched_++;
  else if (starts_with(line, "Unpacking "))
    unpacked_++;
  else if (starts_with(line, "Setting up "))
    set_up_++;
  for (const auto& [prefix, phase] : kPhases) {
    if (!starts_with(line, prefix)) continue;
    phase_ = phase;
    return phase_;
  }
  return std::nullopt;
}

std::string Progress::status() const {
  std::string counts;
  auto add = [&](int n, const char* what) {
    if (n > 0) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(fetched_, "fetched");
  add(unpacked_, "unpacked");
  add(set_up_, "set up");
  if (phase_.empty()) return counts.empty() ? "starting mmdebstrap" : counts;
  return counts.empty() ? phase_ : phase_ + " (" + counts + ")";
}

std::string tail(std::string_view log, size_t n) {
  std::vector<std::string_view> keep;
  for (auto l : lines_of(log))
    if (!trim(l).empty()) keep.push_back(l);
  size_t from = keep.size() > n ? keep.size() - n : 0;
  std::string out;
  for (size_t i = from; i < keep.size(); i++) {
    if (!out.empty()) out += "\n";
    out += "  " + std::string(keep[i]);
  }
  return out;
}

Failure explain_failure(std::string_view log, const std::string& suite, const Sources& sources) {
  std::vector<std::string> missing;
  bool no_release = false, unreachable = false, no_keyring = false;
  for (auto l : lines_of(log)) {
    std::string p = after(l, "E: Unable to locate package ");
    if (p.empty()) p = after(l, "E: Package '", "'");
    if (p.empty()) p = after(l, "E: Couldn't find any package by glob '", "'");
    if (!p.empty() && std::find(missing.begin(), missing.end(), p) == missing.end())
      missing.push_back(p);
    if (l.find("does not have a Release file") != std::string_view::npos) no_release = true;
    if (l.find("Could not resolve") != std::string_view::npos ||
        l.find("Could not connect") != std::string_view::npos ||
        l.find("Temporary failure resolving") != std::string_view::npos ||
        l.find("Connection failed") != std::string_view::npos ||
        l.find("Connection timed out") != std::string_view::npos ||
        l.find("Unable to connect") != std::string_view::npos)
      unreachable = true;
    if (l.find("NO_PUBKEY") != std::string_view::npos ||
        l.find("is not signed") != std::string_view::npos ||
        l.find("cannot find a keyring") != std::string_view::npos)
      no_keyring = true;
  }
  if (unreachable)
    return {"the mirror cannot be reached (" + sources.described + ")",
            "check the network, or give a mirror this host reaches with --mirror URL"};
  if (no_release)
    return {"suite '" + suite + "' is not on " + sources.described,
            "name a suite the mirror has (bookworm, trixie, sid, stable, testing, unstable), or "
            "check the --mirror URL"};
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    return {std::string(missing.size() > 1 ? "packages " : "package ") + names + " not found in " +
                suite,
            "check the names (apt-cache search WORD, or packages.debian.org) and the suite; "
            "--packages takes Debian package names"};
  }
  if (no_keyring)
    return {"the archive's signature cannot be checked (" + sources.described + ")",
            "apt-get install debian-archive-keyring, or use a mirror of Debian's archive"};
  return {"mmdebstrap failed",
          "the lines above are the end of its output: fix what they name and build again"};
}

}  // namespace space::image::debian

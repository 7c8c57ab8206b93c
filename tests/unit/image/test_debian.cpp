// Unit tests for image/debian: what `image build --debian` accepts, the apt sources it picks, the
// mmdebstrap command line and environment, progress from mmdebstrap's output, and the errors
// made of its failures (their texts are mmdebstrap 1.3's and apt 2.6's).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "image/debian.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

using namespace space;
namespace deb = space::image::debian;

namespace {
bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST_CASE("suites, packages and mirrors are checked") {
  for (const char* s : {"bookworm", "stable", "sid", "trixie", "bookworm-backports", "12"})
    CHECK_NOTHROW(deb::check_suite(s));
  for (const char* s : {"", "-x", "--include=evil", "Bookworm", "a b", "../x", "x/y"})
    CHECK_THROWS_AS(deb::check_suite(s), Error);
  for (const char* p : {"python3", "g++", "libc6-dev", "python3.11", "git=1:2.39.5-0+deb12u2",
                        "gcc/bookworm-backports"})
    CHECK_NOTHROW(deb::check_package(p));
  for (const char* p : {"", "a", "-f", "--allow-unauthenticated", "Python3", "py*", "?essential",
                        "pkg-", "x=", "x/", "a b", "x=1 2", "~nfoo"})
    CHECK_THROWS_AS(deb::check_package(p), Error);
  for (const char* m :
       {"http://deb.debian.org/debian", "https://mirror.example/debian/", "file:///srv/mirror"})
    CHECK_NOTHROW(deb::check_mirror(m));
  for (const char* m : {"", "deb.debian.org", "ftp://x/debian", "http://", "http://a b",
                        "deb http://x bookworm main", "file://relative", "http://x\n"})
    CHECK_THROWS_AS(deb::check_mirror(m), Error);
}

TEST_CASE("the package list is split on commas, trimmed, deduplicated and checked") {
  CHECK(deb::split_packages("") == std::vector<std::string>{});
  CHECK(deb::split_packages("python3, git,,gcc ,git") ==
        std::vector<std::string>{"python3", "git", "gcc"});
  try {
    deb::split_packages("git,--yes");
    FAIL("accepted an option as a package");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("'--yes'") != std::string::npos);
    CHECK(!e.hint().empty());
  }
}

TEST_CASE("os-release codename") {
  CHECK(deb::os_codename("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nVERSION_CODENAME="
                         "bookworm\nID=debian\n") == "bookworm");
  CHECK(deb::os_codename("VERSION_CODENAME=\"trixie\"\n") == "trixie");
  CHECK(deb::os_codename("ID=alpine\n") == "");
}

TEST_CASE("host apt sources: files with an entry, sources.list first, then sorted") {
  test::TempDir d("debian");
  fs::mkdir_p(d.path + "/sources.list.d");
  fs::write_file_atomic(d.path + "/sources.list", "# nothing here\n\n");
  fs::write_file_atomic(d.path + "/sources.list.d/z.sources", "Types: deb\nURIs: http://x\n");
  fs::write_file_atomic(d.path + "/sources.list.d/a.list", "deb http://x bookworm main\n");
  fs::write_file_atomic(d.path + "/sources.list.d/empty.list", "  \n# off\n");
  fs::write_file_atomic(d.path + "/sources.list.d/old.list.save", "deb http://x y z\n");
  auto got = deb::host_apt_sources(d.path);
  CHECK(got == std::vector<std::string>{d.path + "/sources.list.d/a.list",
                                        d.path + "/sources.list.d/z.sources"});
  fs::write_file_atomic(d.path + "/sources.list", "deb http://y bookworm main\n");
  CHECK(deb::host_apt_sources(d.path).front() == d.path + "/sources.list");
  CHECK(deb::host_apt_sources(d.path + "/missing").empty());
}

TEST_CASE("sources: --mirror, else the host's for its own suite, else the default") {
  std::vector<std::string> host = {"/etc/apt/sources.list.d/debian.sources"};
  auto m = deb::choose_sources("bookworm", "http://m/debian", "bookworm", host);
  CHECK(m.mirrors == std::vector<std::string>{"http://m/debian"});
  auto h = deb::choose_sources("bookworm", "", "bookworm", host);
  CHECK(h.mirrors == host);
  CHECK(h.described.find("host's apt sources") != std::string::npos);
  auto other = deb::choose_sources("trixie", "", "bookworm", host);
  CHECK(other.mirrors.empty());
  CHECK(other.described == deb::kDefaultMirror);
  CHECK(deb::choose_sources("bookworm", "", "bookworm", {}).mirrors.empty());
  CHECK(deb::choose_sources("bookworm", "", "", host).mirrors.empty());
}

TEST_CASE("mmdebstrap command line") {
  deb::Sources s{{"/etc/apt/sources.list.d/debian.sources"}, "host"};
  auto argv = deb::mmdebstrap_argv("/usr/bin/mmdebstrap", "bookworm", {"python3", "git"}, s,
                                   "/store/images/.x.tmp-1/rootfs");
  CHECK(argv == std::vector<std::string>{"/usr/bin/mmdebstrap", "--mode=root", "--variant=apt",
                                         "--format=directory", "--verbose", "--include=python3,git",
                                         "--", "bookworm", "/store/images/.x.tmp-1/rootfs",
                                         "/etc/apt/sources.list.d/debian.sources"});
  auto bare = deb::mmdebstrap_argv("/m", "sid", {}, {{}, "default"}, "/t");
  CHECK(bare == std::vector<std::string>{"/m", "--mode=root", "--variant=apt", "--format=directory",
                                         "--verbose", "--", "sid", "/t"});
  auto tls = deb::mmdebstrap_argv("/m", "sid", {"git"}, {{"https://m/debian"}, "m"}, "/t");
  CHECK(has(tls, "--include=git,ca-certificates"));
}

TEST_CASE("mmdebstrap's environment: English messages, a full PATH, no questions") {
  auto env = deb::mmdebstrap_env(
      {"HOME=/root", "LANG=de_DE.UTF-8", "LC_MESSAGES=fr_FR", "LANGUAGE=de", "PATH=/usr/bin"});
  CHECK(has(env, "HOME=/root"));
  CHECK(has(env, "LC_ALL=C.UTF-8"));
  CHECK(has(env, "DEBIAN_FRONTEND=noninteractive"));
  CHECK(has(env, std::string(deb::kPath)));
  CHECK(!has(env, "LANG=de_DE.UTF-8"));
  CHECK(!has(env, "LC_MESSAGES=fr_FR"));
  CHECK(!has(env, "LANGUAGE=de"));
  CHECK(!has(env, "PATH=/usr/bin"));
}

TEST_CASE("progress: phases from mmdebstrap's info lines, counts from apt and dpkg") {
  deb::Progress p;
  CHECK(p.status() == "starting mmdebstrap");
  CHECK(!p.feed("I: chroot architecture amd64 is equal to the host's architecture"));
  CHECK(p.feed("I: running apt-get update...") == "resolving packages (apt-get update)");
  CHECK(p.feed("I: downloading packages with apt...") == "downloading packages");
  CHECK(!p.feed("Get:1 http://deb.debian.org/debian bookworm/main amd64 bash amd64 5.2.15-2+b7"));
  CHECK(!p.feed("Get:2 http://deb.debian.org/debian bookworm/main amd64 dash amd64 0.5.12-2"));
  CHECK(p.status() == "downloading packages (2 fetched)");
  CHECK(p.feed("I: extracting archives...") == "unpacking packages");
  CHECK(p.feed("I: installing essential packages...") == "installing the essential packages");
  p.feed("Unpacking bash (5.2.15-2+b7) ...");
  p.feed("Setting up bash (5.2.15-2+b7) ...");
  CHECK(p.status() == "installing the essential packages (2 fetched, 1 unpacked, 1 set up)");
  CHECK(p.feed("I: installing remaining packages inside the chroot...").has_value());
  CHECK(p.feed("I: cleaning package lists and apt cache...") == "cleaning up");
}

TEST_CASE("failures name the cause and the fix") {
  deb::Sources host{{"/etc/apt/sources.list.d/debian.sources"}, "the host's apt sources"};
  auto pkg = deb::explain_failure(
      "Building dependency tree...\nE: Unable to locate package no-such-pkg\n"
      "E: Unable to locate package other-pkg\nE: setup failed: E: apt-get --yes install failed\n"
      "E: mmdebstrap failed to run\n",
      "bookworm", host);
  CHECK(pkg.what == "packages no-such-pkg, other-pkg not found in bookworm");
  CHECK(pkg.hint.find("apt-cache search") != std::string::npos);
  auto one =
      deb::explain_failure("E: Package 'gcc-99' has no installation candidate\n", "sid", host);
  CHECK(one.what == "package gcc-99 not found in sid");

  deb::Sources def{{}, "http://deb.debian.org/debian"};
  auto suite = deb::explain_failure(
      "Err:2 http://deb.debian.org/debian nosuchsuite Release\n  404  Not Found [IP: 1.2.3.4 80]\n"
      "E: The repository 'http://deb.debian.org/debian nosuchsuite Release' does not have a "
      "Release file.\n",
      "nosuchsuite", def);
  CHECK(suite.what == "suite 'nosuchsuite' is not on http://deb.debian.org/debian");
  CHECK(suite.hint.find("bookworm") != std::string::npos);

  for (const char* why : {"Could not resolve 'no-such-host.invalid'",
                          "Could not connect to 127.0.0.1:9 (127.0.0.1). - connect (111: "
                          "Connection refused)",
                          "Temporary failure resolving 'deb.debian.org'"}) {
    auto net = deb::explain_failure(std::string("E: Failed to fetch http://x/InRelease  ") + why +
                                        "\nE: Some index files failed to download.\n",
                                    "bookworm", {{"http://x"}, "http://x"});
    CHECK(net.what == "the mirror cannot be reached (http://x)");
    CHECK(net.hint.find("--mirror") != std::string::npos);
  }
  auto other = deb::explain_failure("E: something else\n", "bookworm", def);
  CHECK(other.what == "mmdebstrap failed");
}

TEST_CASE("the tail of a log: its last non-empty lines, indented") {
  CHECK(deb::tail("a\n\nb\nc\n\n", 2) == "  b\n  c");
  CHECK(deb::tail("only", 5) == "  only");
  CHECK(deb::tail("", 3) == "");
}

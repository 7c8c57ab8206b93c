// Unit tests for cli/completion.h: the bash script generated from the real command tree offers
// every visible command and flag, global flags after a command, sandbox ids where a command takes
// them, and nothing hidden; bash itself then completes with it.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "cli/app.h"
#include "cli/completion.h"
#include "support/temp_dir.h"
#include "util/fs.h"

using namespace space;

namespace {
std::string script() {
  CLI::App app{"space"};
  cli::GlobalOptions g;
  cli::build_app(app, g);
  return cli::bash_completion(app, "space");
}

// What bash completes for the words of `line` (the last one being completed).
std::string complete(const std::string& path, const std::string& line) {
  std::string cmd = "source '" + path + "'; COMP_WORDS=(" + line +
                    "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _space; echo \"${COMPREPLY[*]}\"";
  std::string quoted;
  for (char c : cmd) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  FILE* p = ::popen(("bash -c '" + quoted + "'").c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
}  // namespace

TEST_CASE("bash completion lists every visible command and flag, and nothing hidden") {
  std::string s = script();
  CHECK(s.find("\"\") echo \"create destroy list state") != std::string::npos);
  CHECK(s.find("\"image build\") echo \"--help -h --debian --packages --mirror") !=
        std::string::npos);
  CHECK(s.find("--disk-size") != std::string::npos);
  CHECK(s.find("--keep-privileges") != std::string::npos);
  CHECK(s.find("__vmm") == std::string::npos);
  CHECK(s.find("__credd") == std::string::npos);
  CHECK(s.find("complete -o default -F _space space") != std::string::npos);
}

TEST_CASE("bash completes subcommands, flags (with the global ones) and sandbox ids") {
  test::TempDir d("completion");
  std::string path = d.path + "/space.bash";
  fs::write_file_atomic(path, script(), 0644);
  CHECK(complete(path, "space templ") == "template");
  CHECK(complete(path, "space template bu") == "build");
  CHECK(complete(path, "space --root /x image build --deb") == "--debian");
  CHECK(complete(path, "space create --ima") == "--image");
  CHECK(complete(path, "space exec --roo") == "--root");  // global flags follow commands
  // Sandbox ids come from `space list`; a stub on PATH stands in for it.
  fs::write_file_atomic(d.path + "/space",
                        "#!/bin/sh\nprintf 'ID STATUS\\nbox-1 running\\nbox-2 paused\\n'\n", 0755);
  std::string cmd = "PATH=" + d.path + ":$PATH; source " + path +
                    "; COMP_WORDS=(space exec box); COMP_CWORD=2; _space; echo \"${COMPREPLY[*]}\"";
  FILE* p = ::popen(("bash -c '" + cmd + "'").c_str(), "r");
  REQUIRE(p);
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  ::pclose(p);
  CHECK(std::string(buf, n) == "box-1 box-2\n");
}

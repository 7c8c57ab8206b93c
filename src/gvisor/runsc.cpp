// Runsc: building and running runsc command lines; see runsc.h.
#include "gvisor/runsc.h"

#include <cctype>

#include "util/error.h"
#include "util/process.h"

namespace space::gvisor {

std::vector<std::string> runsc_argv(const RunscConfig& c, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {
      c.binary,         "--root=" + c.root,        "--platform=" + c.platform,
      "--network=none", "--overlay2=" + c.overlay, "--host-uds=open"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

void run_runsc(const RunscConfig& c, const std::vector<std::string>& command, int output_fd) {
  // runsc's command dies with us; the sandbox and gofer it starts are in the sandbox's cgroup
  // from birth (runsc joins it before it starts them), where destroy finds them.
  proc::RunResult r = proc::run(runsc_argv(c, command), output_fd, /*dies_with_caller=*/true);
  if (r.ok()) return;
  std::string what = "runsc " + (command.empty() ? std::string() : command.front());
  std::string out = r.output;
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  if (out.size() > 800) out = "..." + out.substr(out.size() - 800);
  if (output_fd >= 0) out = "its output is in the sandbox's console.log";
  throw Error(what + " " + proc::describe_status(r.status) + (out.empty() ? "" : ": " + out), 0,
              r.status == 127 << 8
                  ? "is runsc installed? apt-get install -t bookworm-backports runsc"
                  : "");
}

std::string runsc_version(const std::string& binary) {
  if (binary.empty()) return "";
  proc::RunResult r;
  try {
    r = proc::run({binary, "--version"});
  } catch (const Error&) {
    return "";
  }
  if (!r.ok()) return "";
  std::string line = r.output.substr(0, r.output.find('\n'));
  return line.rfind("runsc version", 0) == 0 ? line : "";
}

int runsc_release(const std::string& version_line) {
  // "runsc version 0.0~20240729.0" (Debian) or "runsc version release-20240729.0" (upstream).
  for (size_t i = 0; i + 8 <= version_line.size(); i++) {
    bool digits = true;
    for (size_t k = 0; k < 8 && digits; k++)
      digits = std::isdigit(static_cast<unsigned char>(version_line[i + k]));
    if (!digits) continue;
    if (i > 0 && std::isdigit(static_cast<unsigned char>(version_line[i - 1]))) continue;
    int v = std::stoi(version_line.substr(i, 8));
    if (v >= 20100101 && v <= 21000101) return v;
  }
  return 0;
}

}  // namespace space::gvisor

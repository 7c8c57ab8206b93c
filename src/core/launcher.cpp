// VMM start-up and readiness; see launcher.h.
#include "core/launcher.h"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>

#include "core/agent_client.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::core {

VmmLaunch spawn_vmm(const Context& ctx, const SandboxPaths& p, const std::string& id) {
  Pipe pipe = Pipe::make();
  std::vector<std::string> argv = {"/proc/self/exe", "--root",       fs::absolute(ctx.root),
                                   "--log-level",    ctx.log_level,  "--log-format",
                                   ctx.log_format,   "__vmm",        id,
                                   "--ready-fd",     "3"};
  proc::Child child = proc::spawn_detached(argv, p.vmm_log, pipe.write.get());
  pipe.write.reset();  // now only the VMM holds it: EOF means the VMM is gone
  set_nonblocking(pipe.read.get());
  return VmmLaunch{std::move(child), std::move(pipe.read)};
}

void wait_vmm_ready(const Fd& ready, const net::Deadline& dl) {
  std::optional<std::string> line;
  try {
    line = net::read_line(ready.get(), dl, 4096);
  } catch (const net::Cancelled&) {
    throw;
  } catch (Error& e) {
    if (e.err() == ETIMEDOUT) fail("the VMM did not report ready in time");
    throw;
  }
  if (!line) fail("the VMM exited before the VM started");
  if (*line == "ok") return;
  if (line->rfind("error: ", 0) == 0) fail("the VMM failed: " + line->substr(7));
  fail("the VMM sent an unexpected ready line: \"" + *line + "\"");
}

proto::HelloReply wait_guest_ready(const SandboxPaths& p, const net::Deadline& dl) {
  std::string last = "no attempt made";
  for (int attempt = 1;; attempt++) {
    try {
      Fd fd = vsock_dial(p.vsock_sock, proto::kAgentPort, dl);
      auto reply = agent_hello(fd.get(), dl);
      log::debug("guest-init answered after " + std::to_string(attempt) + " attempts: " +
                 reply.agent);
      return reply;
    } catch (const net::Cancelled&) {
      throw;
    } catch (const Error& e) {
      // Errors with an errno are transport-level (nobody listening yet, socket not created yet,
      // timeout); errors without one are protocol failures that retrying cannot fix.
      if (e.err() == 0) throw;
      if (e.err() != ETIMEDOUT) last = e.what();
    }
    if (dl.expired())
      fail("guest-init did not answer before the deadline (last attempt: " + last + ")",
           "raise SPACE_BOOT_TIMEOUT, or see the console log above for where the boot stopped");
    net::sleep_ms(100, dl);
  }
}

int boot_timeout_seconds() {
  const char* env = std::getenv("SPACE_BOOT_TIMEOUT");
  if (!env || !*env) return 120;
  char* end = nullptr;
  long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v <= 0 || v > 86400)
    fail(std::string("SPACE_BOOT_TIMEOUT=") + env + ": not a number of seconds in 1..86400",
         "set SPACE_BOOT_TIMEOUT to a whole number of seconds, e.g. 120");
  return static_cast<int>(v);
}

}  // namespace space::core

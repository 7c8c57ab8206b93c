// Running a long helper program (mmdebstrap) so that nothing it starts can outlive it or leak
// into the host: it runs in new mount and pid namespaces of its own, under a small init (pid 1
// there) that ends with it. Its mounts are private to its namespace and go with it; when the init
// dies, the kernel kills every process left in the namespace, and the init dies with us
// (PR_SET_PDEATHSIG) or when we kill it on a signal. It has its own session, so a terminal's
// Ctrl-C reaches only us. Needs CAP_SYS_ADMIN.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/process.h"

namespace space::image {

// Runs `argv` (argv[0] an absolute path) with environment `env` ("KEY=value") and stdin from
// /dev/null, contained as above. Everything it writes to stdout and stderr is appended to
// `log_fd` and handed to `on_line` a line at a time (without the newline). Returns its exit code,
// or 128+N when signal N killed it. On a signal routed to `sig` it kills the namespace, waits
// until every process in it is gone, and throws Error("interrupted by SIGxxx").
int run_contained(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  int log_fd, proc::SignalGuard& sig,
                  const std::function<void(std::string_view)>& on_line);

}  // namespace space::image

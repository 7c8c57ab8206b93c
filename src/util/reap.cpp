// The PID 1 reap loop; see reap.h.
#include "util/reap.h"

#include <sys/wait.h>

#include <cerrno>

namespace space::proc {

Reaped reap_ended(const std::function<void(pid_t pid, int status)>& on_exit) {
  Reaped r;
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0) break;
    if (pid < 0) {
      if (errno == EINTR) continue;
      r.no_children = errno == ECHILD;
      break;
    }
    r.count++;
    on_exit(pid, status);
  }
  return r;
}

int wait_reaping_others(pid_t pid) {
  for (;;) {
    int status = 0;
    pid_t got = ::waitpid(-1, &status, 0);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return -1;
  }
}

}  // namespace space::proc

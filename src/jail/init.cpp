// The jail's init loop; see init.h. It makes only the calls its seccomp role allows.
#include "jail/init.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>

namespace space::jail {

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

void serve_as_init(pid_t vmm) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  int code = 1;
  bool vmm_alive = true;
  for (;;) {
    // Reap whatever has ended; stop once nothing is left.
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid == 0) break;
      if (pid < 0) {
        if (errno == EINTR) continue;
        ::_exit(code);  // ECHILD: the jail is empty
      }
      if (pid == vmm) {
        code = exit_code_of(status);
        vmm_alive = false;
      }
    }
    timespec tick{1, 0};  // and look again now and then, in case a SIGCHLD was merged
    siginfo_t si;
    int sig = ::sigtimedwait(&set, &si, &tick);
    if (sig > 0 && sig != SIGCHLD && vmm_alive) ::kill(vmm, sig);
  }
}

}  // namespace space::jail

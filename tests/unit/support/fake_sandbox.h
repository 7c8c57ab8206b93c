// FakeSandbox: a sandbox under a temporary root whose recorded VMM is a stand-in process (a
// sleep child of the test), for the lifecycle read/remove paths (list, state, destroy) without
// KVM. Sets SPACE_RUN_DIR to <root>/run while it lives.
#pragma once
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "store/context.h"
#include "store/paths.h"
#include "store/state.h"
#include "support/temp_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::test {

struct FakeSandbox {
  TempDir root{"state"};
  store::Context ctx;
  proc::Child vmm;
  store::SandboxPaths p;
  explicit FakeSandbox(const std::string& id, store::Status status = store::Status::Running) {
    ::setenv("SPACE_RUN_DIR", (root.path + "/run").c_str(), 1);
    ctx.root = root.path;
    p = store::sandbox_paths(ctx.root, id);
    fs::mkdir_p(p.dir);
    fs::mkdir_p(p.run_dir);
    { store::SandboxLock made(p.lock); }  // as create makes it
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::execl("/bin/sleep", "sleep", "60", nullptr);
      ::_exit(127);
    }
    vmm = proc::Child(pid);
    store::SandboxState st;
    st.id = id;
    st.status = status;
    st.pid = pid;
    st.pid_start_time = proc::start_time(pid).value();
    st.created = store::rfc3339_now();
    store::write_state(p.state, st);
  }
  ~FakeSandbox() { ::unsetenv("SPACE_RUN_DIR"); }
};

}  // namespace space::test

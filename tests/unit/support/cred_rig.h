// CredRig: a credential helper's service without sockets, over a temporary root whose sandboxes'
// recorded VMM is this test process (so the peer checks pass), with its credential directory and
// a clock the test moves (`now`).
#pragma once
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <initializer_list>
#include <memory>
#include <string>

#include "cred/paths.h"
#include "cred/service.h"
#include "store/paths.h"
#include "store/state.h"
#include "support/temp_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/procfs.h"

namespace space::test {

// A sandbox directory under `root` with a state.json whose VMM is this test process.
inline void self_sandbox(const std::string& root, const std::string& id) {
  auto p = store::sandbox_paths(root, id);
  fs::mkdir_p(p.dir);
  store::SandboxState st;
  st.id = id;
  st.status = store::Status::Running;
  st.pid = ::getpid();
  st.pid_start_time = *proc::start_time(::getpid());
  st.created = store::rfc3339_now();
  store::write_state(p.state, st);
}

struct CredRig {
  TempDir d{"cred"};
  std::string root = d.path + "/root";
  cred::CredPaths p;
  uint64_t now = 1'700'000'000'000;
  std::unique_ptr<cred::CredService> svc;
  explicit CredRig(std::initializer_list<const char*> ids = {"a", "b", "c"}) {
    ::unsetenv("SPACE_CRED_DIR");
    for (const char* id : ids) self_sandbox(root, id);
    p = cred::cred_paths(root);
    cred::make_cred_dir(p);
    svc = std::make_unique<cred::CredService>(root, p, [this] { return now; });
  }
};

}  // namespace space::test

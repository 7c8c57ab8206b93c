// `space __credd`: the credential helper, one per credential directory (flock on credd.lock), a
// daemon started on demand (cred/client.h) by any command that needs it and by a VMM whose guest
// asks for a secret while it is not running. It serves:
//   credd.sock   the operator's requests (proto/credd.h, CredService::handle_line), from uid 0
//                or our uid only (SO_PEERCRED);
//   s/<id>.sock  one listening socket per sandbox that has (or had) grants. A connection accepted
//                there speaks the credential frames of proto/cred.h, and every request on it is
//                answered for sandbox <id> and no other: the sandbox comes from the socket, never
//                from the request. The peer must be <id>'s VMM, by SO_PEERCRED pid and the start
//                time recorded in its state.json; anyone else is denied (and audited).
// One thread, one epoll loop, non-blocking sockets, bounded buffers. It exits after `idle_s`
// seconds with no connection ($SPACE_CREDD_IDLE_SECONDS, default 60), or on SIGTERM/SIGINT,
// removing its sockets; the next client starts it again. Startup: keep the process's memory to
// itself (util/secret_memory.h: not dumpable, no core file; every value it holds is in secret
// memory, as are the replies waiting for a slow reader), lock, reload grants, drop the grants of
// sandboxes that are gone, open the sockets, then "ok" on the ready fd.
#pragma once
#include <string>

#include "cred/paths.h"

namespace space::cred {

struct HelperOptions {
  std::string root;      // the run directory (sandbox state is read from it)
  std::string cred_dir;  // "" = cred_dir_for_root(root)
  int ready_fd = -1;     // "ok\n" or "error: ...\n" goes here once serving
  // protect_process_memory() first. Off only where the helper runs in a thread of a process
  // that is not its own (the unit tests), since it changes the whole process.
  bool protect_memory = true;
};

// Runs the helper until idle; returns the process exit code.
int credd_main(const HelperOptions& opts);
// True while a helper serves `p` (it holds credd.lock exclusively). The probe takes a shared lock
// for an instant; a helper starting meanwhile retries its lock.
bool helper_running(const CredPaths& p);
// Seconds of idleness before exit: $SPACE_CREDD_IDLE_SECONDS (1..86400), default 60.
int idle_seconds();

}  // namespace space::cred

// What an exec is asked (ExecOptions: the command, its environment, user, stdio mode, timeout,
// secrets) and what it returns (ExecResult), apart from the functions that run one
// (ops/exec.h): the stdio bridge and image use take these types without the exec module.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/exec.h"

namespace space::agent {

struct ExecOptions {
  std::string sandbox;   // the sandbox's id, sent in Hello (the guest's hostname)
  std::string hostname;  // sent in Hello instead of the id when set (an OCI hostname)
  // Signals forwarded to the process besides SIGINT, SIGTERM and SIGHUP (an OCI runtime's
  // `kill` delivers any of them to the container process through its shim).
  std::vector<int> forward_signals;
  std::vector<std::string> argv;  // the command; argv[0] is looked up in the guest's PATH
  std::vector<std::string> env;   // "K=V" entries over the guest's defaults
  std::string cwd;                // "" = /
  std::optional<uint32_t> uid, gid;
  std::string user;           // "USER[:GROUP]" by name or number, resolved in the guest; "" = none
  bool image = false;         // the sandbox has an image: Hello asks guest-init to mount it
  uint32_t hello_flags = 0;   // more proto::Hello flags (kNetwork: the sandbox has a network)
  bool no_proxy_env = false;  // --no-proxy-env: no HTTP_PROXY and friends for this exec
  bool interactive = false;   // -i: forward stdin; otherwise the process's stdin is at EOF
  bool tty = false;           // -t: a pty in the guest
  uint32_t timeout_ms = 0;    // 0 = none
  std::vector<std::string> secret_env;  // "VAR=NAME": guest-init fetches secret NAME into VAR
  // An OCI process's rest (proto::ExecRequest kLimits): supplementary groups, umask, rlimits.
  std::vector<uint32_t> groups;
  std::optional<uint32_t> umask;
  std::vector<proto::ExecRequest::Rlimit> rlimits;
  // After forwarding a signal, stop waiting for the process after this long (0 = wait for it).
  // `run` sets it, so that a sandbox whose command ignores SIGINT is still destroyed.
  int give_up_after_signal_ms = 0;
};

// The caller's side of the stdio bridge.
struct StdioFds {
  int in = 0, out = 1, err = 2;
};

// Where the time of one exec went, in microseconds.
struct ExecStats {
  int64_t connect_us = 0;  // dial vsock.sock and CONNECT to the guest's agent port
  int64_t hello_us = 0;    // Hello + Exec sent, HelloReply received
  int64_t total_us = 0;    // from the start of exec_in_sandbox to the Exit frame
  uint64_t guest_us = 0;   // guest-reported: Exec frame taken to process exit
};

struct ExecResult {
  proto::ExitStatus status;
  int exit_code = 0;  // what `space exec` returns
  ExecStats stats;
};

}  // namespace space::agent

// One exec, served on its connection's thread once the Exec frame has arrived: spawn the
// process, then one poll() loop over the connection, the process's stdin, stdout and stderr (or
// its pty master) and its pidfd, until it has exited and its output is sent.
//  - Output: each readable pipe is read straight into a frame (FrameQueue) and sent with
//    sendmsg; a pipe that fills a 64 KiB read is grown to 1 MiB, so bulk output costs few
//    syscalls. While more than kOutLimit bytes wait for the host, the pipes are not read, so a
//    slow host slows the process down instead of filling guest memory.
//  - Input: Stdin frames are buffered (at most proto::kStdinWindow, the host's credit) and
//    written as the process reads; StdinAck returns the credit. The connection is always read,
//    so Signal and Resize frames are never stuck behind input. A stdin pipe that fills up is
//    grown past the window, so the process's reads stop waking guest-init one page at a time.
//  - Signals go to the process group; the timeout SIGKILLs the group and reports TimedOut; a
//    host that disconnects or breaks the protocol gets the group SIGKILLed too.
//  - After the exit, output already in the pipes is still sent, but a pipe kept open by a
//    background grandchild is closed at the first moment it has nothing to read: the exec ends
//    with its process, as the host's exit code depends on it.
//  - Exit carries the status and the guest-side time from the Exec frame to the exit; the
//    last output, the EOFs and Exit leave together in one sendmsg.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "context.h"
#include "proto/agent.h"
#include "proto/exec.h"

namespace space::guest {

constexpr size_t kOutLimit = 2u << 20;

// Serves the exec `req` on connection `sock` (blocking fd; `dec` holds bytes already read from
// it). `start_us` is when the Exec frame was taken (CLOCK_MONOTONIC). Never throws.
// `secret_env` ("VAR=value" entries from the credential helper, or nullptr) is added to the
// process's environment and wiped as soon as the process has been started (or failed to start).
void run_exec(Context& ctx, int sock, proto::FrameDecoder& dec, const proto::ExecRequest& req,
              int64_t start_us, std::vector<std::string>* secret_env = nullptr) noexcept;

// CLOCK_MONOTONIC in microseconds.
int64_t monotonic_us() noexcept;

}  // namespace space::guest

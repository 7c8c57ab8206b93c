// ExecBridge: the host side of one running exec, a single poll() loop over the agent socket,
// the caller's stdin, stdout and stderr, and a signalfd. Everything is non-blocking with
// bounded buffers, so nothing deadlocks whatever the process does (floods stdout while stdin is
// fed, never reads stdin, closes it early):
//  - stdin is read only while the guest has granted credit (proto::kStdinWindow, returned by
//    StdinAck) and little is queued for the socket;
//  - the socket is read only while less than kHostOutLimit bytes of output wait for the
//    caller's stdout/stderr, so a slow reader of our stdout slows the guest process down;
//  - signals are queued as frames at once, and the guest always reads them.
// A stdout or stderr whose reader went away (EPIPE) is dropped and the process gets SIGPIPE,
// as it would if it wrote to the closed pipe itself.
#pragma once
#include <cstdint>
#include <optional>

#include "agent/exec_options.h"
#include "proto/exec.h"
#include "util/process.h"

namespace space::agent {

constexpr size_t kHostOutLimit = 4u << 20;

// Bridges `io` to the exec on `sock` (Exec already sent) until its Exit frame has arrived and
// all output is written. `sig` routes SIGINT/SIGTERM/SIGHUP (forwarded) and SIGWINCH (a Resize
// with opts.tty). If opts.give_up_after_signal_ms passes after a forwarded signal, it returns
// Signaled with that signal and a message. Throws Error if the connection breaks or the guest
// breaks the protocol.
proto::ExitStatus bridge_exec(int sock, const ExecOptions& opts, const StdioFds& io,
                              proc::SignalGuard& sig);

// The Exec request for `opts`, with the window size and TERM of the caller's terminal (`io`).
proto::ExecRequest make_exec_request(const ExecOptions& opts, const StdioFds& io);

// The whole exec on a fresh agent connection: Hello and Exec in one write, HelloReply, then
// bridge_exec (the caller's terminal raw meanwhile with -i -t). exec_in_sandbox calls it after
// dialing; tests call it on a guest-init --serve-unix socket. Stats: hello_us, total_us (from
// this call), guest_us.
ExecResult exec_on_connection(int sock, const ExecOptions& opts, const StdioFds& io,
                              proc::SignalGuard& sig);

}  // namespace space::agent

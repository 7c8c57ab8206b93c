// One host connection, served on its own thread from accept to close.
// A connection opens with Hello (anything else, or a peer of another protocol version, is
// answered with Error and closed). After HelloReply the connection serves requests:
//   Poweroff -> Ack, then the event loop powers the guest off.
//   Exec     -> run_exec (exec_session.h) takes the connection over until the process ends.
// Every Hello's entropy and time go to ctx.host_sync first (PID 1 only).
// Malformed frames, unknown types and undecodable payloads get Error and close this connection
// only. New request types (exec, file transfer, reseed...) are added in Session::on_request:
// the first request after Hello decides what a connection is for, and may take it over.
#pragma once
#include "context.h"
#include "util/fd.h"

namespace space::guest {

// Serves `conn` until the peer closes it or breaks the protocol. Never throws.
void serve_connection(Fd conn, Context& ctx) noexcept;

}  // namespace space::guest

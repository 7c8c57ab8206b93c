// `space mcp`: a Model Context Protocol server over stdio (revision 2025-11-25, and the earlier
// ones a client may ask for: 2025-06-18, 2025-03-26, 2024-11-05). It reads one JSON-RPC message
// per line on stdin and writes one per line on stdout; stdout carries nothing else, and logs go
// to stderr. It answers initialize, ping, tools/list and tools/call (mcp/tools.h), takes the
// notifications the spec defines (initialized, cancelled: a call already running is not
// interrupted), and gives every other request -32601. Requests are served one at a time, in
// order. A line that is not JSON gets -32700; one that is not a request, -32600; one longer than
// the bound, -32600 without reading it whole. The session ends at the end of stdin or on SIGINT,
// SIGTERM or SIGHUP, and the sandboxes it made without `keep` are destroyed then.
#pragma once
#include <cstddef>
#include <string>

#include "mcp/tools.h"
#include "store/context.h"

namespace space::mcp {

// Protocol revisions this server speaks, newest first; the first is what it offers.
extern const char* const kProtocolVersions[4];

struct ServerOptions {
  ToolboxOptions tools;
  size_t max_message = 8u << 20;  // bytes in one message line
};

// One session's protocol state, apart from its streams: handle() takes one line and returns the
// line to write back ("" for none). Exposed for tests.
class Session {
 public:
  Session(store::Context ctx, ServerOptions opts);
  std::string handle(const std::string& line);
  // The reply to a line that passed the bound.
  static std::string too_long(size_t max_message);
  Toolbox& toolbox() { return tools_; }

 private:
  Toolbox tools_;
  size_t max_message_;
  bool initialized_ = false;
};

// Serves `in` and `out` (stdin and stdout) until the session ends; returns the exit code (0).
int serve(const store::Context& ctx, const ServerOptions& opts, int in = 0, int out = 1);

}  // namespace space::mcp

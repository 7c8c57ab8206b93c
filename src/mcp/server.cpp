// The MCP server's session and loop; see server.h.
#include "mcp/server.h"

#include <poll.h>
#include <signal.h>
#include <string.h>

#include <cerrno>

#include "mcp/jsonrpc.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/process.h"

#ifndef SPACE_VERSION
#define SPACE_VERSION "0"
#endif

namespace space::mcp {

const char* const kProtocolVersions[4] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

namespace {

json::Value initialize_result(const json::Value& params) {
  std::string asked;
  if (params.is_object())
    if (const json::Value* v = params.find("protocolVersion"); v && v->is_string())
      asked = v->as_string();
  std::string version = kProtocolVersions[0];
  for (const char* v : kProtocolVersions)
    if (asked == v) version = v;
  json::Value tools = json::Value::object();
  tools.set("listChanged", false);
  json::Value caps = json::Value::object();
  caps.set("tools", tools);
  json::Value info =
      json::Object{{"name", "space"}, {"title", "space sandboxes"}, {"version", SPACE_VERSION}};
  json::Value r =
      json::Object{{"protocolVersion", version}, {"capabilities", caps}, {"serverInfo", info}};
  r.set("instructions",
        "Each sandbox is an isolated machine with its own kernel. Create one (or use the one this "
        "server exposes), run commands with exec, move small files with write_file and "
        "read_file. Sandboxes have no network unless created with `allow`.");
  return r;
}

}  // namespace

Session::Session(store::Context ctx, ServerOptions opts)
    : tools_(std::move(ctx), std::move(opts.tools)), max_message_(opts.max_message) {}

std::string Session::too_long(size_t max_message) {
  return encode_error(
      nullptr, kInvalidRequest,
      "Invalid Request: the message is longer than " + std::to_string(max_message) + " bytes");
}

std::string Session::handle(const std::string& line) {
  if (line.find_first_not_of(" \t") == std::string::npos) return "";
  Decoded d = decode(line);
  if (d.error) return encode_error(d.error->id, d.error->code, d.error->message);
  const Message& m = *d.message;
  if (m.kind == Message::Kind::Response) return "";  // we send no requests: nothing awaits it
  if (m.kind == Message::Kind::Notification) {
    // notifications/initialized, notifications/cancelled (a call in progress runs to its end:
    // requests are served one at a time) and any other: nothing to answer.
    if (m.method == "notifications/initialized") initialized_ = true;
    return "";
  }
  if (m.method == "ping") return encode_result(m.id, json::Value::object());
  if (m.method == "initialize") {
    initialized_ = true;
    return encode_result(m.id, initialize_result(m.params));
  }
  if (!initialized_)
    return encode_error(m.id, kInvalidRequest,
                        "the session is not initialized: send initialize first");
  if (m.method == "tools/list") return encode_result(m.id, tools_.list());
  if (m.method == "tools/call") {
    const json::Value* name = m.params.is_object() ? m.params.find("name") : nullptr;
    if (!name || !name->is_string())
      return encode_error(m.id, kInvalidParams, "tools/call needs \"name\", a string");
    if (!tools_.has(name->as_string()))
      return encode_error(m.id, kInvalidParams, "Unknown tool: " + name->as_string());
    const json::Value* args = m.params.find("arguments");
    std::string reply =
        encode_result(m.id, tools_.call(name->as_string(), args ? *args : json::Value(nullptr)));
    if (reply.size() <= max_message_) return reply;
    return encode_result(
        m.id, tool_error("the result is " + std::to_string(reply.size()) +
                             " bytes, more than one message may hold (" +
                             std::to_string(max_message_) + ")",
                         "lower space mcp's --max-output, or narrow the command's output"));
  }
  return encode_error(m.id, kMethodNotFound, "Method not found: " + m.method);
}

int serve(const store::Context& ctx, const ServerOptions& opts, int in, int out) {
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-reply is an EPIPE, then the end
  proc::SignalGuard signals;
  Session session(ctx, opts);
  LineReader reader(in, opts.max_message);
  log::info("mcp: serving on stdio");
  for (;;) {
    if (!reader.has_line()) {
      pollfd fds[2] = {{in, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        throw_errno("poll");
      }
      if (fds[1].revents & POLLIN) {
        log::info(std::string("mcp: ") + ::strsignal(signals.take()) + "; ending the session");
        break;
      }
    }
    std::string line;
    LineReader::Status s = reader.next(line);
    if (s == LineReader::Status::End) break;
    std::string reply = s == LineReader::Status::TooLong ? Session::too_long(opts.max_message)
                                                         : session.handle(line);
    if (reply.empty()) continue;
    reply += '\n';
    try {
      write_all(out, reply.data(), reply.size());
    } catch (const Error& e) {
      log::info(std::string("mcp: the client is gone (") + e.what() + "); ending the session");
      break;
    }
  }
  session.toolbox().end_session();
  return 0;
}

}  // namespace space::mcp

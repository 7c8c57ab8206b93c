// JSON-RPC 2.0 lines for MCP; see jsonrpc.h.
#include "mcp/jsonrpc.h"

#include <unistd.h>

#include <cerrno>

#include "util/error.h"

namespace space::mcp {

namespace {

bool valid_id(const json::Value& id) {
  return id.is_string() || id.is_int();
}

DecodeError invalid(std::string why, json::Value id = nullptr) {
  return DecodeError{kInvalidRequest, "Invalid Request: " + std::move(why), std::move(id)};
}

json::Value envelope() {
  json::Value v = json::Value::object();
  v.set("jsonrpc", "2.0");
  return v;
}

}  // namespace

Decoded decode(std::string_view line) {
  Decoded d;
  json::Value v;
  try {
    v = json::parse(line, {.max_depth = 64});
  } catch (const Error& e) {
    d.error = DecodeError{kParseError, std::string("Parse error: ") + e.what(), nullptr};
    return d;
  }
  if (v.is_array()) {
    d.error = invalid("batches are not part of MCP (since 2025-06-18)");
    return d;
  }
  if (!v.is_object()) {
    d.error = invalid("a message is a JSON object");
    return d;
  }
  const json::Value* id = v.find("id");
  json::Value id_value = id && valid_id(*id) ? *id : json::Value(nullptr);
  const json::Value* version = v.find("jsonrpc");
  if (!version || !version->is_string() || version->as_string() != "2.0") {
    d.error = invalid("\"jsonrpc\" must be \"2.0\"", id_value);
    return d;
  }
  if (id && !valid_id(*id)) {
    d.error = invalid("\"id\" must be a string or an integer");
    return d;
  }
  const json::Value* method = v.find("method");
  Message m;
  if (id) m.id = *id;
  if (!method) {
    if (!id || (!v.find("result") && !v.find("error"))) {
      d.error = invalid("no \"method\", and not a response", id_value);
      return d;
    }
    m.kind = Message::Kind::Response;
    d.message = std::move(m);
    return d;
  }
  if (!method->is_string() || method->as_string().empty()) {
    d.error = invalid("\"method\" must be a non-empty string", id_value);
    return d;
  }
  m.method = method->as_string();
  if (const json::Value* params = v.find("params")) {
    if (!params->is_object() && !params->is_array()) {
      d.error = invalid("\"params\" must be an object or an array", id_value);
      return d;
    }
    m.params = *params;
  }
  m.kind = id ? Message::Kind::Request : Message::Kind::Notification;
  d.message = std::move(m);
  return d;
}

std::string encode_result(const json::Value& id, const json::Value& result) {
  json::Value v = envelope();
  v.set("id", id);
  v.set("result", result);
  return json::serialize(v);
}

std::string encode_error(const json::Value& id, int code, const std::string& message,
                         const json::Value& data) {
  json::Value err = json::Value::object();
  err.set("code", code);
  err.set("message", message);
  if (!data.is_null()) err.set("data", data);
  json::Value v = envelope();
  v.set("id", id);
  v.set("error", err);
  return json::serialize(v);
}

bool LineReader::fill() {
  if (eof_) return false;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("read the client's messages");
    if (n == 0) {
      eof_ = true;
      return false;
    }
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

LineReader::Status LineReader::next(std::string& line) {
  line.clear();
  bool too_long = false;
  size_t scanned = pos_;
  auto finish = [&](std::string text) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (too_long || text.size() > max_) return Status::TooLong;
    line = std::move(text);
    return Status::Line;
  };
  for (;;) {
    size_t nl = buf_.find('\n', scanned);
    if (nl != std::string::npos) {
      std::string text = too_long ? std::string() : buf_.substr(pos_, nl - pos_);
      pos_ = nl + 1;
      return finish(std::move(text));
    }
    if (buf_.size() - pos_ > max_ + 1) {  // no newline within the bound: drop what it held
      too_long = true;
      buf_.erase(pos_);
    }
    buf_.erase(0, pos_);
    pos_ = 0;
    scanned = buf_.size();
    if (!fill()) {
      if (buf_.empty() && !too_long) return Status::End;
      std::string text = too_long ? std::string() : std::move(buf_);
      buf_.clear();
      return finish(std::move(text));
    }
  }
}

}  // namespace space::mcp

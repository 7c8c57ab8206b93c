// JSON-RPC 2.0 as MCP's stdio transport carries it: one message per line, UTF-8, no embedded
// newline, no batches (MCP removed them in 2025-06-18). decode() sorts a line into a request, a
// notification or a response, or says which error object the spec gives it (-32700 for text
// that is not JSON, -32600 for JSON that is not a request); the encoders make the replies.
// LineReader cuts a byte stream into lines with a hard bound, so an endless line costs at most
// `max_bytes` of memory and is reported as too long, never buffered.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/json.h"

namespace space::mcp {

// The error codes of JSON-RPC 2.0 (and the one MCP uses for a resource or request id it lacks).
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
};

struct Message {
  enum class Kind { Request, Notification, Response };
  Kind kind = Kind::Request;
  json::Value id;      // a string or an integer (requests and responses); null otherwise
  std::string method;  // requests and notifications
  json::Value params;  // an object or an array; null when absent
};

// A line that is not a message: the error to answer with, and the id to answer to (null when
// the line had none we could read).
struct DecodeError {
  int code = kInvalidRequest;
  std::string message;
  json::Value id;
};

struct Decoded {
  std::optional<Message> message;
  std::optional<DecodeError> error;
};

// Decodes one line (without its newline).
Decoded decode(std::string_view line);

// {"jsonrpc":"2.0","id":ID,"result":RESULT} on one line, without the newline.
std::string encode_result(const json::Value& id, const json::Value& result);
// {"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE[,"data":DATA]}}.
std::string encode_error(const json::Value& id, int code, const std::string& message,
                         const json::Value& data = nullptr);

// Lines from a file descriptor, each at most `max_bytes` long (the newline not counted; a
// trailing '\r' is dropped).
class LineReader {
 public:
  LineReader(int fd, size_t max_bytes) : fd_(fd), max_(max_bytes) {}
  enum class Status { Line, TooLong, End };
  // The next line into `line`. TooLong: a line passed max_bytes; what it held was discarded up
  // to its newline (or the end), and `line` is empty. End: the stream ended (a last line without
  // a newline is returned first). Throws on a read error.
  Status next(std::string& line);
  // Whether a whole line is already buffered (next() would not read).
  bool has_line() const { return buf_.find('\n', pos_) != std::string::npos; }

 private:
  int fd_;
  size_t max_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  bool fill();  // reads more; false at the end of the stream
};

}  // namespace space::mcp

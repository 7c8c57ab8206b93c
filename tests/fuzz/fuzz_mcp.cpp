// libFuzzer harness for the MCP server's message decoder (src/mcp/jsonrpc): arbitrary bytes go to
// decode(), which must return exactly one of a message or an error, and never throw; a decoded
// request or notification is re-encoded as a reply and an error to its id, and both must decode
// again as responses (__builtin_trap otherwise). ASan and UBSan catch memory errors. ctest runs it
// for a fixed number of inputs from the seeds in tests/fuzz/corpus/mcp.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mcp/jsonrpc.h"

using namespace space;
using namespace space::mcp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  Decoded d = decode(line);
  if (bool(d.message) == bool(d.error)) __builtin_trap();
  if (!d.message || d.message->kind == Message::Kind::Response) return 0;
  const json::Value id = d.message->kind == Message::Kind::Request ? d.message->id : nullptr;
  Decoded r = decode(encode_result(id.is_null() ? json::Value(0) : id, d.message->params));
  if (!r.message || r.message->kind != Message::Kind::Response) __builtin_trap();
  Decoded e =
      decode(encode_error(id.is_null() ? json::Value(0) : id, kInternalError, d.message->method));
  if (!e.message || e.message->kind != Message::Kind::Response) __builtin_trap();
  return 0;
}

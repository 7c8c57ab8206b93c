// Control socket client; see control_client.h.
#include "core/control_client.h"

#include "util/error.h"
#include "util/socket.h"

namespace space::core {

json::Value control_call(const std::string& sock, const json::Value& req, int timeout_ms) {
  const json::Value* op = req.find("op");
  std::string what = "control request " + (op && op->is_string() ? op->as_string() : "?");
  try {
    auto dl = net::Deadline::after_ms(timeout_ms);
    Fd fd = net::unix_connect(sock, dl);
    net::send_all(fd.get(), json::serialize(req) + "\n", dl);
    auto line = net::read_line(fd.get(), dl);
    if (!line) fail("the VMM closed the connection without replying");
    json::Value reply = json::parse(*line);
    const json::Value* ok = reply.find("ok");
    if (!ok || !ok->is_bool()) fail("malformed reply from the VMM: " + *line);
    if (!ok->as_bool()) fail(json::string_field_or(reply, "error", "the VMM refused the request"));
    return reply;
  } catch (Error& e) {
    e.add_context(what);
    throw;
  }
}

}  // namespace space::core

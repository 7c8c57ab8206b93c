// Unit tests for mcp/server's Session and mcp/tools' Toolbox, without sandboxes: initialize's
// version negotiation and capabilities, requests before initialize, ping, unknown methods and
// tools, tools/list with and without --sandbox and --allow (each tool's inputSchema an object
// schema; no `sandbox` argument when confined), --allow names checked, and failures as tool
// results (isError with space's message), never protocol errors.
#include <doctest/doctest.h>

#include <string>

#include "mcp/jsonrpc.h"
#include "mcp/server.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/json.h"

using namespace space;
using namespace space::mcp;

namespace {
json::Value reply(Session& s, const std::string& line) {
  return json::parse(s.handle(line));
}

std::string init(const char* version) {
  return std::string(
             R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":")") +
         version + R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
}

std::vector<std::string> tool_names(const json::Value& list) {
  std::vector<std::string> out;
  for (const auto& t : list.at("result").at("tools").as_array())
    out.push_back(t.at("name").as_string());
  return out;
}
}  // namespace

TEST_CASE("mcp session: initialize negotiates the version; nothing but ping before it") {
  test::TempDir root;
  Session s({root.path, "error", "text"}, {});
  json::Value early = reply(s, R"({"jsonrpc":"2.0","id":0,"method":"tools/list"})");
  CHECK(early.at("error").at("code").as_int() == kInvalidRequest);
  CHECK(reply(s, R"({"jsonrpc":"2.0","id":"p","method":"ping"})").at("result").is_object());

  json::Value r = reply(s, init("2025-06-18"));
  CHECK(r.at("result").at("protocolVersion").as_string() == "2025-06-18");
  CHECK(r.at("result").at("capabilities").at("tools").is_object());
  CHECK(r.at("result").at("serverInfo").at("name").as_string() == "space");
  Session s2({root.path, "error", "text"}, {});
  CHECK(reply(s2, init("1999-01-01")).at("result").at("protocolVersion").as_string() ==
        kProtocolVersions[0]);

  CHECK(s.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
  CHECK(s.handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{}})").empty());
  CHECK(s.handle(R"({"jsonrpc":"2.0","id":5,"result":{}})").empty());
  CHECK(s.handle("   ").empty());
  CHECK(reply(s, R"({"jsonrpc":"2.0","id":2,"method":"prompts/list"})")
            .at("error")
            .at("code")
            .as_int() == kMethodNotFound);
  json::Value unknown =
      reply(s, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rm"}})");
  CHECK(unknown.at("error").at("code").as_int() == kInvalidParams);
  CHECK(reply(s, "{oops").at("error").at("code").as_int() == kParseError);
  CHECK(json::parse(Session::too_long(10)).at("error").at("code").as_int() == kInvalidRequest);
}

TEST_CASE("mcp tools/list: every tool, each with an object schema") {
  test::TempDir root;
  Session s({root.path, "error", "text"}, {});
  s.handle(init("2025-11-25"));
  json::Value list = reply(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  CHECK(tool_names(list) == std::vector<std::string>{"create", "exec", "write_file", "read_file",
                                                     "list", "pause", "resume", "branch",
                                                     "destroy"});
  for (const auto& t : list.at("result").at("tools").as_array()) {
    const json::Value& schema = t.at("inputSchema");
    CHECK(schema.at("type").as_string() == "object");
    CHECK(schema.at("properties").is_object());
    CHECK_FALSE(t.at("description").as_string().empty());
  }
}

TEST_CASE("mcp tools: --allow narrows, and names only tools") {
  test::TempDir root;
  ServerOptions o;
  o.tools.allow = {"exec", "list"};
  Session s({root.path, "error", "text"}, o);
  s.handle(init("2025-11-25"));
  CHECK(tool_names(reply(s, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})")) ==
        std::vector<std::string>{"exec", "list"});
  CHECK(reply(s, R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create"}})")
            .at("error")
            .at("code")
            .as_int() == kInvalidParams);
  ServerOptions bad;
  bad.tools.allow = {"exec", "format_disk"};
  CHECK_THROWS_WITH_AS(Session({root.path, "error", "text"}, bad), doctest::Contains("format_disk"),
                       Error);
}

TEST_CASE("mcp tools: --sandbox must exist") {
  test::TempDir root;
  ServerOptions o;
  o.tools.sandbox = "nosuch";
  CHECK_THROWS_WITH_AS(Session({root.path, "error", "text"}, o),
                       doctest::Contains("does not exist"), Error);
}

TEST_CASE("mcp tools/call: failures are tool results with space's message") {
  test::TempDir root;
  Session s({root.path, "error", "text"}, {});
  s.handle(init("2025-11-25"));
  auto call = [&](const std::string& args) {
    json::Value r = reply(
        s, R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exec","arguments":)" +
               args + "}}");
    REQUIRE(r.find("result"));
    CHECK(r.at("result").at("isError").as_bool());
    return r.at("result").at("content").as_array().at(0).at("text").as_string();
  };
  CHECK(call(R"({"command":["true"]})").find("\"sandbox\" is required") != std::string::npos);
  CHECK(call(R"({"sandbox":"../x","command":["true"]})").find("space: error:") == 0);
  CHECK(call(R"({"sandbox":"box","command":["true"],"shell":"true"})").find("either") !=
        std::string::npos);
  CHECK(call(R"({"sandbox":"box","rm":1})").find("unknown argument \"rm\"") != std::string::npos);
  CHECK(call(R"({"sandbox":"box","command":"true"})").find("array of strings") !=
        std::string::npos);
  CHECK(call(R"({"sandbox":"box","command":["true"],"timeout":0})").find("integer from 1") !=
        std::string::npos);
  CHECK(call("[1]").find("must be an object") != std::string::npos);
}

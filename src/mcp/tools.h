// The tools `space mcp` offers an agent, each a JSON Schema for its input and a handler over
// core's operations (never the CLI): create, exec, write_file, read_file, list, pause, resume,
// branch and destroy. A Toolbox is one server session's view of them: confined to one sandbox
// (no lifecycle tools, and no `sandbox` argument to name another), narrowed by --allow, with
// exec's output bounded. It remembers the sandboxes this session made, which end with it unless
// made with `keep`. A failure is a tool result with isError set and space's message and hint as
// its text, as MCP asks, so that the model can read it and try again; never an exception.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "store/context.h"
#include "util/json.h"

namespace space::mcp {

struct ToolboxOptions {
  std::string sandbox;             // "" = every sandbox and the lifecycle tools; else only this one
  std::vector<std::string> allow;  // tool names; empty = all that the mode offers
  // Bytes of stdout (and of stderr) an exec returns, and the largest file moved. A reply holds
  // them twice (text, and structuredContent), escaped: the default keeps the largest well within
  // the official TypeScript SDK's 10 MiB per message.
  size_t max_output = 256u << 10;
};

class Toolbox {
 public:
  // Throws Error for an --allow name that is no tool of this mode, or a --sandbox that does not
  // exist.
  Toolbox(store::Context ctx, ToolboxOptions opts);
  ~Toolbox();
  Toolbox(const Toolbox&) = delete;
  Toolbox& operator=(const Toolbox&) = delete;

  // The tools/list result: {"tools": [{name, title, description, inputSchema, annotations}]}.
  json::Value list() const;
  // Whether `name` is one of this session's tools.
  bool has(const std::string& name) const;
  // The tools/call result for tool `name` (has(name)) with `arguments` (an object, or null).
  json::Value call(const std::string& name, const json::Value& arguments);
  // Destroys the sandboxes this session made without `keep`; what fails is logged.
  void end_session() noexcept;
  // The ids end_session() would destroy.
  const std::vector<std::string>& made() const { return made_; }

 private:
  store::Context ctx_;
  ToolboxOptions opts_;
  std::set<std::string> tools_;
  std::vector<std::string> made_;

  json::Value run(const std::string& name, const json::Value& args);
  // One tool each: its arguments (checked against its schema) to its result.
  json::Value tool_create(const json::Value& args);
  json::Value tool_exec(const json::Value& args);
  json::Value tool_write_file(const json::Value& args);
  json::Value tool_read_file(const json::Value& args);
  json::Value tool_list();
  json::Value tool_pause_resume(const std::string& name, const json::Value& args);
  json::Value tool_branch(const json::Value& args);
  json::Value tool_destroy(const json::Value& args);
  std::string sandbox_arg(const json::Value& args) const;
};

// A tools/call result that reports a failure to the model: isError, and the text
// "space: error: WHAT" with "hint: HINT" on a line of its own when there is one.
json::Value tool_error(const std::string& what, const std::string& hint = "");
// Whether tool `name` changes which sandboxes exist or run (hidden with --sandbox).
bool is_lifecycle_tool(const std::string& name);

}  // namespace space::mcp

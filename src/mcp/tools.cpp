// The tools of `space mcp`; see tools.h.
#include "mcp/tools.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "core/copy.h"
#include "core/idle.h"
#include "core/sandbox.h"
#include "core/session.h"
#include "ops/branch.h"
#include "ops/exec.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/base64.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/scratch_dir.h"
#include "util/utf8.h"

namespace space::mcp {

namespace {

constexpr uint32_t kDefaultExecTimeoutS = 300;
constexpr uint32_t kMaxExecTimeoutS = 24 * 3600;
constexpr uint32_t kMaxBranches = 16;

const std::vector<std::string> kTools = {"create", "exec",   "write_file", "read_file", "list",
                                         "pause",  "resume", "branch",     "destroy"};

// --- JSON Schema pieces ---------------------------------------------------------------------

json::Value prop(const char* type, const std::string& description) {
  json::Value p = json::Value::object();
  p.set("type", type);
  p.set("description", description);
  return p;
}

json::Value string_array(const std::string& description) {
  json::Value p = prop("array", description);
  json::Value items = json::Value::object();
  items.set("type", "string");
  p.set("items", items);
  return p;
}

json::Value enum_prop(std::vector<std::string> values, const std::string& description) {
  json::Value p = prop("string", description);
  json::Value e = json::Value::array();
  for (auto& v : values) e.push_back(v);
  p.set("enum", e);
  return p;
}

struct SchemaBuilder {
  json::Value props = json::Value::object();
  json::Value required = json::Value::array();
  SchemaBuilder& add(const char* name, json::Value p, bool req = false) {
    props.set(name, std::move(p));
    if (req) required.push_back(name);
    return *this;
  }
  json::Value build() const {
    json::Value s = json::Value::object();
    s.set("type", "object");
    s.set("properties", props);
    if (!required.as_array().empty()) s.set("required", required);
    s.set("additionalProperties", false);
    return s;
  }
};

const char* kSandboxDoc = "The sandbox's id (as create returned it, or as list shows it)";

json::Value input_schema(const std::string& tool, bool confined) {
  SchemaBuilder b;
  auto sandbox = [&] {
    if (!confined) b.add("sandbox", prop("string", kSandboxDoc), true);
  };
  if (tool == "create") {
    b.add("template", prop("string", "Template to restore (default: the host's default)"));
    b.add("image", prop("string",
                        "An image (space image list) every exec runs inside, e.g. "
                        "a Debian image with python3"));
    b.add("engine", enum_prop({"vm", "gvisor"}, "Isolation engine (default: the host's)"));
    b.add("allow", string_array("Network rules the sandbox may connect to: host:port, "
                                "*.example.com, an address or CIDR. None = no network"));
    b.add("ttl", prop("string", "The sandbox ends this long after it starts, e.g. 30m, 2h"));
    b.add("idle_pause",
          prop("string",
               "Pause the sandbox after this long unused, e.g. 5m; the next call that "
               "uses it resumes it (\"off\": never)"));
    b.add("idle_checkpoint",
          prop("string",
               "Checkpoint the sandbox to disk, freeing its memory, after this long "
               "unused, e.g. 30m; the next call that uses it restores it"));
    b.add("keep", prop("boolean",
                       "Keep the sandbox when this MCP session ends (default: it is "
                       "destroyed then)"));
    b.add("id", prop("string", "The sandbox's id (default: 12 random hex digits)"));
  } else if (tool == "exec") {
    sandbox();
    b.add("command", string_array("The program and its arguments (argv; looked up in PATH)"));
    b.add("shell", prop("string", "A shell command line, run as sh -c LINE (instead of command)"));
    b.add("stdin", prop("string", "Text the command reads on its standard input"));
    json::Value env = prop("object", "Environment variables set for the command");
    json::Value extra = json::Value::object();
    extra.set("type", "string");
    env.set("additionalProperties", extra);
    b.add("env", env);
    b.add("cwd", prop("string", "Working directory (default /)"));
    json::Value t = prop("integer", "Seconds before the command is killed (default 300)");
    t.set("minimum", 1);
    t.set("maximum", kMaxExecTimeoutS);
    b.add("timeout", t);
  } else if (tool == "write_file") {
    sandbox();
    b.add("path", prop("string", "Absolute path of the file in the sandbox"), true);
    b.add("content", prop("string", "The file's content"), true);
    b.add("encoding", enum_prop({"utf-8", "base64"}, "How content is written (default utf-8)"));
  } else if (tool == "read_file") {
    sandbox();
    b.add("path", prop("string", "Absolute path of a regular file in the sandbox"), true);
  } else if (tool == "branch") {
    sandbox();
    json::Value c = prop("integer", "How many branches (default 1)");
    c.set("minimum", 1);
    c.set("maximum", kMaxBranches);
    b.add("count", c);
    b.add("keep", prop("boolean", "Keep the branches when this MCP session ends"));
  } else if (tool == "pause" || tool == "resume" || tool == "destroy") {
    sandbox();
  }
  return b.build();
}

const char* description_of(const std::string& tool) {
  if (tool == "create")
    return "Create a sandbox: a microVM (or gVisor sandbox) restored from a template, with no "
           "network unless `allow` names hosts. Returns its id. It is destroyed when this MCP "
           "session ends unless `keep` is true.";
  if (tool == "exec")
    return "Run a command in a sandbox and return its exit code, stdout and stderr (each bounded; "
           "`truncated` says when output was cut). Give `command` (argv) or `shell` (a line).";
  if (tool == "write_file") return "Write a file in a sandbox (its parent directory must exist).";
  if (tool == "read_file")
    return "Read a regular file from a sandbox: UTF-8 text, or base64 (`encoding`) when it is not.";
  if (tool == "list") return "List the sandboxes on this host, with their status.";
  if (tool == "pause") return "Pause a running sandbox (it keeps its memory; resume continues it).";
  if (tool == "resume") return "Resume a paused or checkpointed sandbox.";
  if (tool == "branch")
    return "Branch a sandbox into `count` new running sandboxes with its exact memory and disk "
           "state. Branches start with no secrets granted.";
  if (tool == "destroy") return "Destroy a sandbox and everything in it.";
  return "";
}

// --- arguments ------------------------------------------------------------------------------

const json::Value* member(const json::Value& args, const char* key) {
  if (!args.is_object()) return nullptr;
  const json::Value* v = args.find(key);
  return v && !v->is_null() ? v : nullptr;
}

std::string str_arg(const json::Value& args, const char* key, bool required = false) {
  const json::Value* v = member(args, key);
  if (!v) {
    if (required) fail(std::string("argument \"") + key + "\" is required");
    return "";
  }
  if (!v->is_string()) fail(std::string("argument \"") + key + "\" must be a string");
  return v->as_string();
}

bool bool_arg(const json::Value& args, const char* key) {
  const json::Value* v = member(args, key);
  if (!v) return false;
  if (!v->is_bool()) fail(std::string("argument \"") + key + "\" must be true or false");
  return v->as_bool();
}

int64_t int_arg(const json::Value& args, const char* key, int64_t dflt, int64_t lo, int64_t hi) {
  const json::Value* v = member(args, key);
  if (!v) return dflt;
  if (!v->is_int() || v->as_int() < lo || v->as_int() > hi)
    fail(std::string("argument \"") + key + "\" must be an integer from " + std::to_string(lo) +
         " to " + std::to_string(hi));
  return v->as_int();
}

std::vector<std::string> strings_arg(const json::Value& args, const char* key) {
  std::vector<std::string> out;
  const json::Value* v = member(args, key);
  if (!v) return out;
  if (!v->is_array()) fail(std::string("argument \"") + key + "\" must be an array of strings");
  for (const auto& e : v->as_array()) {
    if (!e.is_string()) fail(std::string("argument \"") + key + "\" must be an array of strings");
    out.push_back(e.as_string());
  }
  return out;
}

void reject_unknown(const json::Value& args, const json::Value& schema) {
  if (!args.is_object()) return;
  const json::Value& props = schema.at("properties");
  for (const auto& m : args.as_object())
    if (!props.find(m.first))
      fail("unknown argument \"" + m.first + "\"", "tools/list shows each tool's inputSchema");
}

// --- results --------------------------------------------------------------------------------

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8::utf8_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

json::Value text_result(const std::string& text, json::Value structured, bool error = false) {
  json::Value content = json::Value::array();
  json::Value item = json::Value::object();
  item.set("type", "text");
  item.set("text", text);
  content.push_back(item);
  json::Value r = json::Value::object();
  r.set("content", content);
  if (!structured.is_null()) r.set("structuredContent", std::move(structured));
  r.set("isError", error);
  return r;
}

json::Value structured_result(json::Value structured) {
  return text_result(json::serialize(structured, 2), std::move(structured));
}

// Output of one stream of an exec: its first `limit` bytes, and how many there were.
struct Capture {
  std::string data;
  uint64_t total = 0;
  size_t limit = 0;
  void drain(int fd) {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      total += static_cast<uint64_t>(n);
      if (data.size() < limit)
        data.append(buf, std::min(static_cast<size_t>(n), limit - data.size()));
    }
  }
  bool truncated() const { return total > data.size(); }
};

// NAME: the output as text, or "" and NAME_base64 when it is not UTF-8; NAME_bytes: how many
// bytes the command wrote in all.
void put_output(json::Value& out, const char* name, Capture& c) {
  // Cut at the bound, text may end inside a character: that partial character goes.
  for (int cut = 1;
       c.truncated() && cut <= 3 && c.data.size() >= size_t(cut) && !valid_utf8(c.data); cut++)
    if (valid_utf8(std::string_view(c.data).substr(0, c.data.size() - cut)))
      c.data.resize(c.data.size() - cut);
  const bool text = valid_utf8(c.data);
  out.set(name, text ? c.data : std::string());
  if (!text) out.set(std::string(name) + "_base64", base64::encode(c.data));
  out.set(std::string(name) + "_bytes", c.total);
}

std::string base_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  std::string b = slash == std::string::npos ? p : p.substr(slash + 1);
  if (b.empty() || b == "/" || b == "." || b == "..") fail("\"" + path + "\" names no file");
  return b;
}

}  // namespace

json::Value tool_error(const std::string& what, const std::string& hint) {
  std::string text = "space: error: " + what;
  if (!hint.empty()) text += "\nhint: " + hint;
  return text_result(text, nullptr, true);
}

bool is_lifecycle_tool(const std::string& name) {
  return name == "create" || name == "list" || name == "pause" || name == "resume" ||
         name == "branch" || name == "destroy";
}

Toolbox::Toolbox(store::Context ctx, ToolboxOptions opts)
    : ctx_(std::move(ctx)), opts_(std::move(opts)) {
  const bool confined = !opts_.sandbox.empty();
  if (confined) {
    core::sandbox_state(ctx_, opts_.sandbox);  // throws if the id is invalid or does not exist
  }
  for (const auto& t : kTools)
    if (!(confined && is_lifecycle_tool(t))) tools_.insert(t);
  if (!opts_.allow.empty()) {
    std::set<std::string> narrowed;
    for (const auto& a : opts_.allow) {
      if (!tools_.count(a)) {
        std::string offered;
        for (const auto& t : kTools)
          if (tools_.count(t)) offered += (offered.empty() ? "" : ",") + t;
        fail("--allow: no tool \"" + a + "\"" + (confined ? " with --sandbox" : ""),
             "the tools are " + offered);
      }
      narrowed.insert(a);
    }
    tools_ = std::move(narrowed);
  }
}

Toolbox::~Toolbox() {
  end_session();
}

json::Value Toolbox::list() const {
  json::Value tools = json::Value::array();
  for (const auto& name : kTools) {
    if (!tools_.count(name)) continue;
    json::Value t = json::Object{{"name", name},
                                 {"title", "space " + name},
                                 {"description", description_of(name)},
                                 {"inputSchema", input_schema(name, !opts_.sandbox.empty())}};
    json::Value ann = json::Value::object();
    const bool read_only = name == "list" || name == "read_file";
    ann.set("readOnlyHint", read_only);
    ann.set("destructiveHint", name == "destroy" || name == "write_file" || name == "exec");
    ann.set("openWorldHint", false);
    t.set("annotations", ann);
    tools.push_back(t);
  }
  json::Value r = json::Value::object();
  r.set("tools", tools);
  return r;
}

bool Toolbox::has(const std::string& name) const {
  return tools_.count(name) > 0;
}

std::string Toolbox::sandbox_arg(const json::Value& args) const {
  if (!opts_.sandbox.empty()) return opts_.sandbox;  // the schema has no "sandbox" then
  std::string id = str_arg(args, "sandbox", true);
  store::validate_id(id);
  return id;
}

json::Value Toolbox::call(const std::string& name, const json::Value& arguments) {
  try {
    if (!arguments.is_null() && !arguments.is_object()) fail("arguments must be an object");
    reject_unknown(arguments, input_schema(name, !opts_.sandbox.empty()));
    return run(name, arguments);
  } catch (const Error& e) {
    return tool_error(e.what(), e.hint());
  } catch (const std::exception& e) {
    return tool_error(e.what());
  }
}

json::Value Toolbox::run(const std::string& name, const json::Value& args) {
  if (name == "create") return tool_create(args);
  if (name == "exec") return tool_exec(args);
  if (name == "write_file") return tool_write_file(args);
  if (name == "read_file") return tool_read_file(args);
  if (name == "list") return tool_list();
  if (name == "pause" || name == "resume") return tool_pause_resume(name, args);
  if (name == "branch") return tool_branch(args);
  if (name == "destroy") return tool_destroy(args);
  fail("no tool \"" + name + "\"");
}

json::Value Toolbox::tool_create(const json::Value& args) {
  core::CreateOptions o;
  o.id = str_arg(args, "id");
  o.template_name = str_arg(args, "template");
  o.image = str_arg(args, "image");
  o.engine = str_arg(args, "engine");
  std::vector<std::string> allow = strings_arg(args, "allow");
  if (!allow.empty()) {
    o.net = "allow=";
    for (size_t i = 0; i < allow.size(); i++) o.net += (i ? "," : "") + allow[i];
  }
  std::string ttl = str_arg(args, "ttl");
  if (!ttl.empty()) o.ttl_ms = parse_duration_ms(ttl, "ttl");
  if (std::string v = str_arg(args, "idle_pause"); !v.empty())
    o.idle.pause_ms = core::parse_idle_duration(v, "idle_pause");
  if (std::string v = str_arg(args, "idle_checkpoint"); !v.empty())
    o.idle.checkpoint_ms = core::parse_idle_duration(v, "idle_checkpoint");
  const bool keep = bool_arg(args, "keep");
  store::SandboxState st = core::create_sandbox(ctx_, o);
  if (!keep) made_.push_back(st.id);
  json::Value out = json::Object{{"id", st.id},
                                 {"engine", st.engine},
                                 {"status", store::status_name(st.status)},
                                 {"keep", keep}};
  return structured_result(out);
}

json::Value Toolbox::tool_exec(const json::Value& args) {
  agent::ExecOptions o;
  o.sandbox = sandbox_arg(args);
  std::vector<std::string> argv = strings_arg(args, "command");
  std::string shell = str_arg(args, "shell");
  if (argv.empty() == shell.empty())
    fail("give either \"command\" (an argv array) or \"shell\" (a command line)");
  o.argv = shell.empty() ? argv : std::vector<std::string>{"sh", "-c", shell};
  if (const json::Value* env = member(args, "env")) {
    if (!env->is_object()) fail("argument \"env\" must be an object of strings");
    for (const auto& [k, v] : env->as_object()) {
      if (!v.is_string() || k.empty() || k.find('=') != std::string::npos)
        fail("argument \"env\": \"" + k + "\" must be a name with a string value");
      o.env.push_back(k + "=" + v.as_string());
    }
  }
  o.cwd = str_arg(args, "cwd");
  o.timeout_ms = static_cast<uint32_t>(
      int_arg(args, "timeout", kDefaultExecTimeoutS, 1, kMaxExecTimeoutS) * 1000);
  const std::string input = str_arg(args, "stdin");
  o.interactive = member(args, "stdin") != nullptr;
  Pipe in = Pipe::make(), out = Pipe::make(), err = Pipe::make();
  Capture out_c{.limit = opts_.max_output}, err_c{.limit = opts_.max_output};
  std::thread feeder([&in, &input] {
    Fd w = std::move(in.write);
    try {
      if (!input.empty()) write_all(w.get(), input.data(), input.size());
    } catch (const Error&) {
      // the command ended (or closed its stdin) before reading it all
    }
  });
  std::thread out_reader([&] { out_c.drain(out.read.get()); });
  std::thread err_reader([&] { err_c.drain(err.read.get()); });
  agent::ExecResult r;
  std::exception_ptr failed;
  try {
    r = ops::exec_in_sandbox(ctx_, o.sandbox, o,
                             agent::StdioFds{in.read.get(), out.write.get(), err.write.get()});
  } catch (...) {
    failed = std::current_exception();
  }
  in.read.reset();  // the feeder's last write fails (EPIPE) rather than blocking
  out.write.reset();
  err.write.reset();
  feeder.join();
  out_reader.join();
  err_reader.join();
  if (failed) std::rethrow_exception(failed);
  json::Value res = json::Value::object();
  res.set("exit_code", r.exit_code);
  put_output(res, "stdout", out_c);
  put_output(res, "stderr", err_c);
  res.set("truncated", out_c.truncated() || err_c.truncated());
  std::string text = "exit code " + std::to_string(r.exit_code);
  if (res.at("truncated").as_bool())
    text += " (output truncated to " + std::to_string(opts_.max_output) + " bytes per stream)";
  text += "\n--- stdout ---\n" + out_c.data + "\n--- stderr ---\n" + err_c.data;
  return text_result(text, res);
}

json::Value Toolbox::tool_write_file(const json::Value& args) {
  const std::string id = sandbox_arg(args);
  const std::string path = str_arg(args, "path", true);
  if (path.empty() || path[0] != '/') fail("\"path\" must be absolute");
  std::string content = str_arg(args, "content", true);
  const std::string encoding = str_arg(args, "encoding");
  if (encoding == "base64") {
    auto decoded = base64::decode(content);
    if (!decoded) fail("\"content\" is not valid base64");
    content = std::move(*decoded);
  } else if (!encoding.empty() && encoding != "utf-8") {
    fail("\"encoding\" must be utf-8 or base64");
  }
  if (content.size() > opts_.max_output)
    fail("the file is " + std::to_string(content.size()) + " bytes, more than " +
             std::to_string(opts_.max_output),
         "space cp copies large files; --max-output raises this bound");
  fs::ScratchDir dir("space-mcp");
  const std::string local = dir.path() + "/" + base_name(path);
  fs::write_file_atomic(local, content, 0644);
  core::CopyOptions c;
  c.sources = {local};
  c.dest = id + ":" + path;
  core::copy_files(ctx_, c);
  json::Value out = json::Value::object();
  out.set("path", path);
  out.set("bytes", static_cast<uint64_t>(content.size()));
  return structured_result(out);
}

json::Value Toolbox::tool_read_file(const json::Value& args) {
  const std::string id = sandbox_arg(args);
  const std::string path = str_arg(args, "path", true);
  if (path.empty() || path[0] != '/') fail("\"path\" must be absolute");
  fs::ScratchDir dir("space-mcp");
  const std::string local = dir.path() + "/out";
  core::CopyOptions c;
  c.sources = {id + ":" + path};
  c.dest = local;
  c.max_bytes = opts_.max_output;
  core::copy_files(ctx_, c);
  struct stat st {};
  if (::lstat(local.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    fail(path + " is not a regular file");
  std::string data = fs::read_file(local, opts_.max_output + 1);
  json::Value out = json::Value::object();
  out.set("path", path);
  out.set("bytes", static_cast<uint64_t>(data.size()));
  const bool text = valid_utf8(data);
  out.set("encoding", text ? "utf-8" : "base64");
  out.set("content", text ? data : base64::encode(data));
  return text_result(text ? data : base64::encode(data), out);
}

json::Value Toolbox::tool_list() {
  json::Value arr = json::Value::array();
  for (const auto& s : core::list_sandboxes(ctx_)) arr.push_back(core::state_json(ctx_, s));
  json::Value out = json::Value::object();
  out.set("sandboxes", arr);
  return structured_result(out);
}

json::Value Toolbox::tool_pause_resume(const std::string& name, const json::Value& args) {
  const std::string id = sandbox_arg(args);
  store::SandboxState st =
      name == "pause" ? core::pause_sandbox(ctx_, id) : core::resume_sandbox(ctx_, id);
  json::Value out = json::Value::object();
  out.set("id", st.id);
  out.set("status", store::status_name(st.status));
  return structured_result(out);
}

json::Value Toolbox::tool_branch(const json::Value& args) {
  const std::string id = sandbox_arg(args);
  ops::BranchOptions b;
  b.count = static_cast<uint32_t>(int_arg(args, "count", 1, 1, kMaxBranches));
  const bool keep = bool_arg(args, "keep");
  json::Value ids = json::Value::array();
  for (const auto& st : ops::branch_sandbox(ctx_, id, b)) {
    if (!keep) made_.push_back(st.id);
    ids.push_back(st.id);
  }
  json::Value out = json::Value::object();
  out.set("ids", ids);
  out.set("keep", keep);
  return structured_result(out);
}

json::Value Toolbox::tool_destroy(const json::Value& args) {
  const std::string id = sandbox_arg(args);
  core::destroy_sandbox(ctx_, id, /*force=*/false);
  made_.erase(std::remove(made_.begin(), made_.end(), id), made_.end());
  json::Value out = json::Value::object();
  out.set("id", id);
  out.set("destroyed", true);
  return structured_result(out);
}

void Toolbox::end_session() noexcept {
  for (const auto& id : made_) {
    try {
      core::destroy_sandbox(ctx_, id, /*force=*/true);
      log::info("mcp: destroyed sandbox " + id + ", made in this session");
    } catch (const std::exception& e) {
      log::warn("mcp: sandbox " + id + " made in this session: " + e.what());
    }
  }
  made_.clear();
}

}  // namespace space::mcp

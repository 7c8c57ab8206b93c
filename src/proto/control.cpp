// The control protocol's codecs; see control.h. Requests are decoded through one table that maps
// each operation name to the decoder of its struct.
#include "proto/control.h"

#include <array>
#include <cstdint>

#include "proto/rpc.h"
#include "util/error.h"
#include "util/json.h"

namespace space::proto::control {

const char* run_state_name(RunState s) {
  return s == RunState::Paused ? "paused" : "running";
}

namespace {

constexpr const char* kPeer = "the VMM";

RunState run_state_field(const json::Value& o) {
  std::string s = json::string_field(o, "status");
  if (s == "running") return RunState::Running;
  if (s == "paused") return RunState::Paused;
  fail("field \"status\": \"" + s + "\" is neither running nor paused");
}

std::string absolute_field(const json::Value& o, std::string_view key) {
  std::string v = json::string_field(o, key);
  if (v.empty() || v[0] != '/') fail("field \"" + std::string(key) + "\" must be an absolute path");
  return v;
}

int64_t int_field(const json::Value& o, std::string_view key) {
  const json::Value& v = o.at(key);
  if (!v.is_int()) fail("field \"" + std::string(key) + "\" must be an integer");
  return v.as_int();
}

double number_field(const json::Value& o, std::string_view key) {
  const json::Value& v = o.at(key);
  if (!v.is_number()) fail("field \"" + std::string(key) + "\" must be a number");
  return v.as_double();
}

// Request fields: encode (struct -> object) and decode (object -> struct) for each type.
json::Value fields_of(const PingRequest&) {
  return {};
}
json::Value fields_of(const ResumeRequest&) {
  return {};
}
json::Value fields_of(const StopRequest&) {
  return {};
}
json::Value fields_of(const StatsRequest&) {
  return {};
}
json::Value fields_of(const PauseRequest& r) {
  json::Value o = json::Value::object();
  if (r.sync) o.set("sync", true);
  return o;
}
json::Value fields_of(const SnapshotRequest& r) {
  json::Value o = json::Value::object();
  o.set("dir", r.dir);
  if (r.pagemap) o.set("pagemap", true);
  return o;
}
json::Value fields_of(const BranchRequest& r) {
  json::Value list = json::Value::array();
  for (const auto& t : r.targets) {
    json::Value x =
        json::Object{{"id", t.id}, {"dir", t.dir}, {"run_dir", t.run_dir}, {"config", t.config}};
    if (t.image) x.set("image", true);
    if (t.network) x.set("network", true);
    if (t.cgroup_fds) x.set("cgroup_fds", t.cgroup_fds);
    if (t.expires_at) {
      x.set("expires_at", t.expires_at);
      x.set("on_expiry", t.on_expiry);
    }
    list.push_back(std::move(x));
  }
  json::Value o = json::Value::object();
  o.set("targets", std::move(list));
  o.set("resume", r.resume);
  return o;
}

json::Value fields_of(const AdoptRequest& r) {
  json::Value o = json::Value::object();
  o.set("id", r.id);
  if (r.expires_at) {
    o.set("expires_at", r.expires_at);
    o.set("on_expiry", r.on_expiry);
  }
  return o;
}

Request decode_ping(const json::Value& o) {
  rpc::only_fields(o, {});
  return PingRequest{};
}
Request decode_resume(const json::Value& o) {
  rpc::only_fields(o, {});
  return ResumeRequest{};
}
Request decode_stop(const json::Value& o) {
  rpc::only_fields(o, {});
  return StopRequest{};
}
Request decode_stats(const json::Value& o) {
  rpc::only_fields(o, {});
  return StatsRequest{};
}
Request decode_pause(const json::Value& o) {
  rpc::only_fields(o, {"sync"});
  return PauseRequest{rpc::bool_field_or(o, "sync", false)};
}
Request decode_snapshot(const json::Value& o) {
  rpc::only_fields(o, {"dir", "pagemap"});
  return SnapshotRequest{absolute_field(o, "dir"), rpc::bool_field_or(o, "pagemap", false)};
}
Request decode_branch(const json::Value& o) {
  rpc::only_fields(o, {"targets", "resume"});
  const json::Value& list = o.at("targets");
  if (!list.is_array()) fail("field \"targets\" must be an array");
  BranchRequest r;
  for (const auto& t : list.as_array()) {
    if (!t.is_object()) fail("field \"targets\": each target must be an object");
    rpc::only_fields(t, {"id", "dir", "run_dir", "config", "image", "network", "cgroup_fds",
                         "expires_at", "on_expiry"});
    BranchTarget x;
    x.id = json::string_field(t, "id");
    x.dir = absolute_field(t, "dir");
    x.run_dir = absolute_field(t, "run_dir");
    x.config = t.at("config");
    if (!x.config.is_object()) fail("field \"config\" must be an object");
    x.image = rpc::bool_field_or(t, "image", false);
    x.network = rpc::bool_field_or(t, "network", false);
    x.cgroup_fds = static_cast<uint32_t>(json::uint_field_or(t, "cgroup_fds", kMaxCgroupFds, 0));
    x.expires_at = static_cast<int64_t>(json::uint_field_or(t, "expires_at", INT64_MAX, 0));
    x.on_expiry = json::string_field_or(t, "on_expiry", "");
    if (x.expires_at && x.on_expiry != "destroy" && x.on_expiry != "checkpoint")
      fail("field \"on_expiry\" must be destroy or checkpoint");
    r.targets.push_back(std::move(x));
  }
  r.resume = rpc::bool_field_or(o, "resume", false);
  return r;
}

Request decode_adopt(const json::Value& o) {
  rpc::only_fields(o, {"id", "expires_at", "on_expiry"});
  AdoptRequest r;
  r.id = json::string_field(o, "id");
  if (r.id.empty()) fail("field \"id\" must not be empty");
  r.expires_at = static_cast<int64_t>(json::uint_field_or(o, "expires_at", INT64_MAX, 0));
  r.on_expiry = json::string_field_or(o, "on_expiry", "");
  if (r.expires_at && r.on_expiry != "destroy" && r.on_expiry != "checkpoint")
    fail("field \"on_expiry\" must be destroy or checkpoint");
  return r;
}

struct OpEntry {
  std::string_view name;
  Request (*decode)(const json::Value&);
};
// One entry per operation, in the order of the Request variant.
constexpr std::array<OpEntry, std::variant_size_v<Request>> kOps = {{
    {"ping", decode_ping},
    {"pause", decode_pause},
    {"resume", decode_resume},
    {"snapshot", decode_snapshot},
    {"branch", decode_branch},
    {"stop", decode_stop},
    {"stats", decode_stats},
    {"adopt", decode_adopt},
}};

json::Value ms_object(const std::vector<std::pair<std::string, double>>& ms) {
  json::Value o = json::Value::object();
  for (const auto& [k, v] : ms) o.set(k, v);
  return o;
}

}  // namespace

std::string_view op_name(const Request& r) {
  return kOps[r.index()].name;
}

std::string encode_request(const Request& r) {
  return rpc::request_line(op_name(r), std::visit([](const auto& x) { return fields_of(x); }, r));
}

Request decode_request(std::string_view line) {
  json::Value o = json::parse(line);
  std::string op = rpc::op_of(o);
  for (const auto& e : kOps) {
    if (e.name != op) continue;
    try {
      return e.decode(o);
    } catch (Error& err) {
      err.add_context("control request \"" + op + "\"");
      throw;
    }
  }
  fail("unknown control operation \"" + op + "\"");
}

std::string encode_reply(const PingReply& r) {
  json::Value o = json::Value::object();
  o.set("status", run_state_name(r.status));
  o.set("pid", r.pid);
  return rpc::ok_line(std::move(o));
}

std::string encode_reply(const PauseReply& r) {
  json::Value o = json::Value::object();
  o.set("status", run_state_name(r.status));
  o.set("pause_us", r.pause_us);
  return rpc::ok_line(std::move(o));
}

std::string encode_reply(const ResumeReply& r) {
  json::Value o = json::Value::object();
  o.set("status", run_state_name(r.status));
  o.set("resume_us", r.resume_us);
  return rpc::ok_line(std::move(o));
}

std::string encode_reply(const SnapshotReply& r) {
  json::Value o = json::Object{{"status", run_state_name(r.status)},
                               {"vmstate_bytes", r.vmstate_bytes},
                               {"memory_bytes", r.memory_bytes},
                               {"memory_data_bytes", r.memory_data_bytes},
                               {"memory_diff", r.memory_diff},
                               {"pause_us", r.pause_us},
                               {"ms", ms_object(r.ms)}};
  return rpc::ok_line(std::move(o));
}

std::string encode_reply(const BranchReply& r) {
  json::Value o = json::Value::object();
  o.set("status", run_state_name(r.status));
  json::Value list = json::Value::array();
  for (const auto& b : r.branches) {
    json::Value x = json::Value::object();
    x.set("id", b.id);
    x.set("pid", b.pid);
    list.push_back(std::move(x));
  }
  o.set("branches", std::move(list));
  o.set("resumed", r.resumed);
  o.set("ms", ms_object({{"capture", r.capture_ms}, {"fork", r.fork_ms}, {"ready", r.ready_ms}}));
  return rpc::ok_line(std::move(o));
}

std::string encode_reply(const StopReply&) {
  return rpc::ok_line({});
}

std::string encode_reply(const StatsReply& r) {
  json::Value o = json::Object{
      {"status", run_state_name(r.status)},       {"guest_clock_ns", r.guest_clock_ns},
      {"running_since_ms", r.running_since_ms},   {"host_connections", r.host_connections},
      {"guest_connections", r.guest_connections}, {"vcpus", r.vcpus}};
  return rpc::ok_line(std::move(o));
}

std::string encode_reply(const AdoptReply& r) {
  json::Value o = json::Value::object();
  o.set("pid", r.pid);
  return rpc::ok_line(std::move(o));
}

template <>
PingReply decode_reply<PingReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "ping", [](const json::Value& o) {
    return PingReply{run_state_field(o), int_field(o, "pid")};
  });
}

template <>
PauseReply decode_reply<PauseReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "pause", [](const json::Value& o) {
    return PauseReply{run_state_field(o), int_field(o, "pause_us")};
  });
}

template <>
ResumeReply decode_reply<ResumeReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "resume", [](const json::Value& o) {
    return ResumeReply{run_state_field(o), int_field(o, "resume_us")};
  });
}

template <>
SnapshotReply decode_reply<SnapshotReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "snapshot", [](const json::Value& o) {
    SnapshotReply r;
    r.status = run_state_field(o);
    r.vmstate_bytes = json::uint_field(o, "vmstate_bytes");
    r.memory_bytes = json::uint_field(o, "memory_bytes");
    r.memory_data_bytes = json::uint_field(o, "memory_data_bytes");
    r.memory_diff = rpc::bool_field_or(o, "memory_diff", false);
    r.pause_us = int_field(o, "pause_us");
    const json::Value& ms = o.at("ms");
    if (!ms.is_object()) fail("field \"ms\" must be an object");
    for (const auto& [k, v] : ms.as_object()) r.ms.emplace_back(k, number_field(ms, k));
    return r;
  });
}

template <>
BranchReply decode_reply<BranchReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "branch", [](const json::Value& o) {
    BranchReply r;
    r.status = run_state_field(o);
    const json::Value& list = o.at("branches");
    if (!list.is_array()) fail("field \"branches\" must be an array");
    for (const auto& b : list.as_array())
      r.branches.push_back({json::string_field(b, "id"), int_field(b, "pid")});
    r.resumed = rpc::bool_field_or(o, "resumed", false);
    const json::Value& ms = o.at("ms");
    r.capture_ms = number_field(ms, "capture");
    r.fork_ms = number_field(ms, "fork");
    r.ready_ms = number_field(ms, "ready");
    return r;
  });
}

template <>
StatsReply decode_reply<StatsReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "stats", [](const json::Value& o) {
    StatsReply r;
    r.status = run_state_field(o);
    r.guest_clock_ns = json::uint_field(o, "guest_clock_ns");
    r.running_since_ms = int_field(o, "running_since_ms");
    r.host_connections = json::uint_field(o, "host_connections");
    r.guest_connections = json::uint_field(o, "guest_connections");
    r.vcpus = static_cast<uint32_t>(json::uint_field_or(o, "vcpus", 1024, 0));
    return r;
  });
}

template <>
StopReply decode_reply<StopReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "stop", [](const json::Value&) { return StopReply{}; });
}

template <>
AdoptReply decode_reply<AdoptReply>(std::string_view line) {
  return rpc::open_reply_as(line, kPeer, "adopt",
                            [](const json::Value& o) { return AdoptReply{int_field(o, "pid")}; });
}

}  // namespace space::proto::control

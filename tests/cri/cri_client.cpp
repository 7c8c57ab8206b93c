// cri-client: a small CRI v1 client, generated at build time from the CRI's own api.proto
// (scripts/cri-api.sh), that speaks to a container runtime's CRI socket as the kubelet does. The
// integration test tests/integration/89_cri.sh drives containerd's CRI plugin with it, through
// a RuntimeClass handler whose runtime is space-oci. One call per invocation, crictl-like:
//   cri-client -s SOCKET version
//   cri-client -s SOCKET runp [POD FLAGS]                 prints the pod sandbox's id
//   cri-client -s SOCKET pull IMAGE                       prints the image's reference
//   cri-client -s SOCKET create POD IMAGE NAME [POD FLAGS] [CONTAINER FLAGS] -- CMD...
//                                                         prints the container's id
//   cri-client -s SOCKET start|status|rm ID
//   cri-client -s SOCKET stop ID [--timeout S]
//   cri-client -s SOCKET exec ID [--timeout S] -- CMD...  prints its stdout; its stderr to
//                                                         stderr; exits with its exit code
//   cri-client -s SOCKET stopp|rmp|podstatus POD
//   cri-client -s SOCKET pods|ps
// POD FLAGS: --handler H, --name N (default "pod"), --namespace NS, --uid U, --log-dir DIR,
// --host-network, --annotation K=V. CONTAINER FLAGS: --log-path P (relative to the pod's log
// directory), --cpu-quota US, --cpu-period US, --memory BYTES, --cannotation K=V.
// Replies print as JSON (protobuf's mapping). Every call has a deadline of two minutes. A failed
// call prints "cri-client: <code>: <message>" on stderr and exits 1; a usage error exits 2.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "api.grpc.pb.h"

namespace {

namespace v1 = runtime::v1;

constexpr int kDeadlineSeconds = 120;  // per call; an ExecSync's own timeout is shorter

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "cri-client: %s\n", why.c_str());
  std::exit(2);
}

void check(const grpc::Status& s, const char* call) {
  if (s.ok()) return;
  std::fprintf(stderr, "cri-client: %s: %d: %s\n", call, int(s.error_code()),
               s.error_message().c_str());
  std::exit(1);
}

void print(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = false;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;  // SANDBOX_READY and exit code 0 are defaults
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  std::printf("%s\n", out.c_str());
}

// The arguments after the call's name: flags with values, and the command after "--".
struct Args {
  std::vector<std::string> positional, command;
  std::vector<std::pair<std::string, std::string>> flags;
  bool host_network = false;
  std::string flag(const std::string& name, const std::string& fallback = "") const {
    for (const auto& [k, v] : flags)
      if (k == name) return v;
    return fallback;
  }
  std::vector<std::string> all(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : flags)
      if (k == name) out.push_back(v);
    return out;
  }
};

Args parse(int argc, char** argv, int from) {
  Args a;
  for (int i = from; i < argc; i++) {
    std::string s = argv[i];
    if (s == "--") {
      for (i++; i < argc; i++) a.command.push_back(argv[i]);
      break;
    }
    if (s == "--host-network") {
      a.host_network = true;
    } else if (s.rfind("--", 0) == 0) {
      if (i + 1 >= argc) usage(s + " needs a value");
      a.flags.emplace_back(s, argv[++i]);
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

void add_annotations(google::protobuf::Map<std::string, std::string>* to,
                     const std::vector<std::string>& specs) {
  for (const auto& kv : specs) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) usage("an annotation is KEY=VALUE: " + kv);
    (*to)[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
}

v1::PodSandboxConfig pod_config(const Args& a) {
  v1::PodSandboxConfig c;
  c.mutable_metadata()->set_name(a.flag("--name", "pod"));
  c.mutable_metadata()->set_namespace_(a.flag("--namespace", "default"));
  c.mutable_metadata()->set_uid(a.flag("--uid", "uid-" + a.flag("--name", "pod")));
  c.set_log_directory(a.flag("--log-dir"));
  add_annotations(c.mutable_annotations(), a.all("--annotation"));
  c.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(
      a.host_network ? v1::NamespaceMode::NODE : v1::NamespaceMode::POD);
  return c;
}

int64_t number(const Args& a, const std::string& flag, int64_t fallback) {
  std::string v = a.flag(flag);
  if (v.empty()) return fallback;
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (!end || *end) usage(flag + " takes a number, not " + v);
  return n;
}

std::string need(const Args& a, size_t i, const char* what) {
  if (a.positional.size() <= i) usage(std::string("missing ") + what);
  return a.positional[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[1], "-s") != 0) usage("usage: cri-client -s SOCKET CALL ...");
  auto channel =
      grpc::CreateChannel(std::string("unix://") + argv[2], grpc::InsecureChannelCredentials());
  auto rt = v1::RuntimeService::NewStub(channel);
  auto img = v1::ImageService::NewStub(channel);
  const std::string call = argv[3];
  const Args a = parse(argc, argv, 4);
  grpc::ClientContext ctx;
  // No call waits for ever: a runtime that hangs fails the call (DEADLINE_EXCEEDED) instead.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(kDeadlineSeconds));
  if (call == "version") {
    v1::VersionRequest req;
    v1::VersionResponse r;
    check(rt->Version(&ctx, req, &r), "Version");
    print(r);
  } else if (call == "runp") {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = pod_config(a);
    req.set_runtime_handler(a.flag("--handler"));
    v1::RunPodSandboxResponse r;
    check(rt->RunPodSandbox(&ctx, req, &r), "RunPodSandbox");
    std::printf("%s\n", r.pod_sandbox_id().c_str());
  } else if (call == "pull") {
    v1::PullImageRequest req;
    req.mutable_image()->set_image(need(a, 0, "IMAGE"));
    v1::PullImageResponse r;
    check(img->PullImage(&ctx, req, &r), "PullImage");
    std::printf("%s\n", r.image_ref().c_str());
  } else if (call == "create") {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(need(a, 0, "POD"));
    *req.mutable_sandbox_config() = pod_config(a);
    v1::ContainerConfig* c = req.mutable_config();
    c->mutable_image()->set_image(need(a, 1, "IMAGE"));
    c->mutable_metadata()->set_name(need(a, 2, "NAME"));
    for (const auto& s : a.command) c->add_command(s);
    c->set_log_path(a.flag("--log-path"));
    add_annotations(c->mutable_annotations(), a.all("--cannotation"));
    auto* res = c->mutable_linux()->mutable_resources();
    res->set_cpu_quota(number(a, "--cpu-quota", 0));
    res->set_cpu_period(number(a, "--cpu-period", 0));
    res->set_memory_limit_in_bytes(number(a, "--memory", 0));
    v1::CreateContainerResponse r;
    check(rt->CreateContainer(&ctx, req, &r), "CreateContainer");
    std::printf("%s\n", r.container_id().c_str());
  } else if (call == "start") {
    v1::StartContainerRequest req;
    req.set_container_id(need(a, 0, "ID"));
    v1::StartContainerResponse r;
    check(rt->StartContainer(&ctx, req, &r), "StartContainer");
  } else if (call == "status") {
    v1::ContainerStatusRequest req;
    req.set_container_id(need(a, 0, "ID"));
    v1::ContainerStatusResponse r;
    check(rt->ContainerStatus(&ctx, req, &r), "ContainerStatus");
    print(r.status());
  } else if (call == "exec") {
    v1::ExecSyncRequest req;
    req.set_container_id(need(a, 0, "ID"));
    for (const auto& s : a.command) req.add_cmd(s);
    req.set_timeout(number(a, "--timeout", 0));
    v1::ExecSyncResponse r;
    check(rt->ExecSync(&ctx, req, &r), "ExecSync");
    std::fwrite(r.stdout().data(), 1, r.stdout().size(), stdout);
    std::fwrite(r.stderr().data(), 1, r.stderr().size(), stderr);
    return r.exit_code();
  } else if (call == "stop") {
    v1::StopContainerRequest req;
    req.set_container_id(need(a, 0, "ID"));
    req.set_timeout(number(a, "--timeout", 0));
    v1::StopContainerResponse r;
    check(rt->StopContainer(&ctx, req, &r), "StopContainer");
  } else if (call == "rm") {
    v1::RemoveContainerRequest req;
    req.set_container_id(need(a, 0, "ID"));
    v1::RemoveContainerResponse r;
    check(rt->RemoveContainer(&ctx, req, &r), "RemoveContainer");
  } else if (call == "stopp") {
    v1::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(need(a, 0, "POD"));
    v1::StopPodSandboxResponse r;
    check(rt->StopPodSandbox(&ctx, req, &r), "StopPodSandbox");
  } else if (call == "rmp") {
    v1::RemovePodSandboxRequest req;
    req.set_pod_sandbox_id(need(a, 0, "POD"));
    v1::RemovePodSandboxResponse r;
    check(rt->RemovePodSandbox(&ctx, req, &r), "RemovePodSandbox");
  } else if (call == "podstatus") {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(need(a, 0, "POD"));
    v1::PodSandboxStatusResponse r;
    check(rt->PodSandboxStatus(&ctx, req, &r), "PodSandboxStatus");
    print(r.status());
  } else if (call == "pods") {
    v1::ListPodSandboxRequest req;
    v1::ListPodSandboxResponse r;
    check(rt->ListPodSandbox(&ctx, req, &r), "ListPodSandbox");
    print(r);
  } else if (call == "ps") {
    v1::ListContainersRequest req;
    v1::ListContainersResponse r;
    check(rt->ListContainers(&ctx, req, &r), "ListContainers");
    print(r);
  } else {
    usage("unknown call " + call);
  }
  return 0;
}

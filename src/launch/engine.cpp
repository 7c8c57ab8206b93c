// The engine seam: choosing an engine and failing closed; see engine.h.
#include "launch/engine.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "gvisor/runsc.h"
#include "store/config.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/process.h"
#include "vmm/kvm.h"

namespace space::launch {

const char* engine_name(Engine e) {
  return e == Engine::Gvisor ? "gvisor" : "vm";
}

std::optional<Engine> parse_engine(std::string_view name) {
  if (name == "vm") return Engine::Vm;
  if (name == "gvisor") return Engine::Gvisor;
  return std::nullopt;
}

EngineChoice choose_engine(const std::string& flag, const store::HostConfig& hc) {
  auto pick = [](const std::string& name, const std::string& source) {
    auto e = parse_engine(name);
    if (!e)
      fail(source + " names engine \"" + name + "\"",
           "the engines are vm (KVM microVMs) and gvisor");
    return EngineChoice{*e, source};
  };
  if (!flag.empty()) return pick(flag, "--engine");
  if (const char* env = std::getenv("SPACE_ENGINE"); env && *env) return pick(env, "SPACE_ENGINE");
  if (!hc.engine_default.empty()) return pick(hc.engine_default, "config.toml [engine] default");
  return EngineChoice{Engine::Vm, "the built-in default"};
}

EngineStatus probe_vm_engine(const std::string& kvm_device) {
  EngineStatus s{Engine::Vm, false, ""};
  try {
    vmm::Kvm kvm(kvm_device);  // opens it and checks KVM's API version
  } catch (const Error& e) {
    s.detail = e.what();
    if (e.err() == ENOENT && ::access("/sys/module/kvm_pvm", F_OK) == 0)
      s.detail += " (this kernel is itself a PVM guest: 'dmesg | grep kvm-pvm' says why)";
    return s;
  }
  s.usable = true;
  s.detail = kvm_device;  // (no /proc/cpuinfo read for the host's kind: this is on create's path)
  return s;
}

std::string runsc_binary(const store::HostConfig& hc) {
  if (!hc.gvisor_runsc.empty()) return hc.gvisor_runsc;
  return proc::find_program("runsc");
}

namespace {

// `runsc --version` costs about 45 ms (a Go program's start), too much for every create: the
// answer is kept in $SPACE_CACHE/runsc-version (the cache of artefacts keyed by their inputs)
// under the binary's path, inode, size and modification time, and asked again when any of them
// changes (an upgrade). Nothing is kept when the cache directory does not exist, or a write
// fails; a sandbox's run directory, which must hold only its own, never holds it.
std::string runsc_version_cached(const std::string& bin) {
  struct stat st {};
  if (::stat(bin.c_str(), &st) != 0) return "";
  const std::string key = bin + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_size) +
                          " " + std::to_string(st.st_mtim.tv_sec) + "." +
                          std::to_string(st.st_mtim.tv_nsec);
  const std::string base = store::cache_dir();
  const std::string cache = base + "/runsc-version";
  try {
    std::string text = fs::read_file(cache, 4096);
    size_t nl = text.find('\n');
    if (nl != std::string::npos && text.substr(0, nl) == key) {
      std::string version = text.substr(nl + 1);
      if (!version.empty() && version.back() == '\n') version.pop_back();
      if (!version.empty()) return version;
    }
  } catch (const Error&) {
  }
  std::string version = gvisor::runsc_version(bin);
  if (!version.empty() && fs::is_dir(base)) {
    try {
      fs::write_file_atomic(cache, key + "\n" + version + "\n", 0600, fs::Sync::Volatile);
    } catch (const Error&) {
    }
  }
  return version;
}

}  // namespace

EngineStatus probe_gvisor_engine(const store::HostConfig& hc) {
  EngineStatus s{Engine::Gvisor, false, ""};
  std::string bin = runsc_binary(hc);
  if (bin.empty()) {
    s.detail = "runsc is not installed";
    return s;
  }
  std::string version = runsc_version_cached(bin);
  if (version.empty()) {
    s.detail = bin + " does not run (" + bin + " --version failed)";
    return s;
  }
  int release = gvisor::runsc_release(version);
  if (release < gvisor::kMinRunscRelease) {
    s.detail = bin + " is " + version + ", older than " + std::to_string(gvisor::kMinRunscRelease) +
               " (Debian 12's own runsc has no systrap platform)";
    return s;
  }
  s.usable = true;
  s.detail = bin + ": " + version;
  return s;
}

EngineStatus probe_engine(Engine e, const store::HostConfig& hc) {
  return e == Engine::Gvisor ? probe_gvisor_engine(hc) : probe_vm_engine();
}

void require_usable(const EngineChoice& choice, const EngineStatus& status) {
  if (status.usable) return;
  const std::string name = engine_name(choice.engine);
  std::string hint;
  if (choice.engine == Engine::Vm)
    hint =
        "run on a host with /dev/kvm, or choose the gvisor engine (--engine gvisor, "
        "SPACE_ENGINE=gvisor or config.toml [engine] default = \"gvisor\"; runsc from "
        "bookworm-backports): gVisor is a user-space kernel, a weaker boundary than a VM's "
        "hardware one";
  else
    hint =
        "install runsc (apt-get install -t bookworm-backports runsc), or choose the vm engine "
        "(--engine vm) on a host with /dev/kvm";
  throw Error("the " + name + " engine (chosen by " + choice.source +
                  ") cannot run on this host: " + status.detail,
              ENODEV, hint);
}

EngineChoice engine_for_new_sandbox(const std::string& flag, const store::HostConfig& hc) {
  EngineChoice c = choose_engine(flag, hc);
  require_usable(c, probe_engine(c.engine, hc));
  return c;
}

}  // namespace space::launch

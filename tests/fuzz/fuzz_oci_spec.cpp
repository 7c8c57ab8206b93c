// libFuzzer harness for oci/spec.h: a bundle's config.json is the input a pod's author (or an
// engine) controls, parsed as root by space-oci create. Every input must be refused with a
// space::Error or accepted, never crash (ASan, UBSan); an accepted spec's mount destinations must
// be what staging relies on (oci/mount_stage.h): absolute, cleaned ("/" or "/a/b", no empty or
// "." component) and without a ".." component, and a relative bind source must have been made
// absolute against the bundle (__builtin_trap otherwise).
// Built with clang++ -fsanitize=fuzzer,address,undefined when clang is found (CMakeLists.txt);
// ctest runs it for a fixed number of inputs.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oci/spec.h"
#include "util/error.h"

namespace {

// A bundle directory with a rootfs, made once and removed at exit: parse_spec checks that root.path
// is a directory.
const std::string& bundle() {
  // Never destroyed, so that the exit handler below can still read it.
  static const std::string* dir = [] {
    auto* d = new std::string("/tmp/space-fuzz-oci-XXXXXX");
    if (!::mkdtemp(d->data())) __builtin_trap();
    if (::mkdir((*d + "/rootfs").c_str(), 0755) != 0) __builtin_trap();
    std::atexit([] {  // removed when the run ends: two empty directories
      ::rmdir((bundle() + "/rootfs").c_str());
      ::rmdir(bundle().c_str());
    });
    return d;
  }();
  return *dir;
}

bool clean_absolute(std::string_view d) {
  if (d == "/") return true;
  if (d.empty() || d.front() != '/' || d.back() == '/') return false;
  for (size_t i = 1; i <= d.size();) {
    size_t j = d.find('/', i);
    if (j == std::string_view::npos) j = d.size();
    std::string_view c = d.substr(i, j - i);
    if (c.empty() || c == "." || c == "..") return false;
    i = j + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  space::oci::Spec s;
  try {
    s = space::oci::parse_spec(text, bundle());
  } catch (const space::Error&) {
    return 0;
  }
  for (const auto& m : s.mounts) {
    if (!clean_absolute(m.destination)) __builtin_trap();
    if (m.is_bind() && !m.source.empty() && m.source.front() != '/') __builtin_trap();
  }
  if (s.process.args.empty()) __builtin_trap();
  return 0;
}

// Unit tests for util/secret_memory: protect_process_memory() in a forked child leaves it not
// dumpable with RLIMIT_CORE 0; a SecretString's bytes, short ones included, sit in pages of
// their own that /proc/self/smaps flags "dd" (not dumped) and, with the right to lock, "lo";
// without it (no CAP_IPC_LOCK, RLIMIT_MEMLOCK 0) still "dd", and no error.
#include <doctest/doctest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "support/forked.h"
#include "util/base64.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/secret_memory.h"
#include "util/wipe.h"

using namespace space;

namespace {

// The mapping of this process that holds `p`: "START-END VMFLAGS" from /proc/self/smaps, or "".
std::string mapping_of(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string smaps = fs::read_file("/proc/self/smaps", 256u << 20);
  bool inside = false;
  std::string range;
  size_t pos = 0;
  while (pos < smaps.size()) {
    size_t nl = smaps.find('\n', pos);
    if (nl == std::string::npos) nl = smaps.size();
    std::string line = smaps.substr(pos, nl - pos);
    pos = nl + 1;
    unsigned long lo = 0, hi = 0;
    if (line.find(':') > line.find(' ') &&
        std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) {  // a mapping's header line
      inside = at >= lo && at < hi;
      range = line.substr(0, line.find(' '));
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return range + line.substr(8);
    }
  }
  return "";
}

bool has_flag(const std::string& mapping, const std::string& flag) {
  return (mapping + " ").find(" " + flag + " ") != std::string::npos;
}

// Drops CAP_IPC_LOCK from this process's effective set (a forked child's), so that
// RLIMIT_MEMLOCK applies to it.
void drop_ipc_lock() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  REQUIRE(::syscall(SYS_capget, &hdr, data) == 0);
  data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
  REQUIRE(::syscall(SYS_capset, &hdr, data) == 0);
}

}  // namespace

TEST_CASE("protect_process_memory: not dumpable, and no core file") {
  std::string got = test::output_of_child([] {
    try {
      protect_process_memory();
    } catch (const std::exception& e) {
      return std::string("threw: ") + e.what();
    }
    rlimit core{};
    ::getrlimit(RLIMIT_CORE, &core);
    return "dumpable=" + std::to_string(::prctl(PR_GET_DUMPABLE)) +
           " core=" + std::to_string(core.rlim_cur) + "/" + std::to_string(core.rlim_max);
  });
  CHECK(got == "dumpable=0 core=0/0");
}

TEST_CASE("SecretString: its bytes in pages of their own, not dumped, locked") {
  const std::string value = "s3cr3t-VALUE-0123456789";
  SecretString a(value);
  CHECK(a.view() == value);
  std::string m = mapping_of(a.bytes.data());
  CAPTURE(m);
  CHECK(has_flag(m, "dd"));
  if (::geteuid() == 0) CHECK(has_flag(m, "lo"));  // root may lock past RLIMIT_MEMLOCK
  CHECK(reinterpret_cast<uintptr_t>(a.bytes.data()) % uintptr_t(::sysconf(_SC_PAGESIZE)) == 0);
  // Short values too: not in the object (the short string optimisation), whichever way in.
  SecretString shorts[] = {SecretString(std::string_view("abc")), SecretString(std::string("abc")),
                           SecretString(SecretBytes("abc")), SecretString::reserved(0)};
  append_wiped(shorts[3].bytes, "abc");
  for (const auto& s : shorts) {
    CHECK(s.view() == "abc");
    CHECK(has_flag(mapping_of(s.bytes.data()), "dd"));
  }
  json::SecretMembers found{{"v"}, {}};
  json::parse(R"({"v":"pw"})", {.secrets = &found});
  REQUIRE(found.found.size() == 1);
  CHECK(has_flag(mapping_of(found.found[0].bytes.data()), "dd"));
  SecretString decoded = SecretString::reserved(3);
  CHECK(base64::decode_into(decoded.bytes, "YWJj"));
  CHECK(decoded.view() == "abc");
  CHECK(has_flag(mapping_of(decoded.bytes.data()), "dd"));
  CHECK_FALSE(base64::decode_into(decoded.bytes, "YW=j"));
  CHECK(decoded.view() == "abc");  // as it was
  // A vector of secret bytes, as the credential helper's queued replies are.
  std::vector<uint8_t, SecretAllocator<uint8_t>> v(100, 7);
  CHECK(has_flag(mapping_of(v.data()), "dd"));
}

TEST_CASE("secret memory without the right to lock: still not dumped, and no error") {
  std::string got = test::output_of_child([] {
    drop_ipc_lock();
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_MEMLOCK, &none);
    try {
      SecretString s("a value that cannot be locked");
      return mapping_of(s.bytes.data());
    } catch (const std::exception& e) {
      return std::string("threw: ") + e.what();
    }
  });
  CAPTURE(got);
  CHECK(has_flag(got, "dd"));
  CHECK_FALSE(has_flag(got, "lo"));
}

// libFuzzer harness for guest-init/passwd.h, which parses an image's /etc/passwd and /etc/group
// (files the image's author controls) to resolve `-u USER[:GROUP]` and an image's User. The input
// is split at its first two NUL bytes into passwd text, group text and the user spec. The lookups
// must never read out of bounds (ASan, UBSan) or throw; a resolved name must be one that the
// passwd text holds with the uid returned (__builtin_trap otherwise).
// Built with clang++ -fsanitize=fuzzer,address,undefined when clang is found (CMakeLists.txt);
// ctest runs it for a fixed number of inputs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "guest-init/passwd.h"

using namespace space::guest;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t a = in.find('\0');
  std::string_view passwd = in.substr(0, a);
  std::string_view rest = a == std::string_view::npos ? std::string_view() : in.substr(a + 1);
  size_t b = rest.find('\0');
  std::string_view group = rest.substr(0, b);
  std::string_view spec = b == std::string_view::npos ? std::string_view() : rest.substr(b + 1);

  ResolvedUser r = resolve_user(spec, passwd, group);
  std::string_view user = spec.substr(0, spec.find(':'));
  if (r.error.empty() && !parse_id(user)) {
    if (!r.pw || r.pw->name != user || r.pw->uid != r.uid) __builtin_trap();
    auto again = find_passwd_name(passwd, user);
    if (!again || again->uid != r.uid) __builtin_trap();
  }
  if (auto u = find_passwd_uid(passwd, r.uid); u && u->uid != r.uid) __builtin_trap();
  (void)find_group_gid(group, spec);
  return 0;
}

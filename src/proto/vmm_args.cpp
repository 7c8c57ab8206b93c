// The VMM's launch arguments; see vmm_args.h. Each flag is listed once, in kFlags, with the
// member it fills: the encoder writes the members that differ from their defaults in that order,
// and the decoder reads them back through the same list.
#include "proto/vmm_args.h"

#include <charconv>
#include <string>
#include <type_traits>
#include <variant>

#include "proto/wire.h"

namespace space::proto {

namespace {

// One flag and its member; a member pointer of each kind of value the contract has.
struct Flag {
  const char* name;
  std::variant<std::string VmmArgs::*, int VmmArgs::*, uid_t VmmArgs::*, int64_t VmmArgs::*,
               bool VmmArgs::*>
      member;
};

const Flag kFlags[] = {
    {"--ready-fd", &VmmArgs::ready_fd},
    {"--restore", &VmmArgs::restore_dir},
    {"--shared-memory", &VmmArgs::shared_memory_dir},
    {"--dir", &VmmArgs::dir},
    {"--run-dir", &VmmArgs::run_dir},
    {"--jail-uid", &VmmArgs::jail_uid},
    {"--jail-netns-fd", &VmmArgs::jail_netns_fd},
    {"--jail-mntns-fd", &VmmArgs::jail_mntns_fd},
    {"--jail-placed-fd", &VmmArgs::jail_placed_fd},
    {"--expires-at", &VmmArgs::expires_at},
    {"--on-expiry", &VmmArgs::on_expiry},
    {"--probe", &VmmArgs::probe},
};

// A flag's value: every number of the contract (an fd, a uid, a Unix time) is 0 or more.
template <typename T>
T number(const std::string& flag, const std::string& v) {
  T n{};
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < T{})
    throw ProtoError("__vmm: " + flag + ": '" + v + "' is not a valid number");
  return n;
}

}  // namespace

std::vector<std::string> encode_vmm_args(const VmmArgs& a) {
  static const VmmArgs defaults;
  std::vector<std::string> out{a.id};
  for (const Flag& f : kFlags) {
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(a.*m)>;
          if (a.*m == defaults.*m) return;
          out.emplace_back(f.name);
          if constexpr (std::is_same_v<T, std::string>)
            out.push_back(a.*m);
          else if constexpr (!std::is_same_v<T, bool>)
            out.push_back(std::to_string(a.*m));
        },
        f.member);
  }
  return out;
}

VmmArgs decode_vmm_args(const std::vector<std::string>& args) {
  VmmArgs a;
  if (args.empty() || args[0].empty() || args[0][0] == '-')
    throw ProtoError("__vmm: the first argument must be the sandbox's id");
  a.id = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& name = args[i];
    const Flag* flag = nullptr;
    for (const Flag& f : kFlags)
      if (name == f.name) flag = &f;
    if (!flag) throw ProtoError("__vmm: unknown argument '" + name + "'");
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(a.*m)>;
          if constexpr (std::is_same_v<T, bool>) {
            a.*m = true;
            return;
          } else {
            if (i + 1 >= args.size()) throw ProtoError("__vmm: " + name + " needs a value");
            const std::string& v = args[++i];
            if constexpr (std::is_same_v<T, std::string>)
              a.*m = v;
            else
              a.*m = number<T>(name, v);
          }
        },
        flag->member);
  }
  if (a.dir.empty() != a.run_dir.empty())
    throw ProtoError("__vmm: --dir and --run-dir go together");
  if (a.probe && a.dir.empty()) throw ProtoError("__vmm: --probe needs --dir");
  if (!a.on_expiry.empty() && !a.expires_at)
    throw ProtoError("__vmm: --on-expiry needs --expires-at");
  if (!a.shared_memory_dir.empty() && a.restore_dir.empty())
    throw ProtoError("__vmm: --shared-memory needs --restore");
  return a;
}

}  // namespace space::proto

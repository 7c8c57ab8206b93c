// libFuzzer harness for the decoders of files space reads back, which a crash, a full disk, a
// careless operator or a hostile image can leave in any state: the vmstate snapshot decoder,
// config.toml, state.json, config.json (the VM's), grants.json, an OCI image config, and the
// egress rule parser. The first byte picks the decoder; the rest is the file. Rules: a decoder
// either succeeds or throws space::Error (anything else escaping is a bug), and what it accepts
// survives a round trip unchanged: a snapshot re-encodes to the very bytes it came from, a JSON
// record re-serialised and re-read serialises the same, a rule's canonical text parses back to
// itself. Any broken rule is __builtin_trap; ASan and UBSan catch the rest.
// Built with clang++ -fsanitize=fuzzer,address,undefined when clang is found (CMakeLists.txt);
// ctest runs it for a fixed number of inputs.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>

#include "cred/grants.h"
#include "egress/policy.h"
#include "store/config.h"
#include "store/oci.h"
#include "store/state.h"
#include "store/vm_config.h"
#include "util/error.h"
#include "util/json.h"
#include "vmm/snapshot.h"

using namespace space;

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// A JSON record read, written and read again must write the same the second time.
template <typename From, typename To>
void json_round_trip(std::string_view text, From from, To to) {
  json::Value v = json::parse(text);
  auto once = json::serialize(to(from(v)));
  auto twice = json::serialize(to(from(json::parse(once))));
  require(once == twice);
}

void one(uint8_t kind, std::string_view text) {
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  switch (kind % 7) {
    case 0: {
      auto s = vmm::snapshot::decode(bytes, "fuzz");
      auto again = vmm::snapshot::encode(s);
      require(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
      break;
    }
    case 1:
      store::parse_host_config(text, "fuzz");
      break;
    case 2:
      json_round_trip(text, store::state_from_json, store::state_to_json);
      break;
    case 3:
      json_round_trip(text, store::vm_config_from_json, store::vm_config_to_json);
      break;
    case 4:
      json_round_trip(
          text, [](const json::Value& v) { return cred::GrantTable::from_json(v); },
          [](const cred::GrantTable& t) { return t.to_json(); });
      break;
    case 5:
      store::parse_image_config(json::parse(text));
      break;
    default:
      for (const auto& r : egress::parse_rules(text)) {
        std::string c = egress::canonical(r);
        require(egress::canonical(egress::parse_rule(c)) == c);
      }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    one(data[0], text);
  } catch (const Error&) {
    // refused, with a message: what a decoder should do with a bad file
  } catch (const std::exception&) {
    __builtin_trap();  // anything else escaping is a bug
  }
  return 0;
}

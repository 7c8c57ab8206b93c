// libFuzzer harness for the host's line protocols (src/proto/control, src/proto/credd on the
// envelope of src/proto/rpc, and the JSON parser under them): arbitrary bytes go to each
// protocol's request decoder, to the decoder of every reply type, to rpc::open_reply, and to
// json::parse with and without a json::SecretMembers for "value_base64". The decoders must only
// ever return or throw space::Error: ASan and UBSan catch anything else, and any other exception
// escapes to libFuzzer. Input that is not JSON stops after the parser (the typed decoders would
// all fail in the same json::parse call), which makes a run several times faster. A request that
// decodes is re-encoded with its protocol's encode_request and must decode again, to the same
// alternative (__builtin_trap otherwise).
// Built with clang++ -fsanitize=fuzzer,address,undefined when clang is found (CMakeLists.txt);
// ctest runs it for a fixed number of inputs from the seeds in tests/fuzz/corpus/lines.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proto/control.h"
#include "proto/credd.h"
#include "proto/rpc.h"
#include "util/error.h"
#include "util/json.h"

using namespace space;
using namespace space::proto;

namespace {

template <class F>
void expect_error_only(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

template <class... Ts>
void control_replies(std::string_view line) {
  (expect_error_only([&] { (void)control::decode_reply<Ts>(line); }), ...);
}

template <class... Ts>
void credd_replies(std::string_view line) {
  (expect_error_only([&] { (void)credd::decode_reply<Ts>(line); }), ...);
}

void control_request(std::string_view line) {
  control::Request req;
  try {
    req = control::decode_request(line);
  } catch (const Error&) {
    return;
  }
  try {
    if (control::decode_request(control::encode_request(req)).index() != req.index())
      __builtin_trap();
  } catch (const Error&) {
    __builtin_trap();  // its own encoding must decode
  }
}

void credd_request(std::string_view line) {
  credd::Request req;
  try {
    req = credd::decode_request(line);
  } catch (const Error&) {
    return;
  }
  try {
    SecretString again = credd::encode_request(req);
    if (credd::decode_request(again.bytes).index() != req.index()) __builtin_trap();
  } catch (const Error&) {
    __builtin_trap();  // its own encoding must decode
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);

  expect_error_only([&] { (void)rpc::open_reply(in, "the peer"); });
  expect_error_only([&] {
    json::SecretMembers secrets{{"value_base64"}, {}};
    (void)json::parse(in, {.secrets = &secrets});
  });
  // Every decoder below starts with json::parse(in) (the credd ones with SecretMembers, which
  // rejects more, never less): when it throws, so do they all, at the same place.
  try {
    (void)json::parse(in);
  } catch (const Error&) {
    return 0;
  }

  control_request(in);
  control_replies<control::PingReply, control::PauseReply, control::ResumeReply,
                  control::SnapshotReply, control::BranchReply, control::StopReply>(in);

  credd_request(in);
  credd_replies<credd::PingReply, credd::SetReply, credd::ListReply, credd::RevokeAllReply,
                credd::CopyReply, credd::GrantsReply, credd::Done>(in);
  return 0;
}

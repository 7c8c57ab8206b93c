// libFuzzer harness for every decoder of the agent protocol (src/proto): arbitrary bytes go
// through FrameDecoder (fed in two pieces, to exercise reassembly) and every frame's payload is
// decoded as the message its type names; the raw input is also decoded as each message directly.
// The decoders must only ever return or throw ProtoError: ASan and UBSan catch anything else.
// Built with clang++ -fsanitize=fuzzer,address,undefined when clang is found (CMakeLists.txt);
// ctest runs it for a fixed number of inputs.
#include <cstddef>
#include <cstdint>
#include <span>

#include "proto/agent.h"
#include "proto/cred.h"
#include "proto/exec.h"
#include "proto/files.h"
#include "proto/net.h"

using namespace space::proto;

namespace {

void decode_as(Type type, std::span<const uint8_t> p) {
  try {
    switch (type) {
      case Type::Hello:
        Hello::decode(p);
        break;
      case Type::HelloReply:
        HelloReply::decode(p);
        break;
      case Type::Error:
        ErrorMsg::decode(p);
        break;
      case Type::Exec:
        ExecRequest::decode(p);
        break;
      case Type::Signal:
        SignalMsg::decode(p);
        break;
      case Type::Resize:
        WindowSize::decode(p);
        break;
      case Type::StdinAck:
        StdinAck::decode(p);
        break;
      case Type::Exit: {
        auto s = ExitStatus::decode(p);
        (void)exit_code_of(s);
        break;
      }
      case Type::FilePut:
        PutRequest::decode(p);
        break;
      case Type::FileGet:
        GetRequest::decode(p);
        break;
      case Type::FileEntry:
        decode_entry(p);
        break;
      case Type::FileDone:
        CopyDone::decode(p);
        break;
      case Type::CredGet:
        CredGet::decode(p);
        break;
      case Type::CredValue:
        CredValue::decode(p);
        break;
      case Type::CredDenied:
        CredDenied::decode(p);
        break;
      case Type::NetConnect:
        NetConnect::decode(p);
        break;
      case Type::NetResult:
        NetResult::decode(p);
        break;
      case Type::Forward:
        ForwardRequest::decode(p);
        break;
      default:
        break;  // raw data (Stdin/Stdout/Stderr/FileData) or an unknown type
    }
  } catch (const ProtoError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  for (uint16_t t = 1; t <= 25; t++) decode_as(static_cast<Type>(t), in);
  try {
    FrameDecoder dec;
    size_t cut = size ? data[0] % (size + 1) : 0;
    dec.feed(in.first(cut));
    while (auto f = dec.next()) decode_as(f->type, f->payload);
    dec.feed(in.subspan(cut));
    while (auto f = dec.next()) decode_as(f->type, f->payload);
  } catch (const ProtoError&) {
  }
  return 0;
}

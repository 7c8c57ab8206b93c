// libFuzzer harness for the broker's request rewriter (src/egress/http_rewrite): the client's
// bytes of an intercepted connection, fed in pieces whose sizes the input's first byte picks.
// It must only return or throw space::Error (RewriteError); ASan and UBSan catch memory errors.
// When it swapped no placeholder, what it passed on must be exactly what it took (a prefix of it)
// (__builtin_trap otherwise): the rewriter changes nothing but bound placeholders. ctest runs it
// for a fixed number of inputs from the seeds in tests/fuzz/corpus/http_rewrite.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/http_rewrite.h"

using namespace space;
using namespace space::egress;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 97;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  RequestRewriter rw(
      {{"space-placeholder-aa", "A", true}, {"space-placeholder-bb", "B", false}},
      [](const Placeholder&, const RequestInfo&) { return std::optional<SecretString>("VALUE"); },
      [](const Placeholder&, const RequestInfo&) {}, 1024);
  SecretBytes out;
  size_t fed = 0;
  try {
    for (; fed < in.size(); fed += step) rw.feed(in.substr(fed, step), out);
  } catch (const Error&) {
    return 0;
  }
  // What is still held (a head not complete yet) has not been passed on: a prefix, then.
  if (rw.swaps() == 0 && in.substr(0, out.size()) != std::string_view(out.data(), out.size()))
    __builtin_trap();
  return 0;
}

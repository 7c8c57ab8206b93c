// dlopen() of libarchive; see libarchive.h.
#include "store/libarchive.h"

#include <string>

#include "util/dynlib.h"

namespace space::store {
namespace {
constexpr const char* kSoname = "libarchive.so.13";

constexpr const char* kHint = "install Debian's libarchive13 (apt-get install libarchive13)";

template <class F>
void bind(void* lib, F& fn, const char* name) {
  dynlib::bind(fn, {lib}, name, kSoname, kHint);
}

Libarchive load() {
  void* lib = dynlib::open(kSoname, kHint);
  Libarchive a{};
#define SPACE_LIBARCHIVE_BIND(member, symbol) bind(lib, a.member, #symbol);
  SPACE_LIBARCHIVE_FUNCTIONS(SPACE_LIBARCHIVE_BIND)
#undef SPACE_LIBARCHIVE_BIND
  return a;  // the library stays loaded for the life of the process
}
}  // namespace

const Libarchive& libarchive() {
  static const Libarchive table = load();  // once, on first use (a failed load is tried again)
  return table;
}

}  // namespace space::store

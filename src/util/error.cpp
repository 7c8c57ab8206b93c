// Throw helpers for space::Error; they format strerror() so callers never do.
#include "util/error.h"

#include <cerrno>
#include <cstring>

namespace space {

void throw_errno(const std::string& what) {
  throw_errno(what, errno);
}

void throw_errno(const std::string& what, int err) {
  throw Error(what + ": " + std::strerror(err), err);
}

void fail(const std::string& what, const std::string& hint) {
  throw Error(what, 0, hint);
}

}  // namespace space

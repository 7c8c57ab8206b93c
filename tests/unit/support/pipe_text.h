// drain(): everything written into a test's pipe, read once its write end is closed (what a
// daemon reported on its ready pipe, what a console wrote).
#pragma once
#include <unistd.h>

#include <string>

#include "util/fd.h"

namespace space::test {

// Closes p.write, then reads p.read to its end.
inline std::string drain(Pipe& p) {
  p.write.reset();
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(p.read.get(), buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

}  // namespace space::test

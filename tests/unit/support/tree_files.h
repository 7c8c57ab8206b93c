// Small file helpers for the tests of file trees (util/tree_writer, util/tree_walker, core/copy):
// write a file with a mode, read one whole, ask whether a name exists without following links.
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "util/fd.h"

namespace space::test {

inline void put_file(const std::string& path, const std::string& data, mode_t mode = 0644) {
  Fd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  REQUIRE(f.valid());
  write_all(f.get(), data.data(), data.size());
  REQUIRE(::fchmod(f.get(), mode) == 0);
}

// The file's contents, or "<missing>" if it cannot be opened.
inline std::string slurp(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f) return "<missing>";
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(f.get(), buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

inline bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace space::test

// TempDir: a fresh directory under /tmp for one test, removed (with everything in it) when the
// test ends. Every unit test that makes temporary files, directories or sockets makes them in
// one; unnamed_file() is for tests that need only a file descriptor.
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>

#include <string>

#include "util/fd.h"
#include "util/fs.h"

namespace space::test {

struct TempDir {
  std::string path;
  // `tag` names the test in the directory's name: /tmp/space-test-<tag>-XXXXXX.
  explicit TempDir(const std::string& tag = "unit") {
    std::string tmpl = "/tmp/space-test-" + tag + "-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    try {
      fs::remove_tree(path);
    } catch (...) {
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// A new, empty, read-write file that no longer has a name: made in a TempDir that is removed
// before this returns, so only the descriptor keeps it.
inline Fd unnamed_file(const std::string& tag = "unit") {
  TempDir d(tag);
  Fd fd(::open((d.path + "/file").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  REQUIRE(fd.valid());
  return fd;
}

}  // namespace space::test

// TempDir: a fresh directory under /tmp for one test, removed (with everything in it) when the
// test ends. Shared by the unit tests that touch the filesystem.
#pragma once
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>

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

}  // namespace space::test

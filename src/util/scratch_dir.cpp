// ScratchDir; see scratch_dir.h.
#include "util/scratch_dir.h"

#include <stdlib.h>

#include <cstdlib>

#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

namespace space::fs {

ScratchDir::ScratchDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (!::mkdtemp(t.data())) throw_errno("make a scratch directory " + t);
  path_ = t;
}

ScratchDir::~ScratchDir() {
  try {
    remove_tree(path_);
  } catch (const std::exception& e) {
    log::warn(std::string("scratch directory: ") + e.what());
  }
}

}  // namespace space::fs

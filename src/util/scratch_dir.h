// ScratchDir: a private temporary directory that goes, with what it holds, when its owner does.
#pragma once
#include <string>

namespace space::fs {

// A private directory (0700) for files on their way somewhere, $TMPDIR/<prefix>-XXXXXX (else
// /tmp), removed with all it holds when it goes (a failure then is logged, not thrown).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace space::fs

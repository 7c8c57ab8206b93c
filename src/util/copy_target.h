// Where a copy lands: docker cp's destination rules, applied by whichever side writes (guest-init
// copying in, the host copying out) to a destination path the user typed.
//  - DEST is an existing directory: the source goes inside it under its own name; a directory
//    given as SRC/. and a tar stream put their contents in DEST itself.
//  - DEST is an existing file: a file source replaces it; a directory source is an error.
//  - DEST does not exist: it becomes the source's name (a directory is created, with the
//    contents of SRC or SRC/.) if its parent directory exists; a DEST ending in '/' must exist,
//    and so must the DEST of a tar stream.
// The result is an open directory and the name the source's top takes in it ("" = the entries
// go straight into the directory), which is what a TreeWriter needs (util/tree_writer.h).
#pragma once
#include <cstdint>
#include <string>

#include "util/fd.h"

namespace space {

struct CopySource {
  bool is_dir = false;    // the source is a directory
  bool contents = false;  // SRC/. : the directory's contents, not the directory itself
  bool stream = false;    // a tar stream: its entries land in DEST, which must be a directory
  std::string name;       // the source's base name ("" for a root: treated like contents)
};

struct CopyTarget {
  Fd dir;           // the directory the copy writes beneath
  std::string top;  // the name the source's top takes there; "" = its entries go into `dir`
};

// Resolves `dest` for `src`. `root_fd` and `resolve` (RESOLVE_* flags of openat2) say how paths
// are resolved: AT_FDCWD and 0 on the host, a root directory and RESOLVE_IN_ROOT in a guest whose
// files lie in an image. Throws space::Error with docker's wording for a destination that does
// not fit the source.
CopyTarget copy_target(int root_fd, uint64_t resolve, const std::string& dest,
                       const CopySource& src);

// The base name a source path gives its copy, and whether it asks for its contents: "a/b" -> b,
// "a/b/" -> b, "a/b/." -> contents, "/" -> "" (a root).
struct SourceName {
  std::string name;
  bool contents = false;
};
SourceName source_name(const std::string& path);

}  // namespace space

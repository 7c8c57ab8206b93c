// copy_target: see copy_target.h.
#include "util/copy_target.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.h"
#include "util/open_resolved.h"

namespace space {
namespace {

// "a/b//" -> {"a", "b"}; "/b" -> {"/", "b"}; "b" -> {".", "b"}; "/" -> {"/", "."}.
std::pair<std::string, std::string> split(std::string_view p) {
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  size_t slash = p.rfind('/');
  if (slash == std::string_view::npos) return {".", std::string(p)};
  std::string_view parent = p.substr(0, slash), base = p.substr(slash + 1);
  while (parent.size() > 1 && parent.back() == '/') parent.remove_suffix(1);
  return {parent.empty() ? std::string("/") : std::string(parent),
          base.empty() ? std::string(".") : std::string(base)};
}

}  // namespace

SourceName source_name(const std::string& path) {
  std::string_view p = path;
  bool contents = false;
  if (p == "." || p.ends_with("/.")) {
    contents = true;
    p.remove_suffix(p.size() > 2 ? 2 : p.size());
  }
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  size_t slash = p.rfind('/');
  std::string_view base = slash == std::string_view::npos ? p : p.substr(slash + 1);
  if (base == "." || base == "..") base = {};
  return {std::string(base), contents || base.empty()};
}

CopyTarget copy_target(int root_fd, uint64_t resolve, const std::string& dest,
                       const CopySource& src) {
  if (dest.empty()) fail("the destination path is empty");
  const bool must_be_dir = dest.back() == '/' || dest.ends_with("/.") || dest == ".";
  Fd d(open_resolved(root_fd, dest, O_RDONLY | O_DIRECTORY, resolve));
  if (d) {
    bool into = src.stream || src.contents || src.name.empty();
    return {std::move(d), into ? std::string() : src.name};
  }
  if (errno == ENOTDIR) {
    // DEST (or one of its parents) is not a directory.
    struct stat st;
    Fd f(open_resolved(root_fd, dest, O_PATH, resolve));
    if (!f && errno == ENOTDIR)
      fail("destination " + dest + " is not a directory, or lies beneath a file");
    if (!f || ::fstat(f.get(), &st) != 0) throw_errno("destination " + dest);
    if (src.stream) fail("destination " + dest + " is not a directory: a tar stream needs one");
    if (src.is_dir) fail("cannot copy a directory to " + dest + ", a file");
    if (must_be_dir) fail("destination " + dest + " is not a directory");
    auto [parent, base] = split(dest);
    Fd p(open_resolved(root_fd, parent, O_RDONLY | O_DIRECTORY, resolve));
    if (!p) throw_errno("destination " + parent);
    return {std::move(p), base};
  }
  if (errno != ENOENT) throw_errno("destination " + dest);
  if (src.stream || must_be_dir)
    fail("destination directory " + dest + " does not exist",
         "create it first, or name a path whose parent directory exists");
  auto [parent, base] = split(dest);
  Fd p(open_resolved(root_fd, parent, O_RDONLY | O_DIRECTORY, resolve));
  if (!p) {
    if (errno == ENOENT || errno == ENOTDIR)
      fail("the parent directory of " + dest + " (" + parent + ") does not exist",
           "create it first; cp makes only the last component of the destination");
    throw_errno("destination " + parent);
  }
  return {std::move(p), base};
}

}  // namespace space

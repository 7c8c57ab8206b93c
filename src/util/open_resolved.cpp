// openat2, or its rules walked one component at a time; see open_resolved.h.
#include "util/open_resolved.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
#include <vector>

#include "util/fd.h"

namespace space {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

// "a//b/./c/" -> {"a", "b", ".", "c"}; the leading "/" is the caller's to see.
void push_components(std::deque<std::string>& todo, const std::string& path, bool front) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  if (front)
    todo.insert(todo.begin(), parts.begin(), parts.end());
  else
    todo.insert(todo.end(), parts.begin(), parts.end());
}

int fail_with(int err) {
  errno = err;
  return -1;
}

}  // namespace

int open_resolved(int dir, const std::string& path, int flags, uint64_t resolve, mode_t mode) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = resolve;
  int fd = static_cast<int>(::syscall(SYS_openat2, dir, path.c_str(), &how, sizeof how));
  if (fd >= 0 || errno != ENOSYS) return fd;
  return open_resolved_walk(dir, path, flags, resolve, mode);
}

int open_resolved_walk(int dir, const std::string& path, int flags, uint64_t resolve, mode_t mode) {
  const bool in_root = resolve & RESOLVE_IN_ROOT;
  const bool beneath = resolve & RESOLVE_BENEATH;
  const bool no_links = resolve & RESOLVE_NO_SYMLINKS;
  const bool no_xdev = resolve & RESOLVE_NO_XDEV;
  if (path.empty()) return fail_with(ENOENT);
  // A trailing "/" asks for a directory, whatever the last name turns out to be.
  // It also makes the last name a symlink to follow, O_NOFOLLOW or not, as the kernel does.
  const bool trailing_slash = path.back() == '/';
  const int last_flags = flags | O_CLOEXEC | (trailing_slash ? O_DIRECTORY : 0);
  const int dir_flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

  std::vector<Fd> stack;  // stack[0] is the root of the walk
  Fd top(::openat(dir, ".", dir_flags));
  if (!top) return -1;
  struct stat root_st {};
  if (::fstat(top.get(), &root_st) != 0) return -1;
  auto restart_at_slash = [&]() -> bool {  // an absolute name, outside any root: the real "/"
    stack.clear();
    Fd slash(::open("/", dir_flags));
    if (!slash) return false;
    stack.push_back(std::move(slash));
    return true;
  };
  stack.push_back(std::move(top));
  auto crosses = [&](int fd) {
    struct stat st {};
    return no_xdev && (::fstat(fd, &st) != 0 || st.st_dev != root_st.st_dev);
  };

  std::deque<std::string> todo;
  if (path[0] == '/') {
    if (beneath) return fail_with(EXDEV);
    if (!in_root && !restart_at_slash()) return -1;
  }
  push_components(todo, path, false);
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.front());
    todo.pop_front();
    const bool last = todo.empty();
    if (name == ".") continue;
    if (name == "..") {
      if (stack.size() > 1) {
        stack.pop_back();
      } else if (beneath) {
        return fail_with(EXDEV);
      } else if (!in_root) {  // no scope: the real parent
        Fd up(::openat(stack.back().get(), "..", dir_flags));
        if (!up) return -1;
        stack.back() = std::move(up);
      }  // in_root: ".." of the root is the root
      continue;
    }
    const int cur = stack.back().get();
    struct stat st {};
    const bool exists = ::fstatat(cur, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && (errno != ENOENT || !last)) return -1;
    const bool follow = !last || !(flags & O_NOFOLLOW) || trailing_slash;
    if (exists && S_ISLNK(st.st_mode) && follow) {
      if (no_links) return fail_with(ELOOP);
      if (++links > kMaxLinks) return fail_with(ELOOP);
      std::string target(PATH_MAX, '\0');
      ssize_t n = ::readlinkat(cur, name.c_str(), target.data(), target.size());
      if (n < 0) return -1;
      target.resize(static_cast<size_t>(n));
      if (target.empty()) return fail_with(ENOENT);
      if (target[0] == '/') {
        if (beneath) return fail_with(EXDEV);
        if (in_root)
          stack.resize(1);
        else if (!restart_at_slash())
          return -1;
      }
      push_components(todo, target, true);
      continue;
    }
    if (!last) {
      if (!S_ISDIR(st.st_mode)) return fail_with(ENOTDIR);
      Fd next(::openat(cur, name.c_str(), dir_flags));
      if (!next) return -1;
      if (crosses(next.get())) return fail_with(EXDEV);
      stack.push_back(std::move(next));
      continue;
    }
    Fd fd(::openat(cur, name.c_str(), last_flags | O_NOFOLLOW, mode));
    if (!fd) return -1;
    if (crosses(fd.get())) return fail_with(EXDEV);
    return fd.release();
  }
  // The name ended in "." or ".." (or was "/"): the directory the walk stands in.
  Fd fd(::openat(stack.back().get(), ".", last_flags, mode));
  if (!fd) return -1;
  if (crosses(fd.get())) return fail_with(EXDEV);
  return fd.release();
}

}  // namespace space

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

namespace {

// One walk: the directories it stands in (stack[0] is its root), the names still to take, and
// the rules. Each step returns false with errno set when the open fails.
struct Walk {
  const bool in_root, beneath, no_links, no_xdev;
  const int dir_flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  std::vector<Fd> stack;
  struct stat root_st {};
  std::deque<std::string> todo;
  int links = 0;

  explicit Walk(uint64_t resolve)
      : in_root(resolve & RESOLVE_IN_ROOT),
        beneath(resolve & RESOLVE_BENEATH),
        no_links(resolve & RESOLVE_NO_SYMLINKS),
        no_xdev(resolve & RESOLVE_NO_XDEV) {}

  bool start(int dir) {
    Fd top(::openat(dir, ".", dir_flags));
    if (!top || ::fstat(top.get(), &root_st) != 0) return false;
    stack.push_back(std::move(top));
    return true;
  }
  // An absolute name, outside any root: the real "/".
  bool restart_at_slash() {
    stack.clear();
    Fd slash(::open("/", dir_flags));
    if (!slash) return false;
    stack.push_back(std::move(slash));
    return true;
  }
  // Where an absolute name (or link target) starts: refused beneath, the root in a root.
  bool absolute() {
    if (beneath) return fail_with(EXDEV) == 0;
    if (in_root) {
      stack.resize(1);
      return true;
    }
    return restart_at_slash();
  }
  bool crosses(int fd) const {
    struct stat st {};
    return no_xdev && (::fstat(fd, &st) != 0 || st.st_dev != root_st.st_dev);
  }
  bool up() {
    if (stack.size() > 1) {
      stack.pop_back();
    } else if (beneath) {
      return fail_with(EXDEV) == 0;
    } else if (!in_root) {  // no scope: the real parent
      Fd parent(::openat(stack.back().get(), "..", dir_flags));
      if (!parent) return false;
      stack.back() = std::move(parent);
    }  // in_root: ".." of the root is the root
    return true;
  }
  // The link `name` in `cur`: its target's names put first, from where the target starts.
  bool follow(int cur, const std::string& name) {
    if (no_links || ++links > kMaxLinks) return fail_with(ELOOP) == 0;
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlinkat(cur, name.c_str(), target.data(), target.size());
    if (n < 0) return false;
    target.resize(static_cast<size_t>(n));
    if (target.empty()) return fail_with(ENOENT) == 0;
    if (target[0] == '/' && !absolute()) return false;
    push_components(todo, target, true);
    return true;
  }
  // Into the directory `name` of `cur`.
  bool descend(int cur, const std::string& name, const struct stat& st) {
    if (!S_ISDIR(st.st_mode)) return fail_with(ENOTDIR) == 0;
    Fd next(::openat(cur, name.c_str(), dir_flags));
    if (!next) return false;
    if (crosses(next.get())) return fail_with(EXDEV) == 0;
    stack.push_back(std::move(next));
    return true;
  }
  // The open itself, of `name` in `cur`: the descriptor, or -1.
  int open_last(int cur, const char* name, int flags, mode_t mode) const {
    Fd fd(::openat(cur, name, flags, mode));
    if (!fd) return -1;
    if (crosses(fd.get())) return fail_with(EXDEV);
    return fd.release();
  }
};

}  // namespace

int open_resolved_walk(int dir, const std::string& path, int flags, uint64_t resolve, mode_t mode) {
  if (path.empty()) return fail_with(ENOENT);
  // A trailing "/" asks for a directory, whatever the last name turns out to be.
  // It also makes the last name a symlink to follow, O_NOFOLLOW or not, as the kernel does.
  const bool trailing_slash = path.back() == '/';
  const int last_flags = flags | O_CLOEXEC | (trailing_slash ? O_DIRECTORY : 0);
  Walk w(resolve);
  if (!w.start(dir)) return -1;
  if (path[0] == '/') {
    if (w.beneath) return fail_with(EXDEV);
    if (!w.in_root && !w.restart_at_slash()) return -1;
  }
  push_components(w.todo, path, false);
  while (!w.todo.empty()) {
    std::string name = std::move(w.todo.front());
    w.todo.pop_front();
    const bool last = w.todo.empty();
    if (name == ".") continue;
    if (name == "..") {
      if (!w.up()) return -1;
      continue;
    }
    const int cur = w.stack.back().get();
    struct stat st {};
    const bool exists = ::fstatat(cur, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && (errno != ENOENT || !last)) return -1;
    const bool follow = !last || !(flags & O_NOFOLLOW) || trailing_slash;
    if (exists && S_ISLNK(st.st_mode) && follow) {
      if (!w.follow(cur, name)) return -1;
    } else if (!last) {
      if (!w.descend(cur, name, st)) return -1;
    } else {
      return w.open_last(cur, name.c_str(), last_flags | O_NOFOLLOW, mode);
    }
  }
  // The name ended in "." or ".." (or was "/"): the directory the walk stands in.
  return w.open_last(w.stack.back().get(), ".", last_flags, mode);
}

}  // namespace space

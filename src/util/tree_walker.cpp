// walk_tree: see tree_walker.h. Recursion depth follows the tree's depth; each level holds one
// directory descriptor and its list of names.
#include "util/tree_walker.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <vector>

#include "util/error.h"
#include "util/fd.h"

namespace space {
namespace {

bool pseudo_fs(int dir_fd) {
  struct statfs sf;
  if (::fstatfs(dir_fd, &sf) != 0) return false;
  switch (static_cast<unsigned long>(sf.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEVPTS_SUPER_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case BPF_FS_MAGIC:
      return true;
    default:
      return false;
  }
}

// Extended attributes of `fd` (a file or directory opened for reading).
void read_xattrs(int fd, TreeEntry& e, const std::string& path) {
  std::vector<char> names(4096);
  ssize_t n;
  for (;;) {
    n = ::flistxattr(fd, names.data(), names.size());
    if (n >= 0) break;
    if (errno == ENOTSUP) return;
    if (errno != ERANGE) throw_errno("list extended attributes of " + path);
    names.resize(names.size() * 4);
    if (names.size() > (1u << 20)) throw_errno("list extended attributes of " + path);
  }
  for (ssize_t i = 0; i < n;) {
    std::string name(names.data() + i);
    i += static_cast<ssize_t>(name.size()) + 1;
    std::string value(kMaxXattrValue, '\0');
    ssize_t v = ::fgetxattr(fd, name.c_str(), value.data(), value.size());
    if (v < 0) {
      if (errno == ENODATA) continue;  // removed meanwhile
      throw_errno("read extended attribute " + name + " of " + path);
    }
    value.resize(static_cast<size_t>(v));
    if (e.xattrs.size() < kMaxEntryXattrs) e.xattrs.emplace_back(std::move(name), std::move(value));
  }
}

class Walker {
 public:
  Walker(const WalkOptions& o, const std::function<void(const TreeEntry&, int)>& each)
      : o_(o), each_(each) {}

  void top(int top_fd) {
    struct stat st;
    if (::fstat(top_fd, &st) != 0) throw_errno("stat the source");
    visit(top_fd, "", "", st, true);
  }
  WalkStats stats;

 private:
  // `at`/`base`: where to open the entry (base "" = `at` is the entry itself, an O_PATH fd).
  void visit(int at, const std::string& base, const std::string& name, const struct stat& st,
             bool is_top) {
    TreeEntry e;
    e.name = name;
    e.mode = st.st_mode & 07777;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.mtime_sec = st.st_mtim.tv_sec;
    e.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    const std::string shown = name.empty() ? "." : name;
    const char* rel = base.empty() ? "" : base.c_str();

    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
      auto key = std::make_pair(st.st_dev, st.st_ino);
      auto it = links_.find(key);
      if (it != links_.end()) {
        e.kind = EntryKind::Hardlink;
        e.target = it->second;
        emit(e, -1);
        return;
      }
      if (!name.empty()) links_.emplace(key, name);
    }
    if (S_ISDIR(st.st_mode)) {
      e.kind = EntryKind::Dir;
      Fd d(base.empty() ? ::openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                        : ::openat(at, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!d) throw_errno("open directory " + shown);
      if (o_.xattrs) read_xattrs(d.get(), e, shown);
      emit(e, -1);
      if (!is_top && pseudo_fs(d.get())) return;
      children(d.get(), name);
    } else if (S_ISREG(st.st_mode)) {
      e.kind = EntryKind::File;
      e.size = static_cast<uint64_t>(st.st_size);
      // The top is an O_PATH descriptor: reopened for reading through /proc/self/fd.
      std::string self = "/proc/self/fd/" + std::to_string(at);
      Fd f(base.empty() ? ::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                        : ::openat(at, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (!f) throw_errno("open " + shown);
      if (o_.xattrs) read_xattrs(f.get(), e, shown);
      emit(e, f.get());
    } else if (S_ISLNK(st.st_mode)) {
      e.kind = EntryKind::Symlink;
      std::string target(4096, '\0');
      ssize_t n = ::readlinkat(at, rel, target.data(), target.size());
      if (n < 0) throw_errno("read link " + shown);
      target.resize(static_cast<size_t>(n));
      e.target = std::move(target);
      emit(e, -1);
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
      e.kind = S_ISCHR(st.st_mode)   ? EntryKind::CharDev
               : S_ISBLK(st.st_mode) ? EntryKind::BlockDev
                                     : EntryKind::Fifo;
      e.rdev = st.st_rdev;
      emit(e, -1);
    } else {
      stats.skipped++;  // sockets
    }
  }

  void children(int dir, const std::string& name) {
    std::vector<std::string> names;
    {
      std::unique_ptr<DIR, int (*)(DIR*)> it(::fdopendir(::dup(dir)), ::closedir);
      if (!it) throw_errno("read directory " + (name.empty() ? "." : name));
      errno = 0;
      while (dirent* de = ::readdir(it.get())) {
        std::string n = de->d_name;
        if (n != "." && n != "..") names.push_back(std::move(n));
      }
    }
    std::sort(names.begin(), names.end());  // a stable order: reproducible streams
    for (const auto& n : names) {
      struct stat st;
      if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // removed meanwhile
        throw_errno("stat " + (name.empty() ? n : name + "/" + n));
      }
      visit(dir, n, name.empty() ? n : name + "/" + n, st, false);
    }
  }

  void emit(const TreeEntry& e, int fd) {
    stats.entries++;
    each_(e, fd);
  }

  const WalkOptions& o_;
  const std::function<void(const TreeEntry&, int)>& each_;
  std::map<std::pair<dev_t, ino_t>, std::string> links_;
};

}  // namespace

WalkStats walk_tree(int top_fd, const WalkOptions& opts,
                    const std::function<void(const TreeEntry&, int fd)>& each) {
  Walker w(opts, each);
  w.top(top_fd);
  return w.stats;
}

void send_file_data(int fd, uint64_t size, size_t max_chunk,
                    const std::function<void(const uint8_t*, size_t)>& chunk) {
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(size, max_chunk)));
  uint64_t off = 0;
  bool eof = false;
  while (off < size) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(size - off, buf.size()));
    size_t got = 0;
    while (!eof && got < want) {
      ssize_t n = ::pread(fd, buf.data() + got, want - got, static_cast<off_t>(off + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_errno("read");
      }
      if (n == 0) eof = true;
      got += static_cast<size_t>(n);
    }
    if (got < want)
      std::fill(buf.begin() + static_cast<ptrdiff_t>(got),
                buf.begin() + static_cast<ptrdiff_t>(want), 0);
    chunk(buf.data(), want);
    off += want;
  }
}

}  // namespace space

// Filesystem helpers; see fs.h. remove_tree walks with openat()/unlinkat() relative to directory
// fds (no path re-resolution, so a concurrent symlink swap cannot redirect it) and compares
// statx mount ids, which unlike st_dev do not change at btrfs subvolume boundaries.
#include "util/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "util/error.h"
#include "util/fd.h"

namespace space::fs {

namespace {

std::string dirname_of(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

void fsync_dir(const std::string& dir) {
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) throw_errno("open " + dir);
  if (::fsync(d.get()) != 0) throw_errno("fsync " + dir);
}

struct EntryInfo {
  bool is_dir;
  uint64_t mount;  // statx mount id, or st_dev (tagged) on kernels without STATX_MNT_ID
};

// Type and mount of dirfd/name; `flags` is 0 or AT_SYMLINK_NOFOLLOW. nullopt if it does not exist.
std::optional<EntryInfo> stat_entry(int dirfd, const char* name, int flags,
                                    const std::string& shown) {
  struct statx stx {};
  if (::statx(dirfd, name, flags, STATX_TYPE | STATX_MNT_ID, &stx) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("stat " + shown);
  }
  uint64_t mount =
      (stx.stx_mask & STATX_MNT_ID)
          ? stx.stx_mnt_id
          : (uint64_t{stx.stx_dev_major} << 32 | stx.stx_dev_minor) | (uint64_t{1} << 63);
  return EntryInfo{S_ISDIR(stx.stx_mode), mount};
}

// Entry names of the open directory `dirfd` (which stays open and owned by the caller).
std::vector<std::string> names_in(int dirfd, const std::string& shown) {
  // fdopendir takes ownership of its fd, so give it a duplicate.
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) throw_errno("dup");
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dup), ::closedir);
  if (!dir) {
    Fd owner(dup);
    throw_errno("opendir " + shown);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(dir.get())) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
    errno = 0;
  }
  if (errno != 0) throw_errno("readdir " + shown);
  return names;
}

void remove_at(int parent, const std::string& name, uint64_t mount, const std::string& shown) {
  auto info = stat_entry(parent, name.c_str(), AT_SYMLINK_NOFOLLOW, shown);
  if (!info) return;
  if (!info->is_dir) {
    if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) throw_errno("remove " + shown);
    return;
  }
  if (info->mount != mount)
    fail("remove " + shown + ": it is on another mount; refusing to cross it",
         "unmount " + shown + " first");
  Fd dfd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dfd) {
    if (errno == ENOENT) return;
    throw_errno("open " + shown);
  }
  std::vector<std::string> names = names_in(dfd.get(), shown);
  for (auto& n : names) remove_at(dfd.get(), n, mount, shown + "/" + n);
  dfd.reset();
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    throw_errno("remove " + shown);
}

// Copies [off, end) from src to dst at the same offsets, in chunks, calling progress between.
void copy_range(int src, int dst, off_t off, off_t end, const std::string& what,
                const std::function<void()>& progress) {
  constexpr size_t kChunk = 8u << 20;
  bool use_cfr = true;
  std::vector<char> buf;
  while (off < end) {
    if (progress) progress();
    size_t len = static_cast<size_t>(std::min<off_t>(end - off, kChunk));
    if (use_cfr) {
      loff_t in = off, out = off;
      ssize_t n = ::copy_file_range(src, &in, dst, &out, len, 0);
      if (n > 0) {
        off += n;
        continue;
      }
      if (n == 0) fail("copy " + what + ": source shrank while copying");
      if (errno == EINTR) continue;
      if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        throw_errno("copy " + what);
      use_cfr = false;
    }
    buf.resize(kChunk);
    ssize_t n = ::pread(src, buf.data(), len, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read " + what);
    }
    if (n == 0) fail("copy " + what + ": source shrank while copying");
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::pwrite(dst, buf.data() + done, static_cast<size_t>(n - done), off + done);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw_errno("write copy of " + what);
      }
      done += w;
    }
    off += n;
  }
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view data, mode_t mode, Sync sync) {
  std::string tmp = path + ".tmp-XXXXXX";
  Fd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd) throw_errno("create temporary file for " + path);
  try {
    if (::fchmod(fd.get(), mode) != 0) throw_errno("chmod " + tmp);
    write_all(fd.get(), data.data(), data.size());
    if (sync == Sync::Durable && ::fsync(fd.get()) != 0) throw_errno("fsync " + tmp);
    fd.reset();
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw_errno("rename " + tmp + " to " + path);
  } catch (Error& e) {
    ::unlink(tmp.c_str());
    e.add_context("write " + path);
    throw;
  }
  if (sync == Sync::Durable) fsync_dir(dirname_of(path));
}

static_assert(AT_FDCWD == -100, "FileAt's default is AT_FDCWD");

FileAt file_at(const std::string& path) {
  return FileAt{AT_FDCWD, path, path};
}

void write_file_atomic_at(const FileAt& f, std::string_view data, mode_t mode, Sync sync) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = "." + f.name.substr(f.name.rfind('/') + 1) + ".tmp-" +
                    std::to_string(::getpid()) + "-" + std::to_string(counter++);
  // The temp file sits beside the target: in the directory of `name` within `dir`.
  auto slash = f.name.rfind('/');
  if (slash != std::string::npos) tmp = f.name.substr(0, slash + 1) + tmp;
  Fd fd(::openat(f.dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) throw_errno("create a temporary file for " + f.shown);
  try {
    if (::fchmod(fd.get(), mode) != 0) throw_errno("chmod a temporary file");
    write_all(fd.get(), data.data(), data.size());
    if (sync == Sync::Durable && ::fsync(fd.get()) != 0) throw_errno("fsync a temporary file");
    fd.reset();
    if (::renameat(f.dir, tmp.c_str(), f.dir, f.name.c_str()) != 0) throw_errno("rename");
  } catch (Error& e) {
    ::unlinkat(f.dir, tmp.c_str(), 0);
    e.add_context("write " + f.shown);
    throw;
  }
  if (sync != Sync::Durable) return;
  std::string parent = slash == std::string::npos ? "." : f.name.substr(0, slash);
  if (parent.empty()) parent = "/";
  Fd d(::openat(f.dir, parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d || ::fsync(d.get()) != 0) throw_errno("fsync the directory of " + f.shown);
}

std::string read_file(const std::string& path, size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read " + path);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes)
      fail("read " + path + ": file is larger than " + std::to_string(max_bytes) + " bytes");
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string tail_lines(const std::string& path, size_t n) {
  constexpr off_t kMax = 64 * 1024;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || n == 0) return {};
  off_t start = st.st_size > kMax ? st.st_size - kMax : 0;
  std::string data(static_cast<size_t>(st.st_size - start), '\0');
  ssize_t got = ::pread(fd.get(), data.data(), data.size(), start);
  if (got <= 0) return {};
  data.resize(static_cast<size_t>(got));
  // Drop one trailing newline, then walk back n line breaks.
  size_t end = data.size();
  if (end > 0 && data[end - 1] == '\n') end--;
  size_t pos = end;
  for (size_t lines = 0; pos > 0; pos--) {
    if (data[pos - 1] == '\n' && ++lines == n) break;
  }
  return data.substr(pos, end - pos);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> list_dir(const std::string& path) {
  Fd d(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) {
    if (errno == ENOENT) return {};
    throw_errno("open " + path);
  }
  return names_in(d.get(), path);
}

void mkdir_p(const std::string& path, mode_t mode) {
  if (path.empty()) fail("mkdir: empty path");
  std::string cur;
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string::npos) slash = path.size();
    cur = path.substr(0, slash);
    i = slash + 1;
    if (cur.empty() || cur.back() == '/') continue;
    if (::mkdir(cur.c_str(), mode) != 0) {
      if (errno != EEXIST) throw_errno("mkdir " + cur);
      if (!is_dir(cur)) throw_errno("mkdir " + cur, ENOTDIR);
    }
  }
}

void ensure_private_dir(const std::string& path, mode_t mode) {
  if (path.empty()) fail("mkdir: empty path");
  bool made = false;
  if (::mkdir(path.c_str(), mode) == 0) {
    made = true;
  } else if (errno == ENOENT) {
    mkdir_p(path, mode);
    made = true;
  } else if (errno != EEXIST) {
    throw_errno("mkdir " + path);
  }
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) throw_errno("stat " + path);
  uid_t me = ::geteuid();
  if (S_ISLNK(link.st_mode) && link.st_uid != 0 && link.st_uid != me)
    fail(path + " is a symbolic link owned by uid " + std::to_string(link.st_uid) +
             ", who could point it anywhere",
         "replace it with a directory, or a link owned by root");
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + path);
  if (made && ::fchmod(fd.get(), mode) != 0) throw_errno("chmod " + path);  // not the umask's
  if (st.st_uid != me)
    fail(path + " belongs to uid " + std::to_string(st.st_uid) + ", not to us (uid " +
             std::to_string(me) + "): whoever owns it could tamper with what space keeps there",
         "chown " + std::to_string(me) + " " + path + ", or use another directory");
  if (!made && (st.st_mode & (S_IWGRP | S_IWOTH))) {
    char m[8];
    std::snprintf(m, sizeof m, "%04o", st.st_mode & 07777);
    fail(path + " may be written by others (mode " + m + ")", "chmod go-w " + path);
  }
}

void remove_tree(const std::string& path) {
  if (path.empty()) fail("remove: empty path");
  std::string parent = dirname_of(path);
  auto parent_info = stat_entry(AT_FDCWD, parent.c_str(), 0, parent);
  if (!parent_info) return;
  remove_at(AT_FDCWD, path, parent_info->mount, path);
}

namespace {
// Copies the regular file open as `in` (its stat `st`) into the new, empty file `out`: a reflink
// if possible, else only the data extents. Names are for messages.
void copy_contents(int in, int out, const struct stat& st, const std::string& src,
                   const std::string& dst, const std::function<void()>& progress) {
  if (::ioctl(out, FICLONE, in) == 0) return;
  off_t off = 0;
  while (off < st.st_size) {
    off_t data = ::lseek(in, off, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole remains
      if (errno != EINVAL) throw_errno("seek " + src);
      data = off;  // no SEEK_DATA support: treat the rest as data
    }
    off_t hole = ::lseek(in, data, SEEK_HOLE);
    if (hole < 0) hole = st.st_size;
    copy_range(in, out, data, std::min(hole, st.st_size), src, progress);
    off = hole;
  }
  if (::ftruncate(out, st.st_size) != 0) throw_errno("truncate " + dst);
}
}  // namespace

void copy_file(const std::string& src, const std::string& dst, mode_t mode,
               const std::function<void()>& progress) {
  Fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw_errno("open " + src);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) throw_errno("stat " + src);
  if (!S_ISREG(st.st_mode)) fail("copy " + src + ": not a regular file");
  Fd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!out) throw_errno("create " + dst);
  try {
    copy_contents(in.get(), out.get(), st, src, dst, progress);
  } catch (...) {
    ::unlink(dst.c_str());
    throw;
  }
}

namespace {
// Copies what directory `src_fd` holds into directory `dst_fd`, each name opened beneath its
// parent's descriptor without following a link (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), and what was
// opened checked by fstat: a name swapped for a link or another kind between the directory's
// listing and its open fails the copy instead of leading elsewhere. `src`/`dst` name them in
// messages, `rel` is the path below the copy's top for `skip`.
void copy_tree_at(int src_fd, int dst_fd, const std::string& src, const std::string& dst,
                  const std::string& rel, const std::function<bool(const std::string&)>& skip) {
  for (const auto& name : names_in(src_fd, src)) {
    const std::string r = rel.empty() ? name : rel + "/" + name;
    if (skip && skip(r)) continue;
    const std::string from = src + "/" + name, to = dst + "/" + name;
    struct stat st {};
    if (::fstatat(src_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw_errno("stat " + from);
    if (S_ISREG(st.st_mode)) {
      Fd in(::openat(src_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
      if (!in) throw_errno("open " + from);
      if (::fstat(in.get(), &st) != 0) throw_errno("stat " + from);
      if (!S_ISREG(st.st_mode)) fail("copy " + from + ": changed into another kind of file");
      Fd out(::openat(dst_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      st.st_mode & 07777));
      if (!out) throw_errno("create " + to);
      copy_contents(in.get(), out.get(), st, from, to, {});
    } else if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(dst_fd, name.c_str(), st.st_mode & 07777) != 0) throw_errno("mkdir " + to);
      Fd sub(::openat(src_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) throw_errno("open directory " + from);
      Fd dsub(::openat(dst_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!dsub) throw_errno("open directory " + to);
      copy_tree_at(sub.get(), dsub.get(), from, to, r, skip);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(PATH_MAX, '\0');
      ssize_t n = ::readlinkat(src_fd, name.c_str(), target.data(), target.size());
      if (n < 0) throw_errno("readlink " + from);
      target.resize(size_t(n));
      if (::symlinkat(target.c_str(), dst_fd, name.c_str()) != 0) throw_errno("symlink " + to);
    }
  }
}
}  // namespace

void copy_tree(const std::string& src, const std::string& dst,
               const std::function<bool(const std::string&)>& skip) {
  Fd s(::open(src.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!s) throw_errno("copy " + src);
  Fd d(::open(dst.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) throw_errno("copy into " + dst);
  copy_tree_at(s.get(), d.get(), src, dst, "", skip);
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  if (!::getcwd(buf, sizeof buf)) throw_errno("getcwd");
  std::string cwd = buf;
  if (path.empty() || path == ".") return cwd;
  return (cwd == "/" ? "" : cwd) + "/" + path;
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) throw_errno("resolve " + path);
  return buf;
}

}  // namespace space::fs

// Safe tar extraction; see extract.h.
#include "store/extract.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <memory>
#include <unordered_set>

#include "store/libarchive.h"
#include "util/error.h"
#include "util/fd.h"

namespace space::store {
namespace {

constexpr uint64_t kResolve =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
constexpr std::string_view kWhiteout = ".wh.";
constexpr std::string_view kOpaque = ".wh..wh..opq";

// openat2 of one name beneath `dir`; -1 with errno on failure.
int open_beneath(int dir, const std::string& name, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = kResolve;
  return static_cast<int>(::syscall(SYS_openat2, dir, name.c_str(), &how, sizeof how));
}

std::string join(const std::vector<std::string>& c, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; i++) s += (i ? "/" : "") + c[i];
  return s;
}

// Removes `name` in `dir` (a directory recursively), never following a symlink; absent is fine.
void remove_at(int dir, const std::string& name) {
  if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR) throw_errno("remove " + name);
  Fd d(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) throw_errno("open " + name);
  std::unique_ptr<DIR, int (*)(DIR*)> it(::fdopendir(::dup(d.get())), ::closedir);
  if (!it) throw_errno("read " + name);
  std::vector<std::string> children;
  while (dirent* e = ::readdir(it.get())) {
    std::string n = e->d_name;
    if (n != "." && n != "..") children.push_back(n);
  }
  for (const auto& c : children) remove_at(d.get(), c);
  if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0) throw_errno("remove " + name);
}

class Extractor {
 public:
  Extractor(const Libarchive& la, archive* a, int root, const ExtractOptions& o,
            const std::string& origin)
      : la_(la), a_(a), root_(root), o_(o), origin_(origin) {}

  ExtractStats run() {
    archive_entry* e = nullptr;
    for (;;) {
      int r = la_.read_next_header(a_, &e);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) archive_fail("read");
      entry(e);
      stats_.entries++;
      if (o_.progress) o_.progress(stats_.entries, stats_.bytes);
    }
    // Directory times last: creating their contents changed them.
    for (auto it = dir_times_.rbegin(); it != dir_times_.rend(); ++it) {
      Fd d(open_beneath(root_, it->first, O_RDONLY | O_DIRECTORY));
      if (d) ::futimens(d.get(), it->second.data());
    }
    return stats_;
  }

 private:
  [[noreturn]] void archive_fail(const std::string& what) {
    const char* s = la_.error_string(a_);
    fail(origin_ + ": " + what + ": " + (s ? s : "unreadable archive"),
         "check that it is a complete tar archive (plain, gzip, xz, zstd or bzip2)");
  }
  [[noreturn]] void refuse(const std::string& name, const std::string& why) {
    fail(origin_ + ": entry '" + name + "' " + why,
         "the archive is refused as a whole; nothing outside the staging directory was written");
  }

  // The directory holding `c`'s last component, made (0755) where missing. Never through a
  // symlink: a parent that is one is refused.
  Fd parent_of(const std::vector<std::string>& c, const std::string& name, bool create) {
    Fd dir(::dup(root_));
    if (!dir) throw_errno("dup");
    for (size_t i = 0; i + 1 < c.size(); i++) {
      Fd next(open_beneath(dir.get(), c[i], O_PATH | O_DIRECTORY));
      if (!next && errno == ENOENT && create) {
        if (::mkdirat(dir.get(), c[i].c_str(), 0755) != 0 && errno != EEXIST)
          throw_errno(origin_ + ": create " + join(c, i + 1));
        created_.insert(join(c, i + 1));
        next = Fd(open_beneath(dir.get(), c[i], O_PATH | O_DIRECTORY));
      }
      if (!next) {
        if (errno == ELOOP || errno == EXDEV) refuse(name, "goes through a symbolic link");
        if (errno == ENOTDIR) refuse(name, "goes through " + join(c, i + 1) + ", not a directory");
        throw_errno(origin_ + ": open " + join(c, i + 1) + " for '" + name + "'");
      }
      dir = std::move(next);
    }
    return dir;
  }

  void entry(archive_entry* e) {
    const char* raw = la_.entry_pathname(e);
    std::string name = raw ? raw : "";
    std::vector<std::string> c;
    try {
      c = entry_components(name);
    } catch (const Error& err) {
      refuse(name, err.what());
    }
    if (c.empty()) return;  // "." itself: the root's own metadata is the caller's
    const std::string path = join(c, c.size());
    const std::string& base = c.back();

    if (o_.whiteouts && base.starts_with(kWhiteout)) return whiteout(c, name);
    if (const char* target = la_.entry_hardlink(e)) return hardlink(c, name, target);

    Fd parent = parent_of(c, name, true);
    const mode_t type = la_.entry_filetype(e);
    struct stat st;
    const bool exists = ::fstatat(parent.get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && !(type == AE_IFDIR && S_ISDIR(st.st_mode))) remove_at(parent.get(), base);
    created_.insert(path);

    switch (type) {
      case AE_IFDIR: {
        if (!exists || !S_ISDIR(st.st_mode))
          if (::mkdirat(parent.get(), base.c_str(), 0700) != 0)
            throw_errno(origin_ + ": create " + path);
        Fd d(open_beneath(parent.get(), base, O_RDONLY | O_DIRECTORY));
        if (!d) throw_errno(origin_ + ": open " + path);
        set_meta(d.get(), e, path);
        dir_times_.emplace_back(path, times(e));
        return;
      }
      case AE_IFREG: {
        Fd f(::openat(parent.get(), base.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!f) throw_errno(origin_ + ": create " + path);
        write_data(f.get(), e, path);
        set_meta(f.get(), e, path);
        auto t = times(e);
        ::futimens(f.get(), t.data());
        return;
      }
      case AE_IFLNK: {
        const char* target = la_.entry_symlink(e);
        if (!target || !*target) refuse(name, "is a symbolic link without a target");
        if (::symlinkat(target, parent.get(), base.c_str()) != 0)
          throw_errno(origin_ + ": create " + path);
        break;
      }
      case AE_IFCHR:
      case AE_IFBLK:
      case AE_IFIFO: {
        if (!o_.devices) refuse(name, "is a device node or fifo, which this copy does not create");
        if (::mknodat(parent.get(), base.c_str(), type | 0600, la_.entry_rdev(e)) != 0)
          throw_errno(origin_ + ": create " + path);
        break;
      }
      default:
        created_.erase(path);
        return;  // sockets and unknown kinds: nothing to create
    }
    // Symlinks and nodes: metadata by name, never following.
    if (::fchownat(parent.get(), base.c_str(), uid(e), gid(e), AT_SYMLINK_NOFOLLOW) != 0)
      throw_errno(origin_ + ": chown " + path);
    if (type != AE_IFLNK && ::fchmodat(parent.get(), base.c_str(), perm(e), 0) != 0)
      throw_errno(origin_ + ": chmod " + path);
    auto t = times(e);
    ::utimensat(parent.get(), base.c_str(), t.data(), AT_SYMLINK_NOFOLLOW);
  }

  void whiteout(const std::vector<std::string>& c, const std::string& name) {
    Fd parent = parent_of(c, name, true);
    const std::string dir = join(c, c.size() - 1);
    auto in_layer = [&](const std::string& child) {
      return created_.count(dir.empty() ? child : dir + "/" + child) != 0;
    };
    if (c.back() == kOpaque) {
      Fd d(open_beneath(parent.get(), ".", O_RDONLY | O_DIRECTORY));
      if (!d) throw_errno(origin_ + ": open " + dir);
      std::unique_ptr<DIR, int (*)(DIR*)> it(::fdopendir(::dup(d.get())), ::closedir);
      if (!it) throw_errno(origin_ + ": read " + dir);
      std::vector<std::string> lower;
      while (dirent* de = ::readdir(it.get())) {
        std::string n = de->d_name;
        if (n != "." && n != ".." && !in_layer(n)) lower.push_back(n);
      }
      for (const auto& n : lower) remove_at(parent.get(), n);
      return;
    }
    std::string victim = c.back().substr(kWhiteout.size());
    if (victim.empty() || victim == "." || victim == "..") refuse(name, "is a malformed whiteout");
    if (!in_layer(victim)) remove_at(parent.get(), victim);
  }

  void hardlink(const std::vector<std::string>& c, const std::string& name, const char* target) {
    std::vector<std::string> t;
    try {
      t = entry_components(target);
    } catch (const Error& err) {
      refuse(name, std::string("links to '") + target + "': " + err.what());
    }
    if (t.empty()) refuse(name, "links to the root directory");
    Fd tparent = parent_of(t, name, false);
    struct stat st;
    if (::fstatat(tparent.get(), t.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      refuse(name, std::string("links to '") + target + "', which the archive has not created");
    if (S_ISDIR(st.st_mode)) refuse(name, std::string("links to the directory '") + target + "'");
    Fd parent = parent_of(c, name, true);
    const std::string path = join(c, c.size());
    if (join(t, t.size()) == path) return;  // a link to itself: already there
    remove_at(parent.get(), c.back());
    if (::linkat(tparent.get(), t.back().c_str(), parent.get(), c.back().c_str(), 0) != 0)
      throw_errno(origin_ + ": link " + path);
    created_.insert(path);
  }

  void write_data(int fd, archive_entry* e, const std::string& path) {
    const void* buf;
    size_t size;
    la_int64_t offset;
    for (;;) {
      int r = la_.read_data_block(a_, &buf, &size, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) archive_fail("read " + path);
      const auto* p = static_cast<const uint8_t*>(buf);
      while (size > 0) {
        ssize_t n = ::pwrite(fd, p, size, offset);
        if (n < 0) {
          if (errno == EINTR) continue;
          throw_errno(origin_ + ": write " + path);
        }
        p += n;
        size -= static_cast<size_t>(n);
        offset += n;
        stats_.bytes += static_cast<uint64_t>(n);
      }
    }
    if (la_.entry_size_is_set(e) && ::ftruncate(fd, la_.entry_size(e)) != 0)
      throw_errno(origin_ + ": size " + path);
  }

  // Owner, then mode (chown clears setid bits), then xattrs (chown clears file capabilities).
  void set_meta(int fd, archive_entry* e, const std::string& path) {
    if (::fchown(fd, uid(e), gid(e)) != 0) throw_errno(origin_ + ": chown " + path);
    if (::fchmod(fd, perm(e)) != 0) throw_errno(origin_ + ": chmod " + path);
    la_.entry_xattr_reset(e);
    const char* xname;
    const void* value;
    size_t size;
    while (la_.entry_xattr_next(e, &xname, &value, &size) == ARCHIVE_OK) {
      if (::fsetxattr(fd, xname, value, size, 0) != 0)
        throw_errno(origin_ + ": set extended attribute " + xname + " on " + path);
    }
  }

  uid_t uid(archive_entry* e) const {
    return o_.owner_uid ? *o_.owner_uid : static_cast<uid_t>(la_.entry_uid(e));
  }
  gid_t gid(archive_entry* e) const {
    return o_.owner_gid ? *o_.owner_gid : static_cast<gid_t>(la_.entry_gid(e));
  }
  mode_t perm(archive_entry* e) const {
    mode_t m = la_.entry_perm(e) & 07777;
    return o_.keep_setid ? m : m & ~mode_t(S_ISUID | S_ISGID);
  }
  std::array<timespec, 2> times(archive_entry* e) const {
    timespec t{la_.entry_mtime(e), la_.entry_mtime_nsec(e)};
    return {t, t};
  }

  const Libarchive& la_;
  archive* a_;
  int root_;
  const ExtractOptions& o_;
  const std::string& origin_;
  ExtractStats stats_;
  std::unordered_set<std::string> created_;  // paths this archive made (whiteouts spare them)
  std::vector<std::pair<std::string, std::array<timespec, 2>>> dir_times_;
};

}  // namespace

std::vector<std::string> entry_components(std::string_view name) {
  if (name.find('\0') != std::string_view::npos) fail("has a NUL byte in its name");
  if (!name.empty() && name.front() == '/') fail("has an absolute name");
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= name.size()) {
    size_t j = name.find('/', i);
    if (j == std::string_view::npos) j = name.size();
    std::string_view part = name.substr(i, j - i);
    if (part == "..") fail("has a '..' component");
    if (part.size() > NAME_MAX) fail("has a component longer than " + std::to_string(NAME_MAX));
    if (!part.empty() && part != ".") out.emplace_back(part);
    i = j + 1;
  }
  return out;
}

ExtractStats extract_archive(int archive_fd, int root_fd, const ExtractOptions& opts,
                             const std::string& origin) {
  const Libarchive& la = libarchive();
  std::unique_ptr<archive, int (*)(archive*)> a(la.read_new(), la.read_free);
  if (!a) fail("archive_read_new: out of memory");
  la.read_support_filter_all(a.get());
  la.read_support_format_tar(a.get());
  if (la.read_open_fd(a.get(), archive_fd, 1 << 16) != ARCHIVE_OK) {
    const char* s = la.error_string(a.get());
    fail(origin + ": " + (s ? s : "cannot read"),
         "check that it is a tar archive (plain, gzip, xz, zstd or bzip2)");
  }
  return Extractor(la, a.get(), root_fd, opts, origin).run();
}

}  // namespace space::store

// TreeWriter: see tree_writer.h. Directories on the way to an entry are opened one component at
// a time with openat2 beneath the previous one; nothing is ever resolved from a path string.
#include "util/tree_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>

#include "util/error.h"
#include "util/open_resolved.h"

namespace space {
namespace {

constexpr uint64_t kResolve =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
constexpr std::string_view kWhiteout = ".wh.";
constexpr std::string_view kOpaque = ".wh..wh..opq";

// openat2 of `name` (one or more components) beneath `dir`; -1 with errno on failure.
int open_beneath(int dir, const std::string& name, int flags) {
  return open_resolved(dir, name, flags, kResolve);
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

std::array<timespec, 2> times(const TreeEntry& e) {
  timespec t{static_cast<time_t>(e.mtime_sec), static_cast<long>(e.mtime_nsec)};
  return {t, t};
}

mode_t node_type(EntryKind k) {
  return k == EntryKind::CharDev ? S_IFCHR : k == EntryKind::BlockDev ? S_IFBLK : S_IFIFO;
}

}  // namespace

TreeWriter::TreeWriter(int root_fd, TreeWriteOptions opts, std::string origin)
    : root_(root_fd), o_(std::move(opts)), origin_(std::move(origin)) {
  if (!o_.top.empty() && entry_components(o_.top).size() != 1)
    fail(origin_ + ": '" + o_.top + "' is not a single file name");
}

TreeWriter::~TreeWriter() {
  if (file_) ::unlinkat(file_dir_, file_tmp_.c_str(), 0);
}

void TreeWriter::refuse(const std::string& name, const std::string& why) const {
  fail(origin_ + ": entry '" + name + "' " + why,
       "the stream is refused from this entry on; nothing outside the destination was written");
}

std::vector<std::string> TreeWriter::components(const std::string& name) const {
  std::vector<std::string> c;
  try {
    c = entry_components(name);
  } catch (const Error& err) {
    refuse(name, err.what());
  }
  if (!o_.top.empty()) c.insert(c.begin(), o_.top);
  return c;
}

mode_t TreeWriter::take_perm(const TreeEntry& e) {
  const mode_t m = e.mode & 07777, setid = S_ISUID | S_ISGID;
  if (o_.keep_setid || !(m & setid)) return m;
  stats_.setid_dropped++;
  return m & ~setid;
}

void TreeWriter::note_created(const std::string& path) {
  if (created_set_.insert(path).second) created_.push_back(path);
}

// The directory holding `c`'s last component, made (0755) where missing. Never through a
// symlink: a parent that is one is refused.
Fd TreeWriter::parent_of(const std::vector<std::string>& c, const std::string& name, bool create) {
  Fd dir(::fcntl(root_, F_DUPFD_CLOEXEC, 0));
  if (!dir) throw_errno("dup");
  for (size_t i = 0; i + 1 < c.size(); i++) {
    Fd next(open_beneath(dir.get(), c[i], O_PATH | O_DIRECTORY));
    if (!next && errno == ENOENT && create) {
      if (::mkdirat(dir.get(), c[i].c_str(), 0755) == 0)
        note_created(join_components(c, i + 1));
      else if (errno != EEXIST)
        throw_errno(origin_ + ": create " + join_components(c, i + 1));
      next = Fd(open_beneath(dir.get(), c[i], O_PATH | O_DIRECTORY));
    }
    if (!next) {
      if (errno == ELOOP || errno == EXDEV) refuse(name, "goes through a symbolic link");
      if (errno == ENOTDIR)
        refuse(name, "goes through " + join_components(c, i + 1) + ", not a directory");
      throw_errno(origin_ + ": open " + join_components(c, i + 1) + " for '" + name + "'");
    }
    dir = std::move(next);
  }
  return dir;
}

int TreeWriter::cached_parent(const std::vector<std::string>& c, const std::string& name,
                              bool create) {
  std::string dir = join_components(c, c.size() - 1);
  if (dir_cache_ && dir == dir_cache_path_) return dir_cache_.get();
  dir_cache_ = parent_of(c, name, create);
  dir_cache_path_ = std::move(dir);
  return dir_cache_.get();
}

void TreeWriter::remove(int dir, const std::string& name) {
  remove_at(dir, name);
  dir_cache_.reset();  // it may have been beneath what went
  dir_cache_path_.clear();
}

void TreeWriter::begin_file(int parent, const std::string& base, const std::string& path,
                            const TreeEntry& e, std::optional<mode_t> existing) {
  // A new name is written directly (removed again if the copy fails); an existing one is
  // replaced by a temporary file renamed over it by end_file(), once complete.
  file_direct_ = !existing;
  file_replaces_dir_ = existing && S_ISDIR(*existing);
  for (int attempt = 0;; attempt++) {
    file_tmp_ = file_direct_ ? base
                             : ".space-tmp." + std::to_string(::getpid()) + "." +
                                   std::to_string(stats_.entries) + "." + std::to_string(attempt);
    file_ = Fd(::openat(parent, file_tmp_.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (file_ || errno != EEXIST || file_direct_ || attempt > 100) break;
  }
  if (!file_) throw_errno(origin_ + ": create " + path);
  file_dir_ = parent;
  file_path_ = path;
  file_entry_ = e;
  file_entry_.name = base;
  file_written_ = 0;
  if (!existing) note_created(path);
  created_set_.insert(path);
}

void TreeWriter::begin(const TreeEntry& e) {
  if (file_) fail(origin_ + ": entry '" + e.name + "' begins inside the previous file");
  std::vector<std::string> c = components(e.name);
  if (c.empty()) return;  // the root itself: its own metadata is the caller's
  stats_.entries++;
  const std::string path = join_components(c);
  const std::string& base = c.back();

  if (o_.whiteouts && base.starts_with(kWhiteout)) return whiteout(c, e.name);
  if (e.kind == EntryKind::Hardlink) return hardlink(c, e);
  const bool node =
      e.kind == EntryKind::CharDev || e.kind == EntryKind::BlockDev || e.kind == EntryKind::Fifo;
  if (node && !o_.devices) {
    if (!o_.skip_devices)
      refuse(e.name, "is a device node or fifo, which this copy does not create");
    stats_.skipped++;
    return;
  }

  int parent = cached_parent(c, e.name, true);
  struct stat st;
  const bool exists = ::fstatat(parent, base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  const bool keep_dir = exists && S_ISDIR(st.st_mode) && e.kind == EntryKind::Dir;

  if (e.kind == EntryKind::File)
    return begin_file(parent, base, path, e,
                      exists ? std::optional<mode_t>(st.st_mode) : std::nullopt);

  if (exists && !keep_dir) {
    remove(parent, base);
    parent = cached_parent(c, e.name, true);
  }
  if (!exists) note_created(path);
  created_set_.insert(path);
  switch (e.kind) {
    case EntryKind::Dir: {
      if (!keep_dir && ::mkdirat(parent, base.c_str(), 0700) != 0)
        throw_errno(origin_ + ": create " + path);
      Fd d(open_beneath(parent, base, O_RDONLY | O_DIRECTORY));
      if (!d) throw_errno(origin_ + ": open " + path);
      set_meta(d.get(), e, path);
      dir_times_.emplace_back(path, e);
      dir_times_.back().second.xattrs.clear();
      return;
    }
    case EntryKind::Symlink:
      if (e.target.empty()) refuse(e.name, "is a symbolic link without a target");
      if (::symlinkat(e.target.c_str(), parent, base.c_str()) != 0)
        throw_errno(origin_ + ": create " + path);
      break;
    default:  // device nodes and fifos
      if (::mknodat(parent, base.c_str(), node_type(e.kind) | 0600, static_cast<dev_t>(e.rdev)) !=
          0)
        throw_errno(origin_ + ": create " + path);
      break;
  }
  // Symlinks and nodes: metadata by name, never following.
  if (::fchownat(parent, base.c_str(), uid(e), gid(e), AT_SYMLINK_NOFOLLOW) != 0)
    throw_errno(origin_ + ": chown " + path);
  if (e.kind != EntryKind::Symlink && ::fchmodat(parent, base.c_str(), take_perm(e), 0) != 0)
    throw_errno(origin_ + ": chmod " + path);
  auto t = times(e);
  ::utimensat(parent, base.c_str(), t.data(), AT_SYMLINK_NOFOLLOW);
}

void TreeWriter::data(std::span<const uint8_t> bytes, uint64_t offset) {
  if (!file_) fail(origin_ + ": file data outside a file entry");
  if (offset > file_entry_.size || bytes.size() > file_entry_.size - offset)
    refuse(file_path_, "has more data than its size of " + std::to_string(file_entry_.size));
  if (o_.max_bytes && bytes.size() > o_.max_bytes - std::min(o_.max_bytes, stats_.bytes))
    fail(origin_ + ": the copy exceeds its size limit of " + std::to_string(o_.max_bytes) +
             " bytes at " + file_path_,
         o_.max_bytes_hint);
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::pwrite(file_.get(), p, left, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(origin_ + ": write " + file_path_);
    }
    p += n;
    left -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
    stats_.bytes += static_cast<uint64_t>(n);
  }
  file_written_ = std::max(file_written_, offset);
}

void TreeWriter::end_file() {
  if (!file_) fail(origin_ + ": end of a file that was not begun");
  const TreeEntry& e = file_entry_;
  if (file_written_ != e.size && ::ftruncate(file_.get(), static_cast<off_t>(e.size)) != 0)
    throw_errno(origin_ + ": size " + file_path_);
  set_meta(file_.get(), e, file_path_);
  auto t = times(e);
  ::futimens(file_.get(), t.data());
  if (!file_direct_) {
    if (file_replaces_dir_) remove_at(file_dir_, e.name);
    if (::renameat(file_dir_, file_tmp_.c_str(), file_dir_, e.name.c_str()) != 0)
      throw_errno(origin_ + ": rename into place " + file_path_);
  }
  file_.reset();
  if (file_replaces_dir_) {
    dir_cache_.reset();  // it may have been beneath the directory that went
    dir_cache_path_.clear();
  }
}

void TreeWriter::finish() {
  if (file_) fail(origin_ + ": the stream ended inside " + file_path_);
  for (auto it = dir_times_.rbegin(); it != dir_times_.rend(); ++it) {
    Fd d(open_beneath(root_, it->first, O_RDONLY | O_DIRECTORY));
    auto t = times(it->second);
    if (d) ::futimens(d.get(), t.data());
  }
}

void TreeWriter::remove_created() noexcept {
  if (file_) {
    ::unlinkat(file_dir_, file_tmp_.c_str(), 0);
    file_.reset();
  }
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    try {
      std::vector<std::string> c = entry_components(*it);
      Fd parent = parent_of(c, *it, false);
      remove_at(parent.get(), c.back());
    } catch (...) {
      // Gone already, or beneath something replaced meanwhile: nothing more to undo there.
    }
  }
  created_.clear();
}

void TreeWriter::whiteout(const std::vector<std::string>& c, const std::string& name) {
  Fd parent = parent_of(c, name, true);
  dir_cache_.reset();  // what it removes may hold the cached directory
  dir_cache_path_.clear();
  const std::string dir = join_components(c, c.size() - 1);
  auto in_layer = [&](const std::string& child) {
    return created_set_.count(dir.empty() ? child : dir + "/" + child) != 0;
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

void TreeWriter::hardlink(const std::vector<std::string>& c, const TreeEntry& e) {
  std::vector<std::string> t;
  try {
    t = entry_components(e.target);
  } catch (const Error& err) {
    refuse(e.name, "links to '" + e.target + "': " + err.what());
  }
  if (!o_.top.empty()) t.insert(t.begin(), o_.top);
  if (t.empty()) refuse(e.name, "links to the root directory");
  Fd tparent = parent_of(t, e.name, false);
  struct stat st;
  if (::fstatat(tparent.get(), t.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    refuse(e.name, "links to '" + e.target + "', which the stream has not created");
  if (S_ISDIR(st.st_mode)) refuse(e.name, "links to the directory '" + e.target + "'");
  const std::string path = join_components(c);
  if (join_components(t) == path) return;  // a link to itself: already there
  int parent = cached_parent(c, e.name, true);
  struct stat old;
  const bool exists = ::fstatat(parent, c.back().c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists) {
    remove(parent, c.back());
    parent = cached_parent(c, e.name, true);
  }
  if (::linkat(tparent.get(), t.back().c_str(), parent, c.back().c_str(), 0) != 0)
    throw_errno(origin_ + ": link " + path);
  if (!exists) note_created(path);
  created_set_.insert(path);
}

// Owner, then mode (chown clears setid bits), then xattrs (chown clears file capabilities).
void TreeWriter::set_meta(int fd, const TreeEntry& e, const std::string& path) {
  if (::fchown(fd, uid(e), gid(e)) != 0) throw_errno(origin_ + ": chown " + path);
  if (::fchmod(fd, take_perm(e)) != 0) throw_errno(origin_ + ": chmod " + path);
  if (!o_.xattrs) return;
  for (const auto& [name, value] : e.xattrs) {
    if (!o_.privileged_xattrs && (name.starts_with("security.") || name.starts_with("trusted."))) {
      stats_.xattrs_dropped++;
      continue;
    }
    if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) != 0)
      throw_errno(origin_ + ": set extended attribute " + name + " on " + path);
  }
}

}  // namespace space

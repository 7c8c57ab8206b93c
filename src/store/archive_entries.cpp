// Tar archives as tree entries; see archive_entries.h. Every libarchive call goes through the
// dlopen()ed table (store/libarchive.h).
#include "store/archive_entries.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "store/libarchive.h"
#include "util/error.h"

namespace space::store {
namespace {

[[noreturn]] void archive_fail(const Libarchive& la, archive* a, const std::string& origin,
                               const std::string& what) {
  const char* s = la.error_string(a);
  fail(origin + ": " + what + ": " + (s ? s : "unreadable archive"),
       "check that it is a complete tar archive (plain, gzip, xz, zstd or bzip2)");
}

// The tree entry for archive entry `e`; false for kinds a tree cannot hold (sockets).
bool to_entry(const Libarchive& la, archive_entry* e, TreeEntry& out) {
  const char* name = la.entry_pathname(e);
  out = TreeEntry{};
  out.name = name ? name : "";
  if (const char* target = la.entry_hardlink(e)) {
    out.kind = EntryKind::Hardlink;
    out.target = target;
  } else {
    switch (la.entry_filetype(e)) {
      case AE_IFDIR:
        out.kind = EntryKind::Dir;
        break;
      case AE_IFREG:
        out.kind = EntryKind::File;
        break;
      case AE_IFLNK: {
        out.kind = EntryKind::Symlink;
        const char* target = la.entry_symlink(e);
        out.target = target ? target : "";
        break;
      }
      case AE_IFCHR:
        out.kind = EntryKind::CharDev;
        break;
      case AE_IFBLK:
        out.kind = EntryKind::BlockDev;
        break;
      case AE_IFIFO:
        out.kind = EntryKind::Fifo;
        break;
      default:
        return false;
    }
  }
  out.mode = static_cast<uint32_t>(la.entry_perm(e) & 07777);
  out.uid = static_cast<uint32_t>(la.entry_uid(e));
  out.gid = static_cast<uint32_t>(la.entry_gid(e));
  out.mtime_sec = la.entry_mtime(e);
  out.mtime_nsec = static_cast<uint32_t>(la.entry_mtime_nsec(e));
  out.rdev = la.entry_rdev(e);
  if (out.kind == EntryKind::File && la.entry_size_is_set(e))
    out.size = static_cast<uint64_t>(la.entry_size(e));
  la.entry_xattr_reset(e);
  const char* xname;
  const void* value;
  size_t size;
  while (la.entry_xattr_next(e, &xname, &value, &size) == ARCHIVE_OK)
    out.xattrs.emplace_back(xname, std::string(static_cast<const char*>(value), size));
  return true;
}

}  // namespace

void read_archive_entries(int fd, const std::string& origin,
                          const std::function<void(const TreeEntry&, const ArchiveData&)>& each) {
  const Libarchive& la = libarchive();
  std::unique_ptr<archive, int (*)(archive*)> a(la.read_new(), la.read_free);
  if (!a) fail("archive_read_new: out of memory");
  la.read_support_filter_all(a.get());
  la.read_support_format_tar(a.get());
  if (la.read_open_fd(a.get(), fd, 1 << 16) != ARCHIVE_OK) {
    const char* s = la.error_string(a.get());
    fail(origin + ": " + (s ? s : "cannot read"),
         "check that it is a tar archive (plain, gzip, xz, zstd or bzip2)");
  }
  archive_entry* e = nullptr;
  TreeEntry entry;
  for (;;) {
    int r = la.read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) archive_fail(la, a.get(), origin, "read");
    if (!to_entry(la, e, entry)) continue;
    each(entry, [&](const DataSink& sink) {
      const void* buf;
      size_t size;
      la_int64_t offset;
      for (;;) {
        int rr = la.read_data_block(a.get(), &buf, &size, &offset);
        if (rr == ARCHIVE_EOF) break;
        if (rr < ARCHIVE_WARN) archive_fail(la, a.get(), origin, "read " + entry.name);
        sink({static_cast<const uint8_t*>(buf), size}, static_cast<uint64_t>(offset));
      }
    });
  }
}

ArchiveWriter::ArchiveWriter(int fd, std::string top, std::string origin)
    : fd_(fd), top_(std::move(top)), origin_(std::move(origin)) {
  if (!top_.empty() && entry_components(top_).size() != 1)
    fail(origin_ + ": '" + top_ + "' is not a single file name");
  const Libarchive& la = libarchive();
  a_ = la.write_new();
  if (!a_) fail("archive_write_new: out of memory");
  // The last block padded to full size only for devices and stdout, as archive_write_open_fd
  // would.
  struct stat st;
  const bool pad =
      fd == 1 || (::fstat(fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)));
  if (la.write_set_format_pax_restricted(a_) != ARCHIVE_OK ||
      la.write_set_bytes_in_last_block(a_, pad ? 0 : 1) != ARCHIVE_OK ||
      la.write_open2(a_, this, nullptr, &ArchiveWriter::write_out, nullptr, nullptr) !=
          ARCHIVE_OK) {
    // A constructor that throws runs no destructor: the handle is freed here (after the error
    // message was read from it).
    try {
      fail_write("open");
    } catch (...) {
      abandoned_ = true;
      la.write_free(a_);
      a_ = nullptr;
      throw;
    }
  }
}

ArchiveWriter::~ArchiveWriter() {
  if (!a_) return;
  // Not closed: abandoned. What libarchive still holds and its end-of-archive blocks are
  // dropped (write_out), so the stream ends where it was.
  abandoned_ = !closed_;
  libarchive().write_free(a_);
}

la_ssize_t ArchiveWriter::write_out(archive*, void* self, const void* buf, size_t n) {
  auto* w = static_cast<ArchiveWriter*>(self);
  if (w->abandoned_) return static_cast<la_ssize_t>(n);
  const char* p = static_cast<const char*>(buf);
  for (size_t left = n; left > 0;) {
    ssize_t k = ::write(w->fd_, p, left);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      w->write_errno_ = errno;
      return -1;
    }
    p += k;
    left -= static_cast<size_t>(k);
  }
  return static_cast<la_ssize_t>(n);
}

void ArchiveWriter::fail_write(const std::string& what) {
  if (write_errno_) throw_errno(origin_ + ": " + what, write_errno_);
  const char* s = libarchive().error_string(a_);
  fail(origin_ + ": " + what + ": " + (s ? s : "cannot write the tar stream"));
}

void ArchiveWriter::refuse(const std::string& name, const std::string& why) const {
  fail(origin_ + ": entry '" + name + "' " + why,
       "discard the tar stream: it stops before this entry, incomplete; a guest that sends such "
       "an entry is not to be trusted");
}

std::vector<std::string> ArchiveWriter::components(const std::string& name,
                                                   const std::string& entry,
                                                   const char* what) const {
  std::vector<std::string> c;
  try {
    c = entry_components(name);
  } catch (const Error& err) {
    refuse(entry, what + std::string(err.what()));
  }
  if (!top_.empty()) c.insert(c.begin(), top_);
  return c;
}

std::string ArchiveWriter::symlink_above(const std::vector<std::string>& c) const {
  std::string path;
  for (size_t i = 0; i + 1 < c.size(); i++) {
    path += (i ? "/" : "") + c[i];
    if (symlinks_.count(path)) return path;
  }
  return {};
}

void ArchiveWriter::begin(const TreeEntry& e) {
  // Every check comes before libarchive sees anything of the entry.
  const std::vector<std::string> c = components(e.name, e.name, "");
  const std::string name = c.empty() ? std::string(".") : join_components(c);
  if (c.empty() && e.kind != EntryKind::Dir)
    refuse(e.name, "is the root of the stream but not a directory");
  if (std::string l = symlink_above(c); !l.empty())
    refuse(e.name, "lies beneath '" + l + "', a symbolic link earlier in the stream");
  if (symlinks_.count(name))
    refuse(e.name, "names '" + name + "' again, a symbolic link earlier in the stream");
  EntryKind kind = e.kind;
  std::string link = e.target;  // a Symlink's target, or a Hardlink's (as written)
  if (kind == EntryKind::Symlink) {
    if (link.empty()) refuse(e.name, "is a symbolic link without a target");
    if (link.find('\0') != std::string::npos) refuse(e.name, "has a NUL byte in its link target");
  } else if (kind == EntryKind::Hardlink) {
    const std::string to = "links to '" + e.target + "'";
    std::vector<std::string> t = components(e.target, e.name, (to + ", which ").c_str());
    if (t.empty()) refuse(e.name, "links to the root directory");
    link = join_components(t);
    if (std::string l = symlink_above(t); !l.empty())
      refuse(e.name, to + ", beneath '" + l + "', a symbolic link earlier in the stream");
    if (auto it = symlinks_.find(link); it != symlinks_.end()) {
      kind = EntryKind::Symlink;  // a hard-linked symbolic link: written as a copy of it
      link = it->second;
    } else if (!linkable_.count(link)) {
      refuse(e.name, to + ", which is not an earlier file of the stream");
    }
  }

  const Libarchive& la = libarchive();
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> h(la.entry_new(), la.entry_free);
  if (!h) fail("archive_entry_new: out of memory");
  la.entry_set_pathname(h.get(), name.c_str());
  switch (kind) {
    case EntryKind::Dir:
      la.entry_set_filetype(h.get(), AE_IFDIR);
      break;
    case EntryKind::File:
      la.entry_set_filetype(h.get(), AE_IFREG);
      la.entry_set_size(h.get(), static_cast<la_int64_t>(e.size));
      break;
    case EntryKind::Symlink:
      la.entry_set_filetype(h.get(), AE_IFLNK);
      la.entry_set_symlink(h.get(), link.c_str());
      break;
    case EntryKind::Hardlink:
      la.entry_set_filetype(h.get(), AE_IFREG);
      la.entry_set_hardlink(h.get(), link.c_str());
      la.entry_set_size(h.get(), 0);
      break;
    case EntryKind::CharDev:
      la.entry_set_filetype(h.get(), AE_IFCHR);
      break;
    case EntryKind::BlockDev:
      la.entry_set_filetype(h.get(), AE_IFBLK);
      break;
    case EntryKind::Fifo:
      la.entry_set_filetype(h.get(), AE_IFIFO);
      break;
  }
  la.entry_set_perm(h.get(), static_cast<mode_t>(e.mode & 07777));
  la.entry_set_uid(h.get(), e.uid);
  la.entry_set_gid(h.get(), e.gid);
  la.entry_set_mtime(h.get(), e.mtime_sec, e.mtime_nsec);
  if (kind == EntryKind::CharDev || kind == EntryKind::BlockDev)
    la.entry_set_rdev(h.get(), static_cast<dev_t>(e.rdev));
  for (const auto& [xname, value] : e.xattrs)
    la.entry_xattr_add_entry(h.get(), xname.c_str(), value.data(), value.size());
  if (la.write_header(a_, h.get()) < ARCHIVE_WARN) fail_write("write " + name);
  if (kind == EntryKind::Symlink) {
    symlinks_[name] = link;
    linkable_.erase(name);
  } else if (kind == EntryKind::Dir) {
    linkable_.erase(name);
  } else {
    linkable_.insert(name);
  }
}

void ArchiveWriter::data(std::span<const uint8_t> bytes) {
  const Libarchive& la = libarchive();
  while (!bytes.empty()) {
    la_ssize_t n = la.write_data(a_, bytes.data(), bytes.size());
    if (n <= 0) fail_write("write data");
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void ArchiveWriter::close() {
  if (closed_) return;
  closed_ = true;
  if (libarchive().write_close(a_) != ARCHIVE_OK) fail_write("finish");
}

}  // namespace space::store

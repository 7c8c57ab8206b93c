// dlopen() of libarchive; see libarchive.h.
#include "store/libarchive.h"

#include <mutex>
#include <string>

#include "util/dynlib.h"

namespace space::store {
namespace {
constexpr const char* kSoname = "libarchive.so.13";

constexpr const char* kHint = "install Debian's libarchive13 (apt-get install libarchive13)";

template <class F>
void bind(void* lib, F& fn, const char* name) {
  dynlib::bind(fn, {lib}, name, kSoname, kHint);
}

Libarchive load() {
  void* lib = dynlib::open(kSoname, kHint);
  Libarchive a{};
  bind(lib, a.read_new, "archive_read_new");
  bind(lib, a.read_support_filter_all, "archive_read_support_filter_all");
  bind(lib, a.read_support_format_tar, "archive_read_support_format_tar");
  bind(lib, a.read_open_fd, "archive_read_open_fd");
  bind(lib, a.read_next_header, "archive_read_next_header");
  bind(lib, a.read_data_block, "archive_read_data_block");
  bind(lib, a.read_free, "archive_read_free");
  bind(lib, a.error_string, "archive_error_string");
  bind(lib, a.error_no, "archive_errno");
  bind(lib, a.entry_pathname, "archive_entry_pathname");
  bind(lib, a.entry_filetype, "archive_entry_filetype");
  bind(lib, a.entry_hardlink, "archive_entry_hardlink");
  bind(lib, a.entry_symlink, "archive_entry_symlink");
  bind(lib, a.entry_perm, "archive_entry_perm");
  bind(lib, a.entry_uid, "archive_entry_uid");
  bind(lib, a.entry_gid, "archive_entry_gid");
  bind(lib, a.entry_mtime, "archive_entry_mtime");
  bind(lib, a.entry_mtime_nsec, "archive_entry_mtime_nsec");
  bind(lib, a.entry_rdev, "archive_entry_rdev");
  bind(lib, a.entry_size, "archive_entry_size");
  bind(lib, a.entry_size_is_set, "archive_entry_size_is_set");
  bind(lib, a.entry_xattr_reset, "archive_entry_xattr_reset");
  bind(lib, a.entry_xattr_next, "archive_entry_xattr_next");
  bind(lib, a.write_new, "archive_write_new");
  bind(lib, a.write_set_format_pax_restricted, "archive_write_set_format_pax_restricted");
  bind(lib, a.write_open2, "archive_write_open2");
  bind(lib, a.write_set_bytes_in_last_block, "archive_write_set_bytes_in_last_block");
  bind(lib, a.write_header, "archive_write_header");
  bind(lib, a.write_data, "archive_write_data");
  bind(lib, a.write_close, "archive_write_close");
  bind(lib, a.write_free, "archive_write_free");
  bind(lib, a.entry_new, "archive_entry_new");
  bind(lib, a.entry_free, "archive_entry_free");
  bind(lib, a.entry_set_pathname, "archive_entry_set_pathname");
  bind(lib, a.entry_set_filetype, "archive_entry_set_filetype");
  bind(lib, a.entry_set_perm, "archive_entry_set_perm");
  bind(lib, a.entry_set_uid, "archive_entry_set_uid");
  bind(lib, a.entry_set_gid, "archive_entry_set_gid");
  bind(lib, a.entry_set_mtime, "archive_entry_set_mtime");
  bind(lib, a.entry_set_size, "archive_entry_set_size");
  bind(lib, a.entry_set_symlink, "archive_entry_set_symlink");
  bind(lib, a.entry_set_hardlink, "archive_entry_set_hardlink");
  bind(lib, a.entry_set_rdev, "archive_entry_set_rdev");
  bind(lib, a.entry_xattr_add_entry, "archive_entry_xattr_add_entry");
  return a;  // the library stays loaded for the life of the process
}
}  // namespace

const Libarchive& libarchive() {
  static std::once_flag once;
  static Libarchive table;
  std::call_once(once, [] { table = load(); });
  return table;
}

}  // namespace space::store

// libarchive, loaded on first use with dlopen(): the archive readers (tar in every compression
// Debian's libarchive13 reads) for image import and `space cp`, and the pax writer for cp. Linking
// it would make every `space` process, every VMM included, map libarchive and its sixteen
// dependencies at start-up (about 2 ms each time, measured); only the commands that read archives
// pay for it this way. The table holds the functions space uses, resolved once; a missing library
// is an Error naming the package.
#pragma once
#include <archive.h>
#include <archive_entry.h>

namespace space::store {

struct Libarchive {
  decltype(&::archive_read_new) read_new;
  decltype(&::archive_read_support_filter_all) read_support_filter_all;
  decltype(&::archive_read_support_format_tar) read_support_format_tar;
  decltype(&::archive_read_open_fd) read_open_fd;
  decltype(&::archive_read_next_header) read_next_header;
  decltype(&::archive_read_data_block) read_data_block;
  decltype(&::archive_read_free) read_free;
  decltype(&::archive_error_string) error_string;
  decltype(&::archive_errno) error_no;
  decltype(&::archive_entry_pathname) entry_pathname;
  decltype(&::archive_entry_filetype) entry_filetype;
  decltype(&::archive_entry_hardlink) entry_hardlink;
  decltype(&::archive_entry_symlink) entry_symlink;
  decltype(&::archive_entry_perm) entry_perm;
  decltype(&::archive_entry_uid) entry_uid;
  decltype(&::archive_entry_gid) entry_gid;
  decltype(&::archive_entry_mtime) entry_mtime;
  decltype(&::archive_entry_mtime_nsec) entry_mtime_nsec;
  decltype(&::archive_entry_rdev) entry_rdev;
  decltype(&::archive_entry_size) entry_size;
  decltype(&::archive_entry_size_is_set) entry_size_is_set;
  decltype(&::archive_entry_xattr_reset) entry_xattr_reset;
  decltype(&::archive_entry_xattr_next) entry_xattr_next;
  // Writing (space cp to stdout).
  decltype(&::archive_write_new) write_new;
  decltype(&::archive_write_set_format_pax_restricted) write_set_format_pax_restricted;
  decltype(&::archive_write_open2) write_open2;
  decltype(&::archive_write_set_bytes_in_last_block) write_set_bytes_in_last_block;
  decltype(&::archive_write_header) write_header;
  decltype(&::archive_write_data) write_data;
  decltype(&::archive_write_close) write_close;
  decltype(&::archive_write_free) write_free;
  decltype(&::archive_entry_new) entry_new;
  decltype(&::archive_entry_free) entry_free;
  decltype(&::archive_entry_set_pathname) entry_set_pathname;
  decltype(&::archive_entry_set_filetype) entry_set_filetype;
  decltype(&::archive_entry_set_perm) entry_set_perm;
  decltype(&::archive_entry_set_uid) entry_set_uid;
  decltype(&::archive_entry_set_gid) entry_set_gid;
  decltype(&::archive_entry_set_mtime) entry_set_mtime;
  decltype(&::archive_entry_set_size) entry_set_size;
  decltype(&::archive_entry_set_symlink) entry_set_symlink;
  decltype(&::archive_entry_set_hardlink) entry_set_hardlink;
  decltype(&::archive_entry_set_rdev) entry_set_rdev;
  decltype(&::archive_entry_xattr_add_entry) entry_xattr_add_entry;
};

// The loaded library; throws space::Error (with an apt-get hint) if it cannot be loaded.
const Libarchive& libarchive();

}  // namespace space::store

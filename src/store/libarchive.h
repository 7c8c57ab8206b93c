// libarchive, loaded on first use with dlopen(): the archive readers (tar in every compression
// Debian's libarchive13 reads) for image import and `space cp`, and the pax writer for cp. Linking
// it would make every `space` process, every VMM included, map libarchive and its sixteen
// dependencies at start-up (about 2 ms each time, measured); only the commands that read archives
// pay for it this way. The table holds the functions space uses, listed once in
// SPACE_LIBARCHIVE_FUNCTIONS and resolved once; a missing library is an Error naming the package.
#pragma once
#include <archive.h>
#include <archive_entry.h>

namespace space::store {

// Each function space calls: the table's member, and the library's symbol.
#define SPACE_LIBARCHIVE_FUNCTIONS(X)                                         \
  X(read_new, archive_read_new)                                               \
  X(read_support_filter_all, archive_read_support_filter_all)                 \
  X(read_support_format_tar, archive_read_support_format_tar)                 \
  X(read_open_fd, archive_read_open_fd)                                       \
  X(read_next_header, archive_read_next_header)                               \
  X(read_data_block, archive_read_data_block)                                 \
  X(read_free, archive_read_free)                                             \
  X(error_string, archive_error_string)                                       \
  X(error_no, archive_errno)                                                  \
  X(entry_pathname, archive_entry_pathname)                                   \
  X(entry_filetype, archive_entry_filetype)                                   \
  X(entry_hardlink, archive_entry_hardlink)                                   \
  X(entry_symlink, archive_entry_symlink)                                     \
  X(entry_perm, archive_entry_perm)                                           \
  X(entry_uid, archive_entry_uid)                                             \
  X(entry_gid, archive_entry_gid)                                             \
  X(entry_mtime, archive_entry_mtime)                                         \
  X(entry_mtime_nsec, archive_entry_mtime_nsec)                               \
  X(entry_rdev, archive_entry_rdev)                                           \
  X(entry_size, archive_entry_size)                                           \
  X(entry_size_is_set, archive_entry_size_is_set)                             \
  X(entry_xattr_reset, archive_entry_xattr_reset)                             \
  X(entry_xattr_next, archive_entry_xattr_next)                               \
  X(write_new, archive_write_new)                                             \
  X(write_set_format_pax_restricted, archive_write_set_format_pax_restricted) \
  X(write_open2, archive_write_open2)                                         \
  X(write_set_bytes_in_last_block, archive_write_set_bytes_in_last_block)     \
  X(write_header, archive_write_header)                                       \
  X(write_data, archive_write_data)                                           \
  X(write_close, archive_write_close)                                         \
  X(write_free, archive_write_free)                                           \
  X(entry_new, archive_entry_new)                                             \
  X(entry_free, archive_entry_free)                                           \
  X(entry_set_pathname, archive_entry_set_pathname)                           \
  X(entry_set_filetype, archive_entry_set_filetype)                           \
  X(entry_set_perm, archive_entry_set_perm)                                   \
  X(entry_set_uid, archive_entry_set_uid)                                     \
  X(entry_set_gid, archive_entry_set_gid)                                     \
  X(entry_set_mtime, archive_entry_set_mtime)                                 \
  X(entry_set_size, archive_entry_set_size)                                   \
  X(entry_set_symlink, archive_entry_set_symlink)                             \
  X(entry_set_hardlink, archive_entry_set_hardlink)                           \
  X(entry_set_rdev, archive_entry_set_rdev)                                   \
  X(entry_xattr_add_entry, archive_entry_xattr_add_entry)

struct Libarchive {
#define SPACE_LIBARCHIVE_SLOT(member, symbol) decltype(&::symbol) member;
  SPACE_LIBARCHIVE_FUNCTIONS(SPACE_LIBARCHIVE_SLOT)
#undef SPACE_LIBARCHIVE_SLOT
};

// The loaded library; throws space::Error (with an apt-get hint) if it cannot be loaded.
const Libarchive& libarchive();

}  // namespace space::store

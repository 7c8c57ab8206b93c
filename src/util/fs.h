// Filesystem helpers with the guarantees the lifecycle code relies on: atomic replacement of small
// files (temp file in the same directory, fsync, rename, fsync of the directory), mkdir -p, an
// rm -rf that never follows symlinks nor descends into another mount, and a fast copy of large
// sparse images (FICLONE reflink when the filesystem can, otherwise data-extents only).
// Every failure is a space::Error naming the path and the errno.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace space::fs {

// Whether a write must reach the disk before the call returns (fsync of the file and directory).
enum class Sync { Durable, Volatile };

// Replaces `path` with `data` atomically (readers see the old or the new content), and durably
// unless `sync` is Volatile (still atomic for readers, but a power cut may lose it).
void write_file_atomic(const std::string& path, std::string_view data, mode_t mode = 0644,
                       Sync sync = Sync::Durable);
// A file named by a directory descriptor and a name in it, for code that opens nothing by path (a
// jailed VMM); `shown` names it in messages.
struct FileAt {
  int dir = -100;  // AT_FDCWD
  std::string name;
  std::string shown;
};
// The FileAt of `path` relative to the working directory.
FileAt file_at(const std::string& path);
// write_file_atomic() through a directory descriptor: a temp file beside it, renamed over it,
// the directory fsync'ed when Durable.
void write_file_atomic_at(const FileAt& f, std::string_view data, mode_t mode = 0644,
                          Sync sync = Sync::Durable);
// Whole contents of `path`; throws if it is larger than `max_bytes`.
std::string read_file(const std::string& path, size_t max_bytes = 64u << 20);
// The last `n` lines of a text file (at most the last 64 KiB read); "" if it cannot be read.
std::string tail_lines(const std::string& path, size_t n);
// True if `path` exists (lstat succeeds).
bool exists(const std::string& path);
// True if `path` is a directory (following symlinks).
bool is_dir(const std::string& path);
// Names in directory `path` (without "." and ".."), unsorted; empty if it does not exist.
std::vector<std::string> list_dir(const std::string& path);
// Creates `path` and missing parents with `mode`; an existing directory is fine.
void mkdir_p(const std::string& path, mode_t mode = 0755);
// A base directory we keep our state and sockets in (the root, the run directory, the
// credential directory): made with `mode` if missing, and if it exists, trusted only when it is
// ours (owned by our effective uid) and no one else may write it. A symbolic link there is
// followed only if root or we own it. Throws space::Error naming the fix otherwise.
void ensure_private_dir(const std::string& path, mode_t mode);
// Removes `path` and everything under it; a missing path is fine. Never follows symlinks and
// refuses (throws) to descend into a directory on another mount.
void remove_tree(const std::string& path);
// Copies a regular file to a new file `dst` (must not exist) with `mode`: a reflink if possible,
// else only the data extents (holes stay holes). `progress`, if set, runs between chunks and may
// throw to abort; a partial `dst` is removed on failure.
void copy_file(const std::string& src, const std::string& dst, mode_t mode = 0600,
               const std::function<void()>& progress = {});
// Copies the contents of directory `src` into the existing directory `dst`: regular files as
// copy_file does (reflinks on btrfs) with their modes, directories recursively, symlinks as
// symlinks; other kinds (sockets, fifos, devices) are left out. Everything beneath `src` is
// opened by descriptor beneath its parent and never through a link, so a name swapped for a
// symbolic link during the copy fails it rather than copying what the link points to. Names for
// which `skip(relative path)` is true are left out, with everything under them. Throws on the first
// failure, leaving what it copied so far (the caller removes `dst`).
void copy_tree(const std::string& src, const std::string& dst,
               const std::function<bool(const std::string&)>& skip = {});
// `path` made absolute against the current directory (no symlink resolution, no normalisation).
std::string absolute(const std::string& path);
// The canonical path of the existing `path`: symlinks resolved (realpath(3)). Throws if it is
// missing.
std::string real_path(const std::string& path);

}  // namespace space::fs

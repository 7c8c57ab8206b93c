// Btrfs subvolumes through libbtrfsutil: create, snapshot, delete, read-only flag, and the
// "is this btrfs" test on a statfs result. Thin wrappers that turn libbtrfsutil's error codes
// (and the errno they leave) into space::Error naming the path; the caller adds the context.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace space::store::btrfs {

// True if a statfs() f_type is btrfs's magic number.
bool is_btrfs_magic(long f_type);
// True if `path` (following symlinks) lies on a btrfs filesystem; false if it does not exist.
bool on_btrfs(const std::string& path);
// True if `path` is the root directory of a subvolume; false for anything else (missing, a
// plain directory, not on btrfs).
bool is_subvolume(const std::string& path);
// Creates an empty subvolume at `path` with permissions `mode` (the parent must exist on btrfs).
// EEXIST if taken.
void create_subvolume(const std::string& path, mode_t mode = 0700);
// Snapshots subvolume `source` to the new path `dest`, writable. The error's errno is ENOENT when
// `source` does not exist, EEXIST when `dest` does.
void snapshot(const std::string& source, const std::string& dest);
// Deletes subvolume `path` and everything in it (the space is freed in the background).
void delete_subvolume(const std::string& path);
// Sets or clears the subvolume's read-only flag.
void set_read_only(const std::string& path, bool read_only);
// Turns quota groups on for the filesystem holding `path` (a no-op when they are on). Every
// subvolume then has a qgroup counting its bytes.
void enable_quota(const std::string& path);
// True if quota groups are on for the btrfs filesystem holding `path` (its sysfs directory
// /sys/fs/btrfs/<fsid>/qgroups exists, Linux 5.9+); false off btrfs or when it cannot tell.
bool quota_enabled(const std::string& path);
// Limits subvolume `path` to `bytes` of data of its own (exclusive: not shared with another
// subvolume); a write past it fails with EDQUOT. Needs enable_quota(). 0 removes the limit.
void limit_exclusive(const std::string& path, uint64_t bytes);

}  // namespace space::store::btrfs

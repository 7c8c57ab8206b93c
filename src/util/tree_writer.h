// Writing a stream of tree entries (util/tree.h) beneath a directory, safe against hostile
// streams: an entry can create, replace or delete files only beneath that directory. Names are
// checked as names (no absolute path, no `..`), and every directory on the way to an entry is
// opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV) from the root's descriptor, so no entry is ever written through a symbolic
// link, whoever planted it (the stream itself or a process beside the copy); the entry itself is
// created with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW semantics, replacing what was there. A regular
// file is written under a temporary name and renamed over its destination once complete, so an
// interrupted copy never leaves a half-written file under a real name. Hard links must name an
// earlier entry's path beneath the root. Learned from docker cp's CVE-2018-15664 and
// CVE-2019-14271: no path string is trusted, only descriptors.
// Options decide what of an entry's metadata is kept: its owner or one given, its setuid/setgid
// bits, its extended attributes, or all but the privileged ones (security.*, trusted.*); what is
// dropped is counted in the stats.
// With `whiteouts` (OCI image layers), `.wh.NAME` deletes NAME from the layers below and
// `.wh..wh..opq` empties its directory of them; entries of the same stream are kept.
// Used by image import (a layer onto a root filesystem), by `space cp` on the host (copy out)
// and by guest-init (copy in).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "util/fd.h"
#include "util/tree.h"

namespace space {

struct TreeWriteOptions {
  bool whiteouts = false;     // interpret OCI whiteout entries
  bool devices = true;        // create device nodes and fifos; false: see skip_devices
  bool skip_devices = false;  // with !devices: skip them (counted) instead of refusing
  bool keep_setid = true;     // keep setuid/setgid bits (false: clear them, counted)
  bool xattrs = true;         // set the entries' extended attributes
  // With xattrs: also the security.* (file capabilities, LSM labels) and trusted.* ones; false:
  // leave those out (counted), as a copy out that keeps owners but not privileges does.
  bool privileged_xattrs = true;
  std::optional<uid_t> owner_uid;  // set: every entry belongs to this uid/gid, not its own
  std::optional<gid_t> owner_gid;
  uint64_t max_bytes = 0;      // > 0: file data beyond this many bytes in total is refused
  std::string max_bytes_hint;  // the hint of that refusal (how the caller's user raises it)
  // The name the stream's top entry ("") takes beneath the root, every other entry being
  // beneath it; "" = the entries land in the root itself and the top's own entry is skipped.
  std::string top;
};

struct TreeStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;           // file data written
  uint64_t skipped = 0;         // device nodes and fifos left out (skip_devices)
  uint64_t setid_dropped = 0;   // entries whose setuid/setgid bits were cleared (!keep_setid)
  uint64_t xattrs_dropped = 0;  // security.* and trusted.* attributes left out (!privileged_xattrs)
};

class TreeWriter : public TreeSink {
 public:
  // Writes beneath directory `root_fd` (borrowed; it must outlive the writer). `origin` names
  // the stream in errors ("layer sha256:...", "sandbox abc: /out").
  TreeWriter(int root_fd, TreeWriteOptions opts, std::string origin);
  ~TreeWriter() override;
  TreeWriter(const TreeWriter&) = delete;
  TreeWriter& operator=(const TreeWriter&) = delete;

  // Starts entry `e`. A File then takes exactly e.size bytes through data() and ends with
  // end_file(); every other kind is complete at once. Throws space::Error on a refused or
  // failed entry.
  void begin(const TreeEntry& e);
  // File data at `offset` (sparse writers may skip ahead; bytes must stay within e.size).
  void data(std::span<const uint8_t> bytes, uint64_t offset);
  // Completes the current file: size, owner, mode, xattrs, times, then its rename into place.
  void end_file() override;
  // After the last entry: directory times (their contents changed them meanwhile).
  void finish();
  // After a failure: removes every path this writer created that did not exist before, deepest
  // first, and the current temporary file. Never throws.
  void remove_created() noexcept;

  // TreeSink: begin() (true when a file was begun), data(), end_file().
  bool begin_entry(const TreeEntry& e) override {
    begin(e);
    return in_file();
  }
  void file_data(std::span<const uint8_t> bytes, uint64_t offset) override { data(bytes, offset); }

  const TreeStats& stats() const { return stats_; }
  bool in_file() const { return file_.valid(); }

 private:
  [[noreturn]] void refuse(const std::string& name, const std::string& why) const;
  std::vector<std::string> components(const std::string& name) const;
  Fd parent_of(const std::vector<std::string>& c, const std::string& name, bool create);
  int cached_parent(const std::vector<std::string>& c, const std::string& name, bool create);
  void remove(int dir, const std::string& name);
  void whiteout(const std::vector<std::string>& c, const std::string& name);
  void hardlink(const std::vector<std::string>& c, const TreeEntry& e);
  // A regular file's entry: opened for data() at `path` (`base` in `parent`), which held an
  // entry of mode `existing` before, if any.
  void begin_file(int parent, const std::string& base, const std::string& path, const TreeEntry& e,
                  std::optional<mode_t> existing);
  void set_meta(int fd, const TreeEntry& e, const std::string& path);
  void note_created(const std::string& path);
  uid_t uid(const TreeEntry& e) const { return o_.owner_uid ? *o_.owner_uid : e.uid; }
  gid_t gid(const TreeEntry& e) const { return o_.owner_gid ? *o_.owner_gid : e.gid; }
  // The permission bits `e` gets (counted in setid_dropped when bits are cleared).
  mode_t take_perm(const TreeEntry& e);

  int root_;
  TreeWriteOptions o_;
  std::string origin_;
  TreeStats stats_;
  std::unordered_set<std::string> created_set_;  // paths this stream made (whiteouts spare them)
  std::vector<std::string> created_;             // the same, in order, if they were new
  std::vector<std::pair<std::string, TreeEntry>> dir_times_;
  // The directory of the last entry: consecutive entries mostly share one, and opening it again
  // beneath the root costs a syscall per component. Dropped whenever anything is removed.
  Fd dir_cache_;
  std::string dir_cache_path_;
  // The file being written: its descriptor, directory (the cached one), the name it is written
  // under (its own when it is new, else a temporary one renamed over the old file at the end),
  // its path and entry.
  Fd file_;
  int file_dir_ = -1;
  std::string file_tmp_, file_path_;
  TreeEntry file_entry_;
  uint64_t file_written_ = 0;
  bool file_direct_ = false;        // written under its own name (nothing was there)
  bool file_replaces_dir_ = false;  // a directory of that name goes first
};

}  // namespace space

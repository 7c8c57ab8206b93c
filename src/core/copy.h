// `space cp`: files into and out of a sandbox, through guest-init's file conversation
// (proto/files.h). Copying in, the host reads the source (a tree by descriptor, or a tar stream
// on stdin through libarchive) and sends entries; guest-init decides where they land by docker
// cp's rules (util/copy_target.h) and writes them beneath the destination. Copying out, guest-init
// sends the tree and the host writes it beneath DST with the same writer (util/tree_writer.h):
// no `..`, no absolute names, no writing through links, no device nodes, at most `max_bytes` of
// data, and what a failed copy created is removed. Owners and extended attributes are kept only
// with `archive`, and setuid/setgid bits and security.* / trusted.* attributes (capabilities,
// LSM labels) only with `keep_privileges` too; what it drops is counted, and the caller warns.
// As a tar stream on stdout (store/archive_entries.h), the same names only, nothing named as or
// beneath a symbolic link of the stream, hard links only to its own earlier files; a refused
// entry ends the stream, incomplete, before any of it. A paused sandbox is resumed for the copy
// and paused again.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/create_options.h"
#include "store/context.h"
#include "util/field_list.h"

namespace space::core {

// One side of a copy, as the user wrote it: "-" (a tar stream), "ID:PATH" (in a sandbox: the
// part before the first ':' has no '/'), or a host path (write ./a:b for a file named a:b).
struct CopyPath {
  bool stream = false;
  std::string sandbox;  // "" = a host path
  std::string path;
};
CopyPath parse_copy_path(const std::string& arg);

struct CopyOptions {
  std::vector<std::string> sources;  // several only when copying in
  std::string dest;
  bool archive = false;  // -a: keep owners (and setuid bits, extended attributes)
  // With archive, copy out: keep setuid/setgid bits and security.* / trusted.* extended
  // attributes too (else dropped, counted in CopyStats). Copy in keeps them with archive alone.
  bool keep_privileges = false;
  bool follow_link = false;         // -L: a source that is a symbolic link is copied as its target
  uint64_t max_bytes = 0;           // copy out: most file data written on the host; 0 = no limit
  int stdin_fd = 0, stdout_fd = 1;  // where "-" reads and writes its tar stream
  // Called as data moves (total bytes so far), at most a few times a second is the caller's job.
  std::function<void(uint64_t bytes)> progress;
};

struct CopyStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;           // file data
  uint64_t skipped = 0;         // device nodes, fifos and sockets left out
  uint64_t setid_dropped = 0;   // copy out: files whose setuid/setgid bits were cleared
  uint64_t xattrs_dropped = 0;  // copy out with archive: security.* / trusted.* attributes left out
  double seconds = 0;
  // proto/fields.h: `space cp --format json` prints fields_json()
  SPACE_FIELDS(entries, bytes, skipped, setid_dropped, xattrs_dropped, seconds);
};

// Runs the copy. Throws space::Error (exit 125) for an unknown or stopped sandbox, a missing
// source, a destination that does not fit (docker's wording), a hostile entry, the size limit.
CopyStats copy_files(const store::Context& ctx, const CopyOptions& opts);

// The warning a copy out with `archive` owes its user when it dropped privileges (setuid/setgid
// bits, security.* / trusted.* attributes) that keep_privileges would have kept: "space cp:
// dropped setuid/setgid bits of N files and M security xattrs; --keep-privileges keeps them".
// "" when there is nothing to say.
std::string privileges_warning(const CopyOptions& opts, const CopyStats& stats);

// Throws Error (naming the form) on a spec without an absolute guest path or an empty host path,
// and on a host path that does not exist (checked before anything is created).
CopySpec parse_copy_spec(const std::string& spec);

// Copies every spec's host path into running sandbox `id` (create --copy), in order.
void copy_specs_into(const store::Context& ctx, const std::string& id,
                     const std::vector<CopySpec>& specs);

}  // namespace space::core

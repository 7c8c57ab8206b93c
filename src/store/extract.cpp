// Safe tar extraction; see extract.h. The archive is read with libarchive (archive_entries) and
// written by a TreeWriter, which owns every safety rule.
#include "store/extract.h"

#include <memory>

#include "store/archive_entries.h"
#include "util/error.h"
#include "util/tree_writer.h"

namespace space::store {

ExtractStats extract_archive(int archive_fd, int root_fd, const ExtractOptions& opts,
                             const std::string& origin) {
  TreeWriteOptions wo;
  wo.whiteouts = opts.whiteouts;
  wo.devices = opts.devices;
  wo.keep_setid = opts.keep_setid;
  wo.owner_uid = opts.owner_uid;
  wo.owner_gid = opts.owner_gid;
  TreeWriter w(root_fd, wo, origin);
  ExtractStats stats;
  read_archive_entries(archive_fd, origin, [&](const TreeEntry& e, const ArchiveData& data) {
    w.begin(e);
    if (w.in_file()) {
      data([&](std::span<const uint8_t> b, uint64_t offset) { w.data(b, offset); });
      w.end_file();
    }
    stats.entries++;
    stats.bytes = w.stats().bytes;
    if (opts.progress) opts.progress(stats.entries, stats.bytes);
  });
  w.finish();
  return stats;
}

}  // namespace space::store

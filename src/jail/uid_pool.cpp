// The uid pool; see uid_pool.h.
#include "jail/uid_pool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <limits>

#include "util/error.h"
#include "util/fs.h"

namespace space::jail {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string lock_path(const std::string& dir, uid_t uid) {
  return dir + "/" + std::to_string(uid) + ".lock";
}

Fd open_lock(const std::string& dir, uid_t uid) {
  std::string path = lock_path(dir, uid);
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) throw_errno("open " + path);
  return fd;
}

}  // namespace

UidClaim claim_uid(const std::string& dir, const UidRange& range, const std::string& key) {
  if (range.count == 0 || range.first == 0 ||
      uint64_t(range.first) + range.count - 1 >= std::numeric_limits<uid_t>::max())
    fail("jail: the uid range " + std::to_string(range.first) + "+" + std::to_string(range.count) +
             " is empty, starts at 0 or is too large",
         "set [jail] uid_first and uid_count in config.toml");
  fs::ensure_private_dir(dir, 0700);
  const uint32_t start = static_cast<uint32_t>(fnv1a(key) % range.count);
  for (uint32_t i = 0; i < range.count; i++) {
    uid_t uid = range.first + (start + i) % range.count;
    Fd fd = open_lock(dir, uid);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return UidClaim{uid, std::move(fd)};
    if (errno != EWOULDBLOCK) throw_errno("flock " + lock_path(dir, uid));
  }
  fail("jail: every uid in " + std::to_string(range.first) + ".." +
           std::to_string(range.first + range.count - 1) + " is taken by a running sandbox",
       "raise [jail] uid_count in config.toml, or destroy sandboxes");
}

}  // namespace space::jail

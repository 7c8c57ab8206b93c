// The activity file's holds and claims; see activity.h.
#include "store/activity.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>

namespace space::store {
namespace {

int64_t mtime_ms(const struct stat& st) {
  return int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

void touch(int fd) {
  (void)::futimens(fd, nullptr);  // best effort: a failure only makes the sandbox look idle sooner
}

// flock that retries on EINTR.
bool lock(int fd, int op) {
  int r;
  do r = ::flock(fd, op);
  while (r != 0 && errno == EINTR);
  return r == 0;
}

}  // namespace

std::optional<int64_t> activity_mtime_ms(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return mtime_ms(st);
}

ActivityHold::ActivityHold(const std::string& path, Wait wait) {
  fd_ = Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd_) return;
  held_ = lock(fd_.get(), LOCK_SH | (wait == Wait::NonBlocking ? LOCK_NB : 0));
  touch(fd_.get());
}

ActivityHold::~ActivityHold() {
  if (fd_) touch(fd_.get());  // closing the descriptor lets go of the lock
}

std::optional<IdleClaim> IdleClaim::try_take(const std::string& path, int64_t created_ms) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd && errno == ENOENT) {
    fd = Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd) {
      timespec t[2] = {{created_ms / 1000, (created_ms % 1000) * 1'000'000}, {0, 0}};
      t[1] = t[0];
      (void)::futimens(fd.get(), t);
    } else if (errno == EEXIST) {  // a command made it meanwhile: it is in use
      return std::nullopt;
    }
  }
  if (!fd || !lock(fd.get(), LOCK_EX | LOCK_NB)) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::nullopt;
  return IdleClaim(std::move(fd), mtime_ms(st));
}

}  // namespace space::store

// Unix stream sockets with deadlines. Every blocking step (connect, write, read) takes a Deadline:
// a point on the monotonic clock plus up to four "cancel" fds (a signalfd, a child's pidfd) whose
// readability aborts the wait with Cancelled, so a caller waiting for a guest can also notice
// Ctrl-C or its VMM dying without polling. Sockets are non-blocking and close-on-exec.
#pragma once
#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/fd.h"

namespace space::net {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  // A deadline `ms` milliseconds from now.
  static Deadline after_ms(int64_t ms);
  // No time limit.
  static Deadline never() { return Deadline(); }
  // Milliseconds left, clamped to [0, INT_MAX]; -1 when there is no limit.
  int remaining_ms() const;
  bool expired() const { return remaining_ms() == 0; }
  // Adds an fd whose readability cancels waits (at most four). Returns *this.
  Deadline& cancel_on(int fd);
  std::span<const int> cancel_fds() const { return {cancel_.data(), ncancel_}; }

 private:
  std::optional<Clock::time_point> end_;
  std::array<int, 4> cancel_{};
  size_t ncancel_ = 0;
};

// Thrown by a wait when one of its deadline's cancel fds became readable.
class Cancelled : public Error {
 public:
  Cancelled(const std::string& what, int fd) : Error(what + ": cancelled"), fd_(fd) {}
  // The cancel fd that fired.
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Waits until `fd` polls ready for `events`. Throws Error (ETIMEDOUT) naming `what`, or Cancelled.
void wait_ready(int fd, short events, const Deadline& dl, const std::string& what);
// Sleeps `ms` (less if the deadline comes first); throws Cancelled if a cancel fd fires.
void sleep_ms(int ms, const Deadline& dl);
// A connected unix stream socket. Throws Error carrying the connect errno (ENOENT, ECONNREFUSED).
Fd unix_connect(const std::string& path, const Deadline& dl);
// Who may connect to a socket unix_listen() makes: its mode and owner (-1 keeps ours).
struct SocketAccess {
  mode_t mode = 0600;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};
// Creates a listening, non-blocking Unix stream socket at `path` (replacing a stale socket file)
// with `access` (mode and owner set before listen(): no client connects earlier). The caller must
// own the directory: the owner is set by path. Throws with a hint when the path is too long for
// sun_path.
Fd unix_listen(const std::string& path, int backlog = 16, const SocketAccess& access = {});
// The same, bound but not yet listening: for a socket another process will serve, which then
// calls listen() itself so that SO_PEERCRED names it (peer_pid()).
Fd unix_bind(const std::string& path, const SocketAccess& access = {});
// A listening socket and the inode of its file, so that only our own file is ever unlinked (a
// later server may have bound the same path since).
struct Listener {
  Fd fd;
  ino_t ino = 0;
};
// unix_listen() that remembers the inode.
Listener listen_at(const std::string& path, int backlog, const SocketAccess& access = {});
// The inode of `path` (lstat), 0 when there is none.
ino_t inode_of(const std::string& path);
// Unlinks `path` if it is still `l`'s file.
void unlink_if_ours(const std::string& path, const Listener& l);
// The pid of the peer of Unix socket `fd` (SO_PEERCRED, in our PID namespace), or -1. For a
// connection to a listening socket that is the process that last called listen() on it.
long peer_pid(int fd);
// Sends `data` with the descriptors `fds` attached (SCM_RIGHTS), in pieces of at most 250
// descriptors, each attached to a byte of `data`. Throws when `data` has fewer bytes than pieces,
// on error or on deadline.
void send_with_fds(int fd, std::string_view data, std::span<const int> fds, const Deadline& dl);
// One recvmsg() into `buf`: returns the byte count (0 on EOF, -1 with errno on error) and
// appends the descriptors that came with it to `fds` (close-on-exec).
ssize_t recv_with_fds(int fd, std::span<char> buf, std::vector<Fd>& fds);
// The uid of the peer of Unix socket `fd` (SO_PEERCRED), or -1 if it cannot be read.
long peer_uid(int fd);
// Whether that peer is root or runs as our effective uid: the only clients our sockets serve.
bool peer_trusted(int fd);
// Stricter, for a jailed VMM's sockets: the peer is root (the CLI, the daemons) or this very
// process. Another process of our uid is refused: a branch VMM shares its source's uid (it is a
// fork of it) and must not reach the source's guest or control socket.
bool peer_root_or_self(int fd);
// Writes all of `data`. Throws on error or deadline.
void send_all(int fd, std::string_view data, const Deadline& dl);
// Reads exactly `len` bytes; false on EOF before the first byte; throws on EOF after it.
bool recv_exact(int fd, void* buf, size_t len, const Deadline& dl);
// One line without its '\n'; nothing after it is consumed (a socket is peeked at, then read up
// to the newline; other fds are read a byte at a time); nullopt on EOF before any byte. Throws on
// EOF mid-line, on a line longer than `max_len`, or on deadline.
std::optional<std::string> read_line(int fd, const Deadline& dl, size_t max_len = 1u << 20);

}  // namespace space::net

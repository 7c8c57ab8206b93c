// Unit tests for util/fd: Fd's ownership (move, release, reset), pipes and the blocking helpers,
// and close_all_but(), run in forked children: exactly the descriptors kept stay open, whatever
// their order, duplicates and negative entries, the standard ones included; with nothing to
// keep, nothing stays.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "util/fd.h"

using namespace space;

namespace {

bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

// The open descriptors of this process, up to its RLIMIT_NOFILE.
std::vector<int> open_fds() {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  std::vector<int> out;
  for (int fd = 0; fd < static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 1u << 16)); fd++)
    if (is_open(fd)) out.push_back(fd);
  return out;
}

// Forks a child that runs `body` and exits with what it returns; its waitpid() status.
template <class Body>
int in_child(Body body) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(body());
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

}  // namespace

TEST_CASE("Fd owns one descriptor: moves, releases and resets") {
  Pipe p = Pipe::make();
  int r = p.read.get();
  CHECK(is_open(r));
  CHECK((::fcntl(r, F_GETFD) & FD_CLOEXEC) != 0);
  Fd moved = std::move(p.read);
  CHECK_FALSE(p.read.valid());
  CHECK(moved.get() == r);
  int raw = moved.release();
  CHECK_FALSE(moved);
  CHECK(is_open(raw));  // released, not closed
  moved.reset(raw);
  moved.reset();
  CHECK_FALSE(is_open(raw));
  Pipe q = Pipe::make();
  write_all(q.write.get(), "hello", 5);
  q.write.reset();
  char buf[16] = {};
  CHECK(read_full(q.read.get(), buf, sizeof buf) == 5);  // EOF ends it early
  CHECK(std::string(buf) == "hello");
  set_nonblocking(q.read.get());
  CHECK((::fcntl(q.read.get(), F_GETFL) & O_NONBLOCK) != 0);
  set_nonblocking(q.read.get(), false);
  CHECK((::fcntl(q.read.get(), F_GETFL) & O_NONBLOCK) == 0);
}

TEST_CASE("close_all_but keeps exactly the descriptors named") {
  Pipe p1 = Pipe::make(), p2 = Pipe::make(), p3 = Pipe::make(), report = Pipe::make();
  std::vector<int> expect = {p1.read.get(), p3.write.get(), report.write.get()};
  std::sort(expect.begin(), expect.end());
  int rep = report.write.get();
  std::vector<int> keep = {p3.write.get(), p1.read.get(), -1, p1.read.get(), rep, -7};
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    bool ok = close_all_but(keep.data(), keep.size());
    std::string out = ok ? "ok" : "failed";
    if (!std::is_sorted(keep.begin(), keep.end())) out += " unsorted";
    for (int fd : open_fds()) out += " " + std::to_string(fd);
    if (::write(rep, out.data(), out.size()) != static_cast<ssize_t>(out.size())) ::_exit(1);
    ::_exit(0);
  }
  report.write.reset();
  std::string got;
  char buf[256];
  size_t n;
  while ((n = read_full(report.read.get(), buf, sizeof buf)) > 0) got.append(buf, n);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  std::string want = "ok";
  for (int fd : expect) want += " " + std::to_string(fd);
  CHECK(got == want);             // stdio closed too: not kept
  CHECK(is_open(p2.read.get()));  // the parent's own are untouched
}

TEST_CASE("close_all_but with stdio only, with one high descriptor, and with nothing") {
  CHECK(WEXITSTATUS(in_child([] {
          std::vector<int> stdio;  // those of 0, 1, 2 that are open here
          for (int fd : {0, 1, 2})
            if (is_open(fd)) stdio.push_back(fd);
          int keep[] = {2, 0, 1};
          if (!close_all_but(keep, 3)) return 1;
          return open_fds() == stdio ? 0 : 2;
        })) == 0);
  CHECK(WEXITSTATUS(in_child([] {
          int null_fd = ::open("/dev/null", O_RDONLY);
          if (null_fd < 0 || ::dup2(null_fd, 900) != 900) return 3;
          int keep[] = {900};
          if (!close_all_but(keep, 1)) return 1;
          return open_fds() == std::vector<int>{900} ? 0 : 2;
        })) == 0);
  CHECK(WEXITSTATUS(in_child([] {
          if (!close_all_but(nullptr, 0)) return 1;
          return open_fds().empty() ? 0 : 2;
        })) == 0);
}

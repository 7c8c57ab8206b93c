// Unit tests for jail/privileges: drop() in a forked child leaves it with the sandbox's uid and
// gid (real, effective and saved), no supplementary groups, no capabilities in any set, no way
// back to root, no_new_privs, not dumpable, no core files and the RLIMIT_NOFILE it was given;
// and it refuses uid or gid 0 before changing anything. Needs root (skipped otherwise).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "jail/privileges.h"
#include "support/skip.h"
#include "util/error.h"
#include "util/fd.h"

using namespace space;

namespace {

// Runs `body` in a forked child and returns what it wrote ("" if it wrote nothing) once it has
// exited; `status` gets its waitpid() status.
template <class Body>
std::string in_child(Body body, int& status) {
  Pipe p = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    p.read.reset();
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("threw: ") + e.what();
    }
    write_all(p.write.get(), out.data(), out.size());
    ::_exit(0);
  }
  p.write.reset();
  std::string out;
  char buf[512];
  size_t n;
  while ((n = read_full(p.read.get(), buf, sizeof buf)) > 0) out.append(buf, n);
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return out;
}

constexpr uid_t kUid = 1000000123;

}  // namespace

TEST_CASE("privileges: drop() leaves no way back" * test::needs_root()) {
  CHECK_FALSE(jail::has_no_capabilities());  // root holds some
  int status = 0;
  std::string out = in_child(
      [] {
        jail::drop({kUid, kUid}, 300);
        std::string failed;
        auto check = [&](bool ok, const char* what) {
          if (!ok) failed += std::string(what) + "; ";
        };
        uid_t r, e, s;
        check(::getresuid(&r, &e, &s) == 0 && r == kUid && e == kUid && s == kUid, "uids");
        gid_t gr, ge, gs;
        check(::getresgid(&gr, &ge, &gs) == 0 && gr == kUid && ge == kUid && gs == kUid, "gids");
        check(::getuid() == kUid && ::geteuid() == kUid && ::getgid() == kUid, "getuid");
        check(::getgroups(0, nullptr) == 0, "groups");
        check(jail::has_no_capabilities(), "capabilities");
        check(::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "no_new_privs");
        check(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0, "dumpable");
        check(::prctl(PR_CAPBSET_READ, 0, 0, 0, 0) == 0, "bounding set");  // CAP_CHOWN
        rlimit core{}, files{};
        check(::getrlimit(RLIMIT_CORE, &core) == 0 && core.rlim_cur == 0 && core.rlim_max == 0,
              "RLIMIT_CORE");
        check(::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur == 300 &&
                  files.rlim_max == 300,
              "RLIMIT_NOFILE");
        check(::setresuid(0, 0, 0) != 0, "setresuid back to 0");
        check(::setresgid(0, 0, 0) != 0, "setresgid back to 0");
        rlimit more{301, 301};
        check(::setrlimit(RLIMIT_NOFILE, &more) != 0, "raising RLIMIT_NOFILE");
        return failed.empty() ? std::string("ok") : failed;
      },
      status);
  CHECK(out == "ok");
  CHECK(WIFEXITED(status));
}

TEST_CASE("privileges: drop() refuses uid or gid 0 before changing anything" * test::needs_root()) {
  for (jail::Identity who : {jail::Identity{0, kUid}, jail::Identity{kUid, 0}}) {
    int status = 0;
    std::string out = in_child(
        [who] {
          std::string r;
          try {
            jail::drop(who, 300);
            r = "dropped";
          } catch (const Error& e) {
            r = std::string("threw: ") + e.what();
          }
          rlimit files{};
          ::getrlimit(RLIMIT_NOFILE, &files);
          if (files.rlim_max == 300) r += " (RLIMIT_NOFILE changed)";
          if (::geteuid() != 0 || jail::has_no_capabilities()) r += " (privileges changed)";
          return r;
        },
        status);
    CHECK(out == "threw: jail: refusing to run as uid or gid 0");
  }
}

// The pagemap entry of one page this process wrote: bit 63 present, bits 0-54 its frame number.
static uint64_t pagemap_entry(int fd, const void* page) {
  uint64_t e = 0;
  const off_t off = static_cast<off_t>(reinterpret_cast<uintptr_t>(page) / 4096 * 8);
  REQUIRE(::pread(fd, &e, sizeof e, off) == static_cast<ssize_t>(sizeof e));
  return e;
}

TEST_CASE("open_without_sys_admin: a pagemap opened so shows no physical frame numbers" *
          test::needs_root()) {
  alignas(4096) static volatile char page[4096];
  page[0] = 1;  // present
  constexpr uint64_t kPfn = (1ULL << 55) - 1, kPresent = 1ULL << 63;
  Fd plain(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  REQUIRE(plain);
  const uint64_t shown = pagemap_entry(plain.get(), const_cast<char*>(page));
  REQUIRE((shown & kPresent) != 0);
  if ((shown & kPfn) == 0) {
    MESSAGE(
        "skipped: root's own pagemap shows no frame numbers here (no CAP_SYS_ADMIN in the "
        "initial user namespace), so there is nothing to hide");
    return;
  }
  Fd bare(jail::open_without_sys_admin("/proc/self/pagemap", O_RDONLY));
  REQUIRE(bare);
  const uint64_t hidden = pagemap_entry(bare.get(), const_cast<char*>(page));
  CHECK((hidden & kPresent) != 0);  // what the snapshot's diff needs is still there
  CHECK((hidden & kPfn) == 0);
  // And the capability is back: a second plain open shows frame numbers again.
  Fd again(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  REQUIRE(again);
  CHECK((pagemap_entry(again.get(), const_cast<char*>(page)) & kPfn) != 0);
}

// A VMM holds its disks open and could grow them into the shared store: with a bound, a write,
// fallocate or ftruncate past it fails with EFBIG (SIGXFSZ ignored), and within it all is as usual.
TEST_CASE("privileges: drop() with a file bound stops a file from growing past it" *
          test::needs_root()) {
  Fd disk(::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0666));
  REQUIRE(disk);
  REQUIRE(::ftruncate(disk.get(), 1 << 20) == 0);  // a 1 MiB "disk"
  int status = 0;
  std::string out = in_child(
      [&] {
        jail::drop({kUid, kUid}, 64, 2 << 20);
        std::string r;
        char block[4096] = {1};
        r += ::pwrite(disk.get(), block, sizeof block, 512 << 10) == 4096 ? "inside:ok "
                                                                          : "inside:failed ";
        errno = 0;
        r += ::fallocate(disk.get(), 0, 0, 64 << 20) != 0 && errno == EFBIG ? "fallocate:EFBIG "
                                                                            : "fallocate:grew ";
        errno = 0;
        r += ::ftruncate(disk.get(), 64 << 20) != 0 && errno == EFBIG ? "ftruncate:EFBIG "
                                                                      : "ftruncate:grew ";
        errno = 0;
        r += ::pwrite(disk.get(), block, sizeof block, 3 << 20) < 0 && errno == EFBIG
                 ? "write:EFBIG"
                 : "write:grew";
        return r;
      },
      status);
  CHECK(out == "inside:ok fallocate:EFBIG ftruncate:EFBIG write:EFBIG");
  CHECK(WIFEXITED(status));  // not killed by SIGXFSZ
  struct stat st {};
  REQUIRE(::fstat(disk.get(), &st) == 0);
  CHECK(st.st_size == 1 << 20);
}

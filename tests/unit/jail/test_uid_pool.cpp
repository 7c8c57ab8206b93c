// Unit tests for jail/uid_pool, in a temporary lock directory: a held uid is not handed out
// again, a key gets its uid back once released, uid_claimed() follows the lock, an exhausted
// range and a range starting at 0 or wrapping are refused with the [jail] settings named, and a
// claim lives on in a forked child that inherited its descriptor.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "jail/uid_pool.h"
#include "support/checks.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"

using namespace space;
using jail::UidRange;

namespace {
// Whether `uid` is claimed now: a live process holds its lock, <dir>/<uid>.lock. Takes nothing.
bool uid_claimed(const std::string& dir, uid_t uid) {
  Fd fd(::open((dir + "/" + std::to_string(uid) + ".lock").c_str(),
               O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return false;
  return errno == EWOULDBLOCK;
}
}  // namespace

TEST_CASE("uid_pool: claims of one key differ while held; the key gets its uid back") {
  test::TempDir t("uids");
  std::string dir = t.path + "/uids";
  const UidRange range{1000000, 8};
  jail::UidClaim a = jail::claim_uid(dir, range, "sandbox-a");
  CHECK(test::mode_of(dir) == 0700);
  CHECK(a.uid >= range.first);
  CHECK(a.uid < range.first + range.count);
  CHECK(a.lock.valid());
  CHECK(uid_claimed(dir, a.uid));
  jail::UidClaim b = jail::claim_uid(dir, range, "sandbox-a");
  CHECK(b.uid != a.uid);
  CHECK(uid_claimed(dir, b.uid));
  uid_t first = a.uid;
  a.lock.reset();
  CHECK_FALSE(uid_claimed(dir, first));
  CHECK(uid_claimed(dir, b.uid));
  jail::UidClaim again = jail::claim_uid(dir, range, "sandbox-a");
  CHECK(again.uid == first);
  // uid_claimed() itself takes nothing away.
  CHECK(uid_claimed(dir, again.uid));
  CHECK(uid_claimed(dir, again.uid));
  CHECK_FALSE(uid_claimed(dir, range.first + range.count));  // never claimed: no file
}

TEST_CASE("uid_pool: every uid of the range is handed out once, then the range is exhausted") {
  test::TempDir t("uids");
  std::string dir = t.path + "/uids";
  const UidRange range{2000000, 5};
  std::vector<jail::UidClaim> held;
  std::set<uid_t> uids;
  for (int i = 0; i < 5; i++) {
    held.push_back(jail::claim_uid(dir, range, "key-" + std::to_string(i % 2)));
    uids.insert(held.back().uid);
  }
  CHECK(uids.size() == 5);
  CHECK(*uids.begin() == range.first);
  CHECK(*uids.rbegin() == range.first + 4);
  try {
    jail::claim_uid(dir, range, "key-2");
    FAIL("claimed a sixth uid");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("2000000..2000004") != std::string::npos);
    CHECK(e.hint().find("uid_count") != std::string::npos);
  }
  held.erase(held.begin() + 2);
  CHECK_NOTHROW(jail::claim_uid(dir, range, "key-2"));
}

TEST_CASE("uid_pool: a range of one, exhausted; empty, zero-based and wrapping ranges refused") {
  test::TempDir t("uids");
  std::string dir = t.path + "/uids";
  jail::UidClaim only = jail::claim_uid(dir, {3000000, 1}, "x");
  CHECK(only.uid == 3000000);
  CHECK_THROWS_WITH_AS(jail::claim_uid(dir, {3000000, 1}, "y"), doctest::Contains("is taken"),
                       Error);
  try {
    jail::claim_uid(dir, {3000000, 1}, "y");
  } catch (const Error& e) {
    CHECK(e.hint().find("uid_count") != std::string::npos);
  }
  const uid_t top = std::numeric_limits<uid_t>::max();  // (uid_t)-1, never a real uid
  for (UidRange bad : {UidRange{0, 10}, UidRange{0, 1}, UidRange{5000, 0}, UidRange{top, 1},
                       UidRange{top - 10, 11}, UidRange{top - 10, 0xffffffffu}}) {
    CAPTURE(bad.first);
    CAPTURE(bad.count);
    try {
      jail::claim_uid(dir, bad, "k");
      FAIL("accepted the range");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("is empty, starts at 0 or is too large") !=
            std::string::npos);
      CHECK(e.hint().find("uid_first") != std::string::npos);
      CHECK(e.hint().find("uid_count") != std::string::npos);
    }
  }
  // The highest range that does not reach (uid_t)-1 is fine.
  jail::UidClaim last = jail::claim_uid(dir, {top - 10, 10}, "k");
  CHECK(last.uid >= top - 10);
  CHECK(last.uid < top);
}

TEST_CASE("uid_pool: the claim lasts while a forked child holds the inherited descriptor") {
  test::TempDir t("uids");
  std::string dir = t.path + "/uids";
  const UidRange range{4000000, 4};
  jail::UidClaim c = jail::claim_uid(dir, range, "jail");
  Pipe hold = Pipe::make();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    hold.write.reset();
    char b;
    while (::read(hold.read.get(), &b, 1) > 0) {
    }
    ::_exit(0);  // c.lock is closed only now, with the process
  }
  hold.read.reset();
  uid_t uid = c.uid;
  c.lock.reset();  // the parent's copy
  CHECK(uid_claimed(dir, uid));
  CHECK(jail::claim_uid(dir, range, "jail").uid != uid);
  hold.write.reset();
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK_FALSE(uid_claimed(dir, uid));
  CHECK(jail::claim_uid(dir, range, "jail").uid == uid);
}

// space-secret: the guest's way to ask for a secret, shipped in the rootfs as
// /usr/bin/space-secret (static; a separate CMake target built from this file and
// cred_fetch.cpp, not part of guest-init).
//   space-secret NAME   prints the value to stdout exactly (no newline added) and exits 0; a
//                       denial prints "space-secret: NAME: <why>" on stderr and exits 1; a helper
//                       that cannot be reached or does not answer within 10 s exits 2 with a
//                       message naming the credential helper.
//   space-secret --raw  (hidden, for tests) sends stdin verbatim to the helper and copies its
//                       reply to stdout until EOF or 10 s: forged and malformed requests.
// The value is written with write(2) from a buffer that is wiped afterwards; stdio is not used
// for it, so no libc buffer keeps a copy.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cred_fetch.h"
#include "proto/cred.h"

using namespace space;
using namespace space::guest;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: space-secret NAME\n"
               "prints the secret NAME granted to this sandbox (space grant) to stdout\n");
  return 64;
}

bool write_all_fd(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

int raw_mode() {
  std::vector<uint8_t> in;
  uint8_t buf[4096];
  ssize_t n;
  while ((n = ::read(0, buf, sizeof buf)) > 0) in.insert(in.end(), buf, buf + n);
  std::string why;
  int64_t deadline = mono_ms() + kCredTimeoutMs;
  Fd fd = connect_helper("", kCredTimeoutMs, why);
  if (!fd) {
    std::fprintf(stderr, "space-secret: cannot reach the credential helper: %s\n", why.c_str());
    return 2;
  }
  if (!send_all_by(fd.get(), in.data(), in.size(), deadline, why)) {
    std::fprintf(stderr, "space-secret: send: %s\n", why.c_str());
    return 2;
  }
  ::shutdown(fd.get(), SHUT_WR);
  for (;;) {
    uint8_t b[4096];
    size_t got = 0;
    // Read what comes, a byte count at a time, until EOF or the deadline.
    if (!recv_exact_by(fd.get(), b, 1, deadline, why)) break;
    got = 1;
    ssize_t more = ::recv(fd.get(), b + 1, sizeof b - 1, MSG_DONTWAIT);
    if (more > 0) got += size_t(more);
    if (!write_all_fd(1, reinterpret_cast<char*>(b), got)) return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--raw") == 0) return raw_mode();
  if (argc != 2 || argv[1][0] == '-') return usage();
  std::string name = argv[1];
  if (!proto::valid_secret_name(name)) {
    std::fprintf(stderr, "space-secret: %s: not a valid secret name\n", name.c_str());
    return 64;
  }
  CredFetch f = fetch_secrets({name}, "");
  if (f.status == CredStatus::Denied) {
    std::fprintf(stderr, "space-secret: %s\n", f.message.c_str());
    return 1;
  }
  if (f.status != CredStatus::Ok) {
    std::fprintf(stderr, "space-secret: %s\n", f.message.c_str());
    return 2;
  }
  std::string_view v = f.values.front().view();
  if (!write_all_fd(1, v.data(), v.size())) {
    std::fprintf(stderr, "space-secret: write: %s\n", std::strerror(errno));
    return 2;
  }
  return 0;
}

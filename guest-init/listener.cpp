// socket + bind + listen, three syscalls per listener; nothing is set that the defaults cover.
#include "listener.h"

#include <linux/vm_sockets.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace space::guest {
namespace {
constexpr int kBacklog = 64;

Fd bind_listen(int family, const sockaddr* addr, socklen_t len, const std::string& what) {
  Fd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno("socket for " + what);
  if (::bind(fd.get(), addr, len) != 0) throw_errno("bind " + what);
  if (::listen(fd.get(), kBacklog) != 0) throw_errno("listen on " + what);
  return fd;
}
}  // namespace

Fd listen_vsock(uint32_t port) {
  sockaddr_vm addr{};
  addr.svm_family = AF_VSOCK;
  addr.svm_cid = VMADDR_CID_ANY;
  addr.svm_port = port;
  return bind_listen(AF_VSOCK, reinterpret_cast<sockaddr*>(&addr), sizeof addr,
                     "vsock port " + std::to_string(port));
}

Fd listen_unix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    fail("unix socket path '" + path + "' is empty or longer than " +
         std::to_string(sizeof addr.sun_path - 1) + " bytes");
  std::memcpy(addr.sun_path, path.data(), path.size());
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  return bind_listen(AF_UNIX, reinterpret_cast<sockaddr*>(&addr), sizeof addr, path);
}

Fd accept_connection(int listen_fd) noexcept {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return Fd(fd);
    if (errno != EINTR) return Fd();
  }
}

}  // namespace space::guest

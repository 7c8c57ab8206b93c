// Secret fetching in the guest; see cred_fetch.h.
#include "cred_fetch.h"

#include <linux/vm_sockets.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "proto/agent.h"
#include "proto/cred.h"

namespace space::guest {

int64_t mono_ms() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

namespace {

bool wait_fd(int fd, short events, int64_t deadline_ms, std::string& why) {
  for (;;) {
    int64_t left = deadline_ms - mono_ms();
    if (left <= 0) {
      why = "timed out after " + std::to_string(kCredTimeoutMs / 1000) + " s";
      return false;
    }
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::string("poll: ") + std::strerror(errno);
      return false;
    }
    if (n > 0) return true;
  }
}

}  // namespace

Fd connect_helper(const std::string& unix_path, int timeout_ms, std::string& why) noexcept {
  return connect_host(proto::kCredentialPort, unix_path, timeout_ms, why);
}

Fd connect_host(uint32_t port, const std::string& unix_path, int timeout_ms,
                std::string& why) noexcept {
  int64_t deadline = mono_ms() + timeout_ms;
  Fd fd;
  int rc;
  std::string path = unix_path;
  if (path.empty()) {
    fd = Fd(::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    // No vsock in this kernel: a gVisor sandbox, whose host sockets are files (proto/agent.h).
    if (!fd && errno == EAFNOSUPPORT) path = proto::gvisor_port_socket(proto::kGvisorHostDir, port);
  }
  if (path.empty()) {
    if (!fd) {
      why = std::string("socket(AF_VSOCK): ") + std::strerror(errno);
      return Fd();
    }
    sockaddr_vm a{};
    a.svm_family = AF_VSOCK;
    a.svm_cid = VMADDR_CID_HOST;
    a.svm_port = port;
    // The guest kernel gives up on a vsock connect after 2 s by default, and the VMM may need
    // longer than that to start the helper or the broker: wait as long as the caller does.
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd.get(), AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, sizeof tv);
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    fd = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (!fd || path.size() >= sizeof a.sun_path) {
      why = "bad host socket " + path;
      return Fd();
    }
    std::memcpy(a.sun_path, path.data(), path.size());
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0 && errno != EINPROGRESS && errno != EAGAIN) {
    why = std::strerror(errno);
    return Fd();
  }
  if (rc != 0) {
    if (!wait_fd(fd.get(), POLLOUT, deadline, why)) return Fd();
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
      why = std::strerror(err);
      return Fd();
    }
  }
  return fd;
}

bool send_all_by(int fd, const void* data, size_t len, int64_t deadline_ms,
                 std::string& why) noexcept {
  auto* p = static_cast<const uint8_t*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= size_t(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_fd(fd, POLLOUT, deadline_ms, why)) return false;
      continue;
    }
    why = std::strerror(errno);
    return false;
  }
  return true;
}

bool recv_exact_by(int fd, void* buf, size_t len, int64_t deadline_ms, std::string& why) noexcept {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= size_t(n);
      continue;
    }
    if (n == 0) {
      why = "the connection was closed";
      return false;
    }
    if (errno == EAGAIN || errno == EINTR) {
      if (!wait_fd(fd, POLLIN, deadline_ms, why)) return false;
      continue;
    }
    why = std::strerror(errno);
    return false;
  }
  return true;
}

CredFetch fetch_secrets(const std::vector<std::string>& names, const std::string& unix_path,
                        int timeout_ms) noexcept {
  CredFetch out;
  const std::string first = names.empty() ? "" : names.front();
  try {
    int64_t deadline = mono_ms() + timeout_ms;
    std::string why;
    Fd fd = connect_helper(unix_path, timeout_ms, why);
    if (!fd) {
      out.message = first + ": cannot reach the credential helper: " + why;
      if (why == std::strerror(ECONNRESET) || why == std::strerror(ECONNREFUSED))
        out.message = first + ": the credential helper refused the connection (" + why +
                      "): no secret is granted to this sandbox, or the helper cannot be started";
      return out;
    }
    bool answered = false;  // the helper has answered on this connection
    for (const auto& name : names) {
      auto unreachable = [&](const std::string& w) {
        out.values.clear();
        out.status = CredStatus::Unreachable;
        out.message = name + ": no answer from the credential helper: " + w;
        // Over a gVisor sandbox's Unix socket the monitor accepts the connection before it
        // knows whether the helper will take it: a close before any answer is its refusal.
        if (!answered && (w == std::strerror(ECONNRESET) || w == std::strerror(EPIPE) ||
                          w == "the connection was closed"))
          out.message = name + ": the credential helper refused the connection (" + w +
                        "): no secret is granted to this sandbox, or the helper cannot be started";
        return std::move(out);
      };
      auto req = proto::encode_frame(proto::Type::CredGet, proto::CredGet{.name = name}.encode());
      if (!send_all_by(fd.get(), req.data(), req.size(), deadline, why)) return unreachable(why);
      uint8_t hdr[proto::kHeaderSize];
      if (!recv_exact_by(fd.get(), hdr, sizeof hdr, deadline, why)) return unreachable(why);
      answered = true;
      uint32_t len;
      uint16_t type, reserved;
      std::memcpy(&len, hdr, 4);
      std::memcpy(&type, hdr + 4, 2);
      std::memcpy(&reserved, hdr + 6, 2);
      if (reserved != 0 || len > proto::kMaxSecretSize + 64) return unreachable("malformed reply");
      std::vector<uint8_t> payload(len);
      if (!recv_exact_by(fd.get(), payload.data(), len, deadline, why)) {
        wipe(payload);
        return unreachable(why);
      }
      if (type == static_cast<uint16_t>(proto::Type::CredValue)) {
        proto::CredValue v;
        try {
          v = proto::CredValue::decode(payload);
        } catch (const proto::ProtoError& e) {
          wipe(payload);
          return unreachable(std::string("malformed reply: ") + e.what());
        }
        wipe(payload);
        out.values.emplace_back(std::string(v.value.begin(), v.value.end()));
        wipe(v.value);
      } else if (type == static_cast<uint16_t>(proto::Type::CredDenied)) {
        try {
          auto d = proto::CredDenied::decode(payload);
          out.values.clear();
          out.status = CredStatus::Denied;
          out.message = name + ": " + d.message;
          return out;
        } catch (const proto::ProtoError& e) {
          return unreachable(std::string("malformed reply: ") + e.what());
        }
      } else {
        wipe(payload);
        return unreachable("unexpected reply type " + std::to_string(type));
      }
    }
    out.status = CredStatus::Ok;
    return out;
  } catch (const std::exception& e) {
    out.values.clear();
    out.status = CredStatus::Unreachable;
    out.message = first + ": " + e.what();
    return out;
  }
}

}  // namespace space::guest

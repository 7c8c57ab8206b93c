// The host's own addresses, asked of the kernel's routing tables; see host_address.h. One
// netlink socket per question: it belongs to the network namespace of the thread that made it,
// and the broker's threads may each be in another.
#include "egress/host_address.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "util/error.h"
#include "util/fd.h"

namespace space::egress {

namespace {

constexpr const char* kHint =
    "the network broker asks the kernel (netlink RTM_GETROUTE) whether an address is this "
    "host's own before a name rule may reach it; check that it may open netlink sockets "
    "(descriptors, seccomp, an LSM) in the namespace it connects from";
constexpr uint32_t kSeq = 1;

struct RouteRequest {
  nlmsghdr hdr;
  rtmsg msg;
  rtattr dst;
  uint8_t addr[16];
};

}  // namespace

bool is_host_address(const IpAddress& address) {
  IpAddress a = address.unmapped();
  std::string what = "the route to " + a.to_string();
  auto fail_with = [&](const std::string& why, int err) -> Error {
    return Error(what + ": " + why + (err ? std::string(": ") + std::strerror(err) : ""), err,
                 kHint);
  };
  Fd s(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!s) throw fail_with("netlink socket", errno);
  timeval tv{1, 0};  // the kernel answers within send(); this only bounds a surprise
  ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  size_t len = a.family() == AF_INET ? 4 : 16;
  RouteRequest req{};
  req.hdr.nlmsg_len = uint32_t(NLMSG_LENGTH(sizeof(rtmsg)) + RTA_SPACE(len));
  req.hdr.nlmsg_type = RTM_GETROUTE;
  req.hdr.nlmsg_flags = NLM_F_REQUEST;
  req.hdr.nlmsg_seq = kSeq;
  req.msg.rtm_family = uint8_t(a.family());
  req.msg.rtm_dst_len = uint8_t(len * 8);
  req.dst.rta_type = RTA_DST;
  req.dst.rta_len = uint16_t(RTA_LENGTH(len));
  std::memcpy(req.addr, a.bytes().data(), len);
  static_assert(offsetof(RouteRequest, dst) == NLMSG_LENGTH(sizeof(rtmsg)));
  static_assert(offsetof(RouteRequest, addr) == NLMSG_LENGTH(sizeof(rtmsg)) + RTA_LENGTH(0));

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(s.get(), &req, req.hdr.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) != ssize_t(req.hdr.nlmsg_len))
    throw fail_with("netlink send", errno);

  alignas(nlmsghdr) char buf[8192];
  for (;;) {
    sockaddr_nl from{};
    socklen_t from_len = sizeof from;
    ssize_t n =
        ::recvfrom(s.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail_with("netlink receive", errno);
    if (from.nl_pid != 0) continue;  // not the kernel
    // Each message: a header, then its payload; NLMSG_OK's mixed signs spelled out.
    for (size_t off = 0; off + sizeof(nlmsghdr) <= size_t(n);) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buf + off);
      if (h->nlmsg_len < sizeof(nlmsghdr) || h->nlmsg_len > size_t(n) - off) break;
      off += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_seq != kSeq) continue;
      if (h->nlmsg_type == NLMSG_ERROR) {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr)))
          throw fail_with("a truncated netlink error", 0);
        int err = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        // No route: a connection could not reach this host (nor any other).
        if (err == ENETUNREACH || err == EHOSTUNREACH || err == EACCES) return false;
        throw fail_with("the kernel's answer", err);
      }
      if (h->nlmsg_type != RTM_NEWROUTE) continue;
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(rtmsg))) throw fail_with("a truncated route", 0);
      unsigned type = static_cast<const rtmsg*>(NLMSG_DATA(h))->rtm_type;
      return type == RTN_LOCAL || type == RTN_BROADCAST || type == RTN_ANYCAST;
    }
  }
}

AddressClass classify_at_host(const IpAddress& addr) {
  AddressClass c = classify(addr);
  if (c == AddressClass::Public && is_host_address(addr)) return AddressClass::HostOwn;
  return c;
}

}  // namespace space::egress

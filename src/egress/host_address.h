// Whether an address is the host's own: the broker must not let a name rule (a `*` among them)
// reach the host itself through one of its public addresses, which classify() alone takes for
// another host's. The kernel answers for the network namespace of the calling thread (the one
// the broker's connection thread connects from, egress/netns.h), as `ip route get` asks it:
// one RTM_GETROUTE over netlink, an exact lookup in its routing tables that costs about 11 us
// whatever the number of interfaces (getifaddrs, a dump of every link and address, took 45 us
// with four, and a cache of it would lag behind an address added later). A local, broadcast or
// anycast route is the host's own; so is every address of a local route such as 127.0.0.0/8.
#pragma once
#include "egress/policy.h"

namespace space::egress {

// True when a connection to `addr` (its IPv4 address if IPv4-mapped) from the calling thread's
// network namespace would be delivered to this host: the kernel's route to it is local,
// broadcast or anycast. False for a unicast route, or none (unreachable, prohibited). Throws
// space::Error (errno, hint) when the kernel cannot be asked or answers otherwise.
bool is_host_address(const IpAddress& addr);

// classify(addr), except that a public address is_host_address() calls the host's own is
// AddressClass::HostOwn; the netlink question is asked only for a public address. Throws like
// is_host_address.
AddressClass classify_at_host(const IpAddress& addr);

}  // namespace space::egress

// Fetching secrets from the credential helper, inside the guest: shared by guest-init (for
// `exec --secret-env`) and the space-secret tool. One stream to the host, AF_VSOCK CID 2
// (VMADDR_CID_HOST) port proto::kCredentialPort, which the VMM forwards to the helper's socket
// for this sandbox (or, for tests, a Unix socket path). For each name: CredGet out, CredValue or
// CredDenied back (proto/cred.h). Every wait is bounded by one deadline. Values are read straight
// into buffers that are wiped (explicit_bzero) once consumed; no value is ever written to a file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/fd.h"
#include "util/wipe.h"

namespace space::guest {

constexpr int kCredTimeoutMs = 10'000;

enum class CredStatus {
  Ok,           // every value arrived
  Denied,       // the helper refused one (message says which and why)
  Unreachable,  // no connection, reset, timeout or a broken reply
};

struct CredFetch {
  CredStatus status = CredStatus::Unreachable;
  std::vector<SecretString> values;  // one per name, in order, when Ok
  std::string message;               // "NAME: <why>" when not Ok
};

// Fetches `names` in order over one connection to the helper (`unix_path` "" = vsock to the
// host), giving up after `timeout_ms` in all. Stops at the first name that is not a value.
CredFetch fetch_secrets(const std::vector<std::string>& names, const std::string& unix_path,
                        int timeout_ms = kCredTimeoutMs) noexcept;

// A connected stream to host vsock port `port` (CID 2; `unix_path` instead when not ""), or an
// invalid Fd with `why` set. The connect waits up to `timeout_ms`: the VMM may start the peer.
Fd connect_host(uint32_t port, const std::string& unix_path, int timeout_ms,
                std::string& why) noexcept;
// connect_host() to the credential helper's port.
Fd connect_helper(const std::string& unix_path, int timeout_ms, std::string& why) noexcept;
// Sends all of `data`; false with `why` set on error or timeout.
bool send_all_by(int fd, const void* data, size_t len, int64_t deadline_ms,
                 std::string& why) noexcept;
// Reads exactly `len` bytes; false with `why` set on EOF, error or timeout.
bool recv_exact_by(int fd, void* buf, size_t len, int64_t deadline_ms, std::string& why) noexcept;
// CLOCK_MONOTONIC in milliseconds.
int64_t mono_ms() noexcept;

}  // namespace space::guest

// The host <-> guest-init agent protocol, shared verbatim by the host (src/core) and guest-init.
// Transport: one vsock stream per conversation; the host dials guest port kAgentPort.
// Framing: an 8-byte header {u32 payload length, u16 type, u16 reserved=0}, little-endian, then
// the payload. Payloads are at most kMaxPayload bytes. Every conversation opens with Hello from
// the host and HelloReply from the guest; a peer of another major version is refused with Error.
// FrameDecoder is incremental (feed bytes, pull frames) and rejects malformed input with
// ProtoError before allocating anything large, so it is safe on hostile bytes.
// Hello payload: u32 version, str client, u8[32] entropy, u64 time_ns, str sandbox, u32 flags
// (str = u32 length + bytes).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proto/fields.h"
#include "proto/wire.h"

namespace space::proto {

constexpr uint32_t kAgentPort = 1024;       // guest-init listens here
constexpr uint32_t kCredentialPort = 1025;  // guest dials the host here for secrets
constexpr uint32_t kEgressPort = 1026;      // guest dials the host here for network connections
// Under the gVisor engine there is no vsock: the sandbox's host directory is bind-mounted at
// kGvisorHostDir, and each port above is a Unix socket there, "<port>.sock", that the sandbox's
// monitor listens on. guest-init dials kAgentPort's socket itself and keeps idle connections
// there for the host to use (the host cannot connect into a gVisor sandbox); the other two are
// dialled per conversation, as over vsock. A user image is bind-mounted at kGvisorImageDir,
// where guest-init prepares it as the root of every exec, as it does with a VM's /dev/vdb. Both
// directories exist in the rootfs (scripts/build-rootfs.sh): runsc makes no mount point in a
// read-only root.
constexpr const char* kGvisorHostDir = "/.space/host";
constexpr const char* kGvisorImageDir = "/.space/image";
// "<dir>/<port>.sock": a port's socket in a gVisor sandbox's host directory (guest or host side).
inline std::string gvisor_port_socket(const std::string& dir, uint32_t port) {
  return dir + "/" + std::to_string(port) + ".sock";
}
// Bumped on any incompatible change (2: Hello.sandbox; 3: Hello.flags, ExecRequest.user).
constexpr uint32_t kVersion = 3;
constexpr uint32_t kMaxPayload = 1u << 20;  // 1 MiB
constexpr size_t kHeaderSize = 8;

enum class Type : uint16_t {
  Hello = 1,       // host -> guest: Hello
  HelloReply = 2,  // guest -> host: HelloReply
  Error = 3,       // either way: ErrorMsg; the sender then closes
  Poweroff = 4,    // host -> guest: empty; guest syncs, unmounts and resets the VM
  Ack = 5,         // guest -> host: empty; the request was accepted
  // Exec conversation (proto/exec.h). Exec is the first request after HelloReply and takes the
  // connection over; Exit is the guest's last frame on it.
  Exec = 6,       // host -> guest: ExecRequest
  Stdin = 7,      // host -> guest: raw bytes; an empty payload is EOF
  Stdout = 8,     // guest -> host: raw bytes; an empty payload is EOF
  Stderr = 9,     // guest -> host: raw bytes; an empty payload is EOF
  Signal = 10,    // host -> guest: SignalMsg, for the process group
  Resize = 11,    // host -> guest: WindowSize, for the pty
  Exit = 12,      // guest -> host: ExitStatus
  StdinAck = 13,  // guest -> host: StdinAck, stdin bytes consumed (flow-control credit)
  // File conversation (proto/files.h): FilePut or FileGet is the first request after HelloReply
  // and takes the connection over. Guest-inits older than these answer "unsupported frame type".
  FilePut = 14,    // host -> guest: PutRequest (copy in)
  FileGet = 15,    // host -> guest: GetRequest (copy out)
  FileEntry = 16,  // sender -> receiver: an entry (encode_entry)
  FileData = 17,   // sender -> receiver: raw bytes of the current file entry
  FileEnd = 18,    // sender -> receiver: empty; the tree is complete
  FileDone = 19,   // guest -> host: CopyDone, the copy in is on disk
  // Credential conversation (proto/cred.h), guest -> host port kCredentialPort, no Hello.
  CredGet = 20,     // guest -> helper: CredGet
  CredValue = 21,   // helper -> guest: CredValue
  CredDenied = 22,  // helper -> guest: CredDenied
  // Egress conversation (proto/net.h), guest -> host port kEgressPort, no Hello.
  NetConnect = 23,  // guest -> broker: NetConnect; a NetResult follows, then raw bytes if ok
  NetResult = 24,   // broker -> guest: NetResult
  // Port forwarding in (space forward): the first request after HelloReply, taking the connection
  // over. guest-init connects to 127.0.0.1:port in the guest and answers NetResult; when that is
  // ok the connection carries raw bytes both ways. The host sends nothing more until it has the
  // answer.
  Forward = 25,  // host -> guest: ForwardRequest
};

struct Frame {
  Type type{};
  std::vector<uint8_t> payload;
};

// Header + payload bytes for one frame. Throws ProtoError if the payload is too large.
std::vector<uint8_t> encode_frame(Type type, std::span<const uint8_t> payload);

class FrameDecoder {
 public:
  // Appends received bytes. Throws ProtoError on a bad header (oversized or reserved != 0).
  void feed(std::span<const uint8_t> data);
  // The next complete frame, if one has arrived.
  std::optional<Frame> next();
  // Bytes buffered but not yet returned as frames.
  size_t buffered() const { return buf_.size(); }

 private:
  void check_header() const;
  std::vector<uint8_t> buf_;
};

// The host opens every conversation with Hello. Besides the version it carries fresh host
// entropy and the host's wall clock: guest-init mixes the entropy into the guest's RNG and steps
// its clock when it is off, so a guest restored from a snapshot never serves a request with a
// replayed RNG state or a stale time. time_ns = 0 means "no time given".
constexpr size_t kEntropySize = 32;
struct Hello : FieldMessage<Hello> {
  uint32_t version = kVersion;
  std::string client;                           // e.g. "space 0.1.0"
  std::array<uint8_t, kEntropySize> entropy{};  // from the host's getrandom()
  uint64_t time_ns = 0;                         // host CLOCK_REALTIME, ns since the epoch
  // The sandbox's id: a guest restored from a template or branched from another sandbox still
  // has the hostname it was snapshotted with, so guest-init takes this one. "" = keep it.
  std::string sandbox;
  // kImage: the sandbox has a user image on its second disk (/dev/vdb). guest-init mounts it
  // before answering (once; later Hellos find it mounted) and runs every exec inside it. A
  // mount failure does not fail the handshake: each exec is then refused with its reason.
  static constexpr uint32_t kImage = 1;
  // kNetwork: the sandbox has a network policy. guest-init starts its HTTP proxy on
  // 127.0.0.1:3128 (once); the host adds the proxy variables to each exec's env.
  static constexpr uint32_t kNetwork = 2;
  uint32_t flags = 0;
  SPACE_FIELDS(version, client, entropy, time_ns, sandbox, flags);
  void check() const;  // known flags only
  // Throws ProtoError on malformed input. A Hello of another version is returned with only its
  // version read, so that the receiver can name the mismatch.
  static Hello decode(std::span<const uint8_t> p);
};

struct HelloReply : FieldMessage<HelloReply> {
  uint32_t version = kVersion;
  std::string agent;     // e.g. "guest-init 0.1.0"
  std::string hostname;  // the sandbox id the guest took as its hostname
  uint64_t uptime_ms = 0;
  SPACE_FIELDS(version, agent, hostname, uptime_ms);
};

struct ErrorMsg : FieldMessage<ErrorMsg> {
  std::string message;
  SPACE_FIELDS(message);
};

}  // namespace space::proto

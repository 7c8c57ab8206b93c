// Recorded frames: one sample of every binary message of the agent protocol, with the bytes the
// codecs produced for it on 2026-12-07 (before the field lists of proto/fields.h replaced the
// hand-written encoders and decoders). Each sample must still encode to exactly those bytes, and
// those bytes must decode and encode again to themselves: a guest-init or a template of that day
// keeps talking to this host.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/agent.h"
#include "proto/cred.h"
#include "proto/exec.h"
#include "proto/files.h"
#include "proto/net.h"

using namespace space;
using namespace space::proto;

namespace {

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 1 < s.size(); i += 2) b.push_back(std::stoi(s.substr(i, 2), nullptr, 16));
  return b;
}

// `sample` encodes to `recorded`, and `recorded` decodes to a message that encodes to itself.
template <class M>
void check_recorded(const M& sample, const std::string& recorded) {
  CHECK(hex(sample.encode()) == recorded);
  CHECK(hex(M::decode(unhex(recorded)).encode()) == recorded);
}

}  // namespace

TEST_CASE("recorded frames: agent") {
  Hello h;
  h.client = "space 0.1.0";
  for (size_t i = 0; i < h.entropy.size(); i++) h.entropy[i] = static_cast<uint8_t>(i * 7);
  h.time_ns = 1'765'000'000'123'456'789ULL;
  h.sandbox = "agent-7";
  h.flags = Hello::kImage | Hello::kNetwork;
  check_recorded(h,
                 "030000000b000000737061636520302e312e3000070e151c232a31383f464d545b626970777e858c9"
                 "39aa1a8afb6bdc4cbd2d9154dec13268a7e18070000006167656e742d3703000000");
  HelloReply r{.version = kVersion,
               .agent = "guest-init 0.1.0",
               .hostname = "agent-7",
               .uptime_ms = 1234567};
  check_recorded(
      r, "030000001000000067756573742d696e697420302e312e30070000006167656e742d3787d6120000000000");
  check_recorded(ErrorMsg{.message = "no such file"}, "0c0000006e6f20737563682066696c65");
}

TEST_CASE("recorded frames: exec") {
  ExecRequest full;
  full.argv = {"python3", "-c", "print(1)"};
  full.env = {"A=1", "PATH=/usr/bin"};
  full.cwd = "/work";
  full.tty = true;
  full.with_stdin = true;
  full.rows = 24;
  full.cols = 80;
  full.timeout_ms = 30000;
  full.secret_env = {"TOKEN=gh.token"};
  full.user = "nobody:nogroup";
  full.groups = {4, 27};
  full.umask = 022;
  full.rlimits = {{7, 1024, 4096}, {1, 0, 0}};
  check_recorded(full,
                 "730000000300000007000000707974686f6e33020000002d63080000007072696e742831290200000"
                 "003000000413d310d000000504154483d2f7573722f62696e050000002f776f726b00000000000000"
                 "001800500030750000010000000e000000544f4b454e3d67682e746f6b656e0e0000006e6f626f647"
                 "93a6e6f67726f757002000000040000001b0000000100000012000000020000000700000000040000"
                 "0000000000100000000000000100000000000000000000000000000000000000");
  ExecRequest ids;
  ids.argv = {"true"};
  ids.uid = 1000;
  ids.gid = 100;
  check_recorded(
      ids, "0c0000000100000004000000747275650000000000000000e8030000640000000000000000000000");
  check_recorded(SignalMsg{.signo = 15}, "0f000000");
  check_recorded(WindowSize{.rows = 50, .cols = 132}, "32008400");
  check_recorded(StdinAck{.bytes = 65536}, "00000100");
  check_recorded(
      ExitStatus{.kind = ExitKind::Signaled, .value = 9, .duration_us = 123456789, .message = ""},
      "010900000015cd5b070000000000000000");
  check_recorded(ExitStatus{.kind = ExitKind::NotFound,
                            .value = 2,
                            .duration_us = 10,
                            .message = "nosuch: not found"},
                 "03020000000a00000000000000110000006e6f737563683a206e6f7420666f756e64");
}

TEST_CASE("recorded frames: files") {
  check_recorded(PutRequest{.flags = PutRequest::kArchive | PutRequest::kDir,
                            .dest = "/work",
                            .name = "src",
                            .user = "1000"},
                 "03000000050000002f776f726b030000007372630400000031303030");
  check_recorded(GetRequest{.flags = GetRequest::kFollowLink, .src = "/etc/hostname"},
                 "010000000d0000002f6574632f686f73746e616d65");
  check_recorded(CopyDone{.entries = 12, .bytes = 34567, .skipped = 1},
                 "0c0000000000000007870000000000000100000000000000");
  TreeEntry e;
  e.kind = EntryKind::Symlink;
  e.name = "a/b";
  e.mode = 0777;
  e.uid = 1000;
  e.gid = 1000;
  e.mtime_sec = 1'765'000'000;
  e.mtime_nsec = 999;
  e.target = "../c";
  e.xattrs = {{"user.k", "v"}, {"user.empty", ""}};
  CHECK(hex(encode_entry(e)) ==
        "0303000000612f62ff010000e8030000e803000040c3336900000000e70300000000000000000000040000002e"
        "2e2f6300000000000000000200000006000000757365722e6b01000000760a000000757365722e656d70747900"
        "000000");
  CHECK(hex(encode_entry(
            decode_entry(unhex("0303000000612f62ff010000e8030000e803000040c3336900000000e7030000000"
                               "0000000000000040000002e2e2f6300000000000000000200000006000000757365"
                               "722e6b01000000760a000000757365722e656d70747900000000")))) ==
        "0303000000612f62ff010000e8030000e803000040c3336900000000e70300000000000000000000040000002e"
        "2e2f6300000000000000000200000006000000757365722e6b01000000760a000000757365722e656d70747900"
        "000000");
  TreeEntry dev;
  dev.kind = EntryKind::CharDev;
  dev.name = "null";
  dev.mode = 0666;
  dev.mtime_sec = -5;
  dev.rdev = 0x103;
  CHECK(hex(encode_entry(dev)) ==
        "05040000006e756c6cb60100000000000000000000fbffffffffffffff00000000000000000000000000000000"
        "030100000000000000000000");
  CHECK(hex(encode_entry(
            decode_entry(unhex("05040000006e756c6cb60100000000000000000000fbffffffffffffff000000000"
                               "00000000000000000000000030100000000000000000000")))) ==
        "05040000006e756c6cb60100000000000000000000fbffffffffffffff00000000000000000000000000000000"
        "030100000000000000000000");
}

TEST_CASE("recorded frames: net and credentials") {
  check_recorded(NetConnect{.host = "example.com", .port = 443},
                 "0b0000006578616d706c652e636f6dbb01");
  check_recorded(ForwardRequest{.port = 8080}, "901f");
  check_recorded(NetResult{.status = kNetOk, .address = "127.0.0.2:443", .message = ""},
                 "c8000d0000003132372e302e302e323a34343300000000");
  check_recorded(
      NetResult{.status = 403, .address = "", .message = "example.com:443 is not allowed"},
      "9301000000001e0000006578616d706c652e636f6d3a343433206973206e6f7420616c6c6f776564");
  check_recorded(CredGet{.name = "gh.token"}, "0800000067682e746f6b656e");
  check_recorded(CredValue{.value = {'s', 'e', 'c', 0, 1}}, "050000007365630001");
  check_recorded(CredDenied{.code = DenyCode::Expired, .message = "the grant expired"},
                 "0200000011000000746865206772616e742065787069726564");
}

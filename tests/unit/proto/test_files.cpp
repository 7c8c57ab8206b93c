// File messages (src/proto/files.h): round trips, and every malformed case the decoders must
// refuse with ProtoError (unknown flags and kinds, NUL bytes, oversized names, absolute or `..`
// entry names and hard-link targets, sizes on entries that are not files, targets on entries that
// are not links, truncation, trailing bytes).
#include <doctest/doctest.h>

#include "proto/files.h"
#include "support/checks.h"

using namespace space;
using namespace space::proto;
using space::test::check_every_truncation_throws;

namespace {

TreeEntry full_entry() {
  TreeEntry e;
  e.kind = EntryKind::File;
  e.name = "dir/a file \xc3\xa9";
  e.mode = 04755;
  e.uid = 1000;
  e.gid = 100;
  e.mtime_sec = -5;
  e.mtime_nsec = 999999999;
  e.size = 1ull << 40;
  e.xattrs = {{"user.a", "1"}, {"security.capability", std::string("\0\1\2", 3)}};
  return e;
}

}  // namespace

TEST_CASE("PutRequest and GetRequest round-trip; bad flags, names and NULs are refused") {
  PutRequest q;
  q.flags = PutRequest::kArchive | PutRequest::kDir | PutRequest::kContents;
  q.dest = "/work";
  q.name = "src";
  q.user = "app:staff";
  auto b = PutRequest::decode(q.encode());
  CHECK(b.flags == q.flags);
  CHECK(b.dest == q.dest);
  CHECK(b.name == q.name);
  CHECK(b.user == q.user);
  check_every_truncation_throws<PutRequest>(q.encode());

  auto refused = [](PutRequest r) { CHECK_THROWS_AS(PutRequest::decode(r.encode()), ProtoError); };
  PutRequest bad = q;
  bad.flags = 16;
  refused(bad);
  bad = q;
  bad.dest = "";
  refused(bad);
  bad = q;
  bad.dest = std::string("/a\0b", 4);
  refused(bad);
  bad = q;
  bad.name = "a/b";
  refused(bad);
  bad = q;
  bad.name = "..";
  refused(bad);
  bad = q;
  bad.dest = std::string(kMaxEntryName + 1, 'a');
  refused(bad);

  GetRequest g;
  g.flags = GetRequest::kFollowLink;
  g.src = "/out";
  auto gb = GetRequest::decode(g.encode());
  CHECK(gb.flags == g.flags);
  CHECK(gb.src == g.src);
  g.flags = 2;
  CHECK_THROWS_AS(GetRequest::decode(g.encode()), ProtoError);
  g.flags = 0;
  g.src = "";
  CHECK_THROWS_AS(GetRequest::decode(g.encode()), ProtoError);
}

TEST_CASE("entries round-trip every field") {
  TreeEntry e = full_entry();
  TreeEntry b = decode_entry(encode_entry(e));
  CHECK(b.kind == e.kind);
  CHECK(b.name == e.name);
  CHECK(b.mode == e.mode);
  CHECK(b.uid == e.uid);
  CHECK(b.gid == e.gid);
  CHECK(b.mtime_sec == e.mtime_sec);
  CHECK(b.mtime_nsec == e.mtime_nsec);
  CHECK(b.size == e.size);
  CHECK(b.xattrs == e.xattrs);
  auto full = encode_entry(e);
  for (size_t n = 0; n < full.size(); n++)
    CHECK_THROWS_AS(decode_entry({full.data(), n}), ProtoError);
  auto trailing = full;
  trailing.push_back(0);
  CHECK_THROWS_AS(decode_entry(trailing), ProtoError);

  TreeEntry l;
  l.kind = EntryKind::Symlink;
  l.name = "l";
  l.target = "../x";
  CHECK(decode_entry(encode_entry(l)).target == "../x");
  TreeEntry d;
  d.kind = EntryKind::CharDev;
  d.rdev = 0x0103;
  CHECK(decode_entry(encode_entry(d)).rdev == 0x0103);
}

TEST_CASE("malformed entries are refused") {
  auto refused = [](const TreeEntry& e) {
    CHECK_THROWS_AS(decode_entry(encode_entry(e)), ProtoError);
  };
  TreeEntry e = full_entry();
  e.mode = 010000;
  refused(e);
  e = full_entry();
  e.mtime_nsec = 1000000000;
  refused(e);
  e = full_entry();
  e.name = std::string("a\0b", 3);
  refused(e);
  e = full_entry();
  e.target = "x";  // a target on a file
  refused(e);
  TreeEntry l;
  l.kind = EntryKind::Symlink;
  l.name = "l";  // a link without a target
  refused(l);
  TreeEntry d;
  d.kind = EntryKind::Dir;
  d.size = 1;  // a size on a directory
  refused(d);
  d.size = 0;
  d.rdev = 1;  // a device number on a directory
  refused(d);
  e = full_entry();
  e.xattrs.assign(kMaxEntryXattrs + 1, {"user.x", "1"});
  refused(e);
  e = full_entry();
  e.xattrs = {{"", "1"}};
  refused(e);
  e = full_entry();
  e.xattrs = {{"user.big", std::string(kMaxXattrValue + 1, 'x')}};
  refused(e);
  auto bytes = encode_entry(full_entry());
  bytes[0] = 0;  // kind 0
  CHECK_THROWS_AS(decode_entry(bytes), ProtoError);
  bytes[0] = 8;  // past Fifo
  CHECK_THROWS_AS(decode_entry(bytes), ProtoError);
}

TEST_CASE("entries whose name or hard-link target is absolute or climbs with '..' are refused") {
  auto refused = [](EntryKind kind, std::string name, std::string target, const char* why) {
    TreeEntry e;
    e.kind = kind;
    e.name = name;
    e.target = target;
    CAPTURE(name);
    CAPTURE(target);
    CHECK_THROWS_WITH_AS(decode_entry(encode_entry(e)), doctest::Contains(why), ProtoError);
  };
  refused(EntryKind::File, "../x", "", "'..'");
  refused(EntryKind::File, "/abs", "", "absolute");
  refused(EntryKind::Dir, "a/../../b", "", "'..'");
  refused(EntryKind::Symlink, "a/..", "/etc", "'..'");
  refused(EntryKind::File, "a/" + std::string(256, 'x'), "", "longer than");
  refused(EntryKind::Hardlink, "h", "../../etc/passwd", "links to '../../etc/passwd'");
  refused(EntryKind::Hardlink, "h", "/etc/passwd", "absolute");
  // Symbolic link targets are data: absolute and `..` ones pass, and so do safe names.
  TreeEntry l;
  l.kind = EntryKind::Symlink;
  l.name = "./a//l";
  l.target = "../../etc";
  CHECK(decode_entry(encode_entry(l)).target == "../../etc");
  l.target = "/etc";
  CHECK(decode_entry(encode_entry(l)).name == "./a//l");
  TreeEntry h;
  h.kind = EntryKind::Hardlink;
  h.name = "..h";
  h.target = "d/..f";
  CHECK(decode_entry(encode_entry(h)).target == "d/..f");
}

TEST_CASE("CopyDone round-trips") {
  CopyDone d{.entries = 3, .bytes = 1ull << 33, .skipped = 1};
  auto b = CopyDone::decode(d.encode());
  CHECK(b.entries == 3);
  CHECK(b.bytes == 1ull << 33);
  CHECK(b.skipped == 1);
  check_every_truncation_throws<CopyDone>(d.encode());
}

namespace {

// Records what a TreeReceiver hands its sink.
struct Recorder : TreeSink {
  std::vector<std::string> log;
  bool want = true;
  bool begin_entry(const TreeEntry& e) override {
    log.push_back("entry " + e.name);
    return want && e.kind == EntryKind::File;
  }
  void file_data(std::span<const uint8_t> b, uint64_t offset) override {
    log.push_back("data " + std::to_string(offset) + "+" + std::to_string(b.size()));
  }
  void end_file() override { log.push_back("end"); }
};

Frame entry_frame(const std::string& name, uint64_t size, EntryKind kind = EntryKind::File) {
  TreeEntry e;
  e.kind = kind;
  e.name = name;
  e.size = size;
  return {Type::FileEntry, encode_entry(e)};
}
Frame data_frame(size_t n) {
  return {Type::FileData, std::vector<uint8_t>(n, 'x')};
}
Frame end_frame() {
  return {Type::FileEnd, {}};
}

}  // namespace

TEST_CASE("TreeReceiver: entries, data in order, and every out-of-sequence frame refused") {
  Recorder r;
  TreeReceiver rx(r);
  CHECK_FALSE(rx.feed(entry_frame("", 0, EntryKind::Dir)));
  CHECK_FALSE(rx.feed(entry_frame("a", 5)));
  CHECK_FALSE(rx.feed(data_frame(3)));
  CHECK_FALSE(rx.feed(data_frame(2)));
  CHECK_FALSE(rx.feed(entry_frame("empty", 0)));
  CHECK(rx.feed(end_frame()));
  CHECK(r.log == std::vector<std::string>{"entry ", "entry a", "data 0+3", "data 3+2", "end",
                                          "entry empty", "end"});
  CHECK(rx.entries() == 3);
  CHECK(rx.bytes() == 5);
  CHECK_THROWS_AS(rx.feed(entry_frame("late", 0)), ProtoError);  // after the end

  auto refused = [](std::vector<Frame> frames) {
    Recorder rec;
    TreeReceiver t(rec);
    for (size_t i = 0; i + 1 < frames.size(); i++) t.feed(frames[i]);
    CHECK_THROWS_AS(t.feed(frames.back()), ProtoError);
  };
  refused({data_frame(1)});                                            // data outside a file
  refused({entry_frame("f", 2), data_frame(3)});                       // beyond its size
  refused({entry_frame("f", 2), data_frame(1), entry_frame("g", 0)});  // entry inside the data
  refused({entry_frame("f", 2), end_frame()});                         // end inside the data
  refused({entry_frame("f", 2), data_frame(0)});                       // an empty data frame
  refused({Frame{Type::Stdout, {}}});                                  // another frame type
  refused({Frame{Type::FileEnd, {1}}});                                // FileEnd with a payload

  Recorder skip;
  skip.want = false;  // a sink that drops a file's data still sees the sequence checked
  TreeReceiver t(skip);
  t.feed(entry_frame("f", 2));
  t.feed(data_frame(2));
  CHECK(t.feed(end_frame()));
  CHECK(skip.log == std::vector<std::string>{"entry f"});
}

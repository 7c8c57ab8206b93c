// File message codecs; see files.h. Encoders trust their caller; decoders trust nothing.
#include "proto/files.h"

#include "util/error.h"

namespace space::proto {
namespace {

void check_path(const std::string& s, const char* what, bool allow_empty) {
  if (!allow_empty && s.empty()) throw ProtoError(std::string(what) + " is empty");
  if (s.size() > kMaxEntryName) throw ProtoError(std::string(what) + " is too long");
  if (s.find('\0') != std::string::npos)
    throw ProtoError(std::string(what) + " contains a NUL byte");
}

// An entry name, or a hard link's target, that util/tree.h's rules refuse (absolute, `..`, a
// component longer than NAME_MAX): no sink ever sees it.
void check_entry_name(const TreeEntry& e) {
  try {
    entry_components(e.name);
  } catch (const Error& err) {
    throw ProtoError("entry '" + e.name + "' " + err.what());
  }
  if (e.kind != EntryKind::Hardlink) return;
  try {
    entry_components(e.target);
  } catch (const Error& err) {
    throw ProtoError("entry '" + e.name + "' links to '" + e.target + "', which " + err.what());
  }
}

}  // namespace

void PutRequest::check() const {
  if (flags & ~(kArchive | kDir | kContents | kStream)) throw ProtoError("unknown put flags");
  check_path(dest, "the destination", false);
  check_path(name, "the source name", true);
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    throw ProtoError("the source name is not a single file name");
  check_path(user, "the user", true);
}

void GetRequest::check() const {
  if (flags & ~kFollowLink) throw ProtoError("unknown get flags");
  check_path(src, "the source", false);
}

void FieldList<TreeEntry>::check(const TreeEntry& e) {
  if (e.kind < EntryKind::Dir || e.kind > EntryKind::Fifo) throw ProtoError("unknown entry kind");
  for (const auto& [name, value] : e.xattrs) {
    if (name.empty() || name.size() > 255 || name.find('\0') != std::string::npos)
      throw ProtoError("an invalid extended attribute name");
    if (value.size() > kMaxXattrValue) throw ProtoError("an extended attribute is too large");
  }
  check_path(e.name, "the entry name", true);
  if (e.mode & ~07777u) throw ProtoError("entry mode has bits beyond 07777");
  if (e.mtime_nsec >= 1'000'000'000u) throw ProtoError("entry mtime nanoseconds out of range");
  const bool link = e.kind == EntryKind::Symlink || e.kind == EntryKind::Hardlink;
  check_path(e.target, "the link target", !link);
  if (!link && !e.target.empty()) throw ProtoError("a target on an entry that is not a link");
  check_entry_name(e);
  if (e.kind != EntryKind::File && e.size != 0)
    throw ProtoError("a size on an entry that is not a file");
  const bool dev = e.kind == EntryKind::CharDev || e.kind == EntryKind::BlockDev;
  if (!dev && e.rdev != 0) throw ProtoError("a device number on an entry that is not a device");
}

std::vector<uint8_t> encode_entry(const TreeEntry& e) {
  return encode_fields(e);
}

TreeEntry decode_entry(std::span<const uint8_t> p) {
  return decode_fields<TreeEntry>(p);
}

bool TreeReceiver::feed(const Frame& f) {
  if (ended_) throw ProtoError("a frame after the end of the tree");
  switch (f.type) {
    case Type::FileEntry: {
      if (left_) throw ProtoError("an entry before the previous file's data was complete");
      TreeEntry e = decode_entry(f.payload);
      entries_++;
      wanted_ = sink_.begin_entry(e);
      left_ = e.kind == EntryKind::File ? e.size : 0;
      offset_ = 0;
      if (wanted_ && left_ == 0) sink_.end_file();
      return false;
    }
    case Type::FileData:
      if (f.payload.empty() || f.payload.size() > left_)
        throw ProtoError(left_ ? "an empty file data frame" : "file data outside a file's size");
      if (wanted_) sink_.file_data(f.payload, offset_);
      offset_ += f.payload.size();
      left_ -= f.payload.size();
      bytes_ += f.payload.size();
      if (wanted_ && left_ == 0) sink_.end_file();
      return false;
    case Type::FileEnd:
      if (left_) throw ProtoError("the tree ended inside a file's data");
      if (!f.payload.empty()) throw ProtoError("FileEnd takes no payload");
      ended_ = true;
      return true;
    default:
      throw ProtoError("unexpected frame type " + std::to_string(static_cast<int>(f.type)) +
                       " in a tree");
  }
}

}  // namespace space::proto

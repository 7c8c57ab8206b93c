// libFuzzer harness for the tar stream `space cp ID:SRC -` writes (store/archive_entries.h's
// ArchiveWriter) from a guest's entries, which a hostile guest chooses. The input is read as a
// small grammar of entries (kind, name and link target made of components such as "..", ".",
// "", "l", "etc", or raw bytes, with or without a leading '/', and a little file data), so that
// escapes, links and entries beneath links are near at hand. They go through the writer until it
// refuses one (an Error) or the stream ends; the stream is then read back with libarchive (linked
// here, apart from the writer's dlopen()ed table) and must hold nothing an extractor could be
// led astray by: no name or hard-link target that is absolute, has a `..` component or lies
// outside the top; no entry named as or beneath an earlier symbolic link; no hard link to what is
// not an earlier file; and a stream the writer completed holds every entry it accepted. A broken
// rule is __builtin_trap; ASan and UBSan catch the rest. ctest runs it for a fixed number of
// inputs from the seeds in tests/fuzz/corpus/archive.
#include <archive.h>
#include <archive_entry.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "store/archive_entries.h"
#include "util/error.h"

using namespace space;

namespace {

[[noreturn]] void broken(const std::string& why) {
  std::fprintf(stderr, "fuzz_archive: %s\n", why.c_str());
  __builtin_trap();
}

class Input {
 public:
  Input(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool done() const { return i_ >= n_; }
  uint8_t byte() { return i_ < n_ ? d_[i_++] : 0; }
  // A name: up to four components from a vocabulary of troublemakers or raw bytes (which may
  // hold '/' or NUL), an optional leading '/'.
  std::string name() {
    static const char* const kWords[] = {"a", "b", "l", "..", ".", "", "etc", "passwd", "t"};
    uint8_t head = byte();
    std::string s = (head & 0x80) ? "/" : "";
    for (int i = 0, n = head % 5; i < n; i++) {
      uint8_t c = byte();
      if (i) s += '/';
      if (c < 0xe0) {
        s += kWords[c % (sizeof kWords / sizeof *kWords)];
      } else {
        for (int k = 0, len = c & 0x0f; k < len; k++) s += static_cast<char>(byte());
      }
    }
    if (head & 0x40) s += '/';
    return s;
  }

 private:
  const uint8_t* d_;
  size_t n_, i_ = 0;
};

// The file all runs write to, emptied before each.
int stream_fd() {
  static const int fd = [] {
    int f = ::memfd_create("fuzz-archive", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

bool climbs(const std::string& n) {
  if (n.starts_with("/")) return true;
  size_t i = 0;
  while (i <= n.size()) {
    size_t j = n.find('/', i);
    if (j == std::string::npos) j = n.size();
    if (n.compare(i, j - i, "..") == 0) return true;
    i = j + 1;
  }
  return false;
}

// Reads the stream back and checks it; returns the number of entries read and whether it ended
// with its end-of-archive blocks.
std::pair<size_t, bool> check_stream(int fd, const std::string& top) {
  if (::lseek(fd, 0, SEEK_SET) != 0) std::abort();
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  std::set<std::string> links, files;
  size_t count = 0;
  bool complete = false;
  auto under_link = [&](const std::string& n) {
    for (size_t at = n.find('/'); at != std::string::npos; at = n.find('/', at + 1))
      if (links.count(n.substr(0, at))) return true;
    return links.count(n) != 0;
  };
  if (archive_read_open_fd(a, fd, 8192) == ARCHIVE_OK) {
    archive_entry* e;
    for (;;) {
      int r = archive_read_next_header(a, &e);
      if (r == ARCHIVE_EOF) {
        complete = true;
        break;
      }
      if (r < ARCHIVE_WARN) break;  // an abandoned stream ends early
      count++;
      const char* p = archive_entry_pathname(e);
      std::string name = p ? p : "";
      if (name.size() > 1 && name.ends_with("/")) name.pop_back();
      if (climbs(name)) broken("the name '" + name + "' is absolute or climbs");
      if (top.empty() ? name.starts_with("./") : name != top && !name.starts_with(top + "/"))
        broken("the name '" + name + "' lies outside the top");
      if (under_link(name)) broken("'" + name + "' is or lies beneath an earlier symbolic link");
      const mode_t type = archive_entry_filetype(e);
      if (const char* h = archive_entry_hardlink(e)) {
        std::string target = h;
        if (climbs(target) || under_link(target) || !files.count(target))
          broken("'" + name + "' links to '" + target + "', not an earlier file");
      }
      if (type == AE_IFLNK) {
        links.insert(name);
        files.erase(name);
      } else if (type == AE_IFDIR) {
        files.erase(name);
      } else {
        files.insert(name);
      }
      archive_read_data_skip(a);
    }
  }
  archive_read_free(a);
  return {count, complete};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Input in(data, size);
  const std::string top = (in.byte() & 1) ? "t" : "";
  const int fd = stream_fd();
  if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) std::abort();
  size_t accepted = 0;
  bool closed = false;
  {
    store::ArchiveWriter w(fd, top, "fuzz");
    try {
      TreeEntry root;
      root.kind = EntryKind::Dir;
      w.begin(root);  // the stream's top, as copy out sends it first
      accepted++;
      while (!in.done()) {
        TreeEntry e;
        e.kind = static_cast<EntryKind>(1 + in.byte() % 7);
        e.name = in.name();
        if (e.kind == EntryKind::Symlink || e.kind == EntryKind::Hardlink) e.target = in.name();
        e.mode = in.byte() * 17u & 07777;
        if (e.kind == EntryKind::File) e.size = in.byte() % 64;
        w.begin(e);
        accepted++;
        if (e.kind == EntryKind::File) w.data(std::vector<uint8_t>(e.size, 'z'));
      }
      w.close();
      closed = true;
    } catch (const Error&) {
      // refused: the stream is abandoned, and must still hold nothing unsafe
    }
  }
  auto [count, complete] = check_stream(fd, top);
  if (closed && (!complete || count != accepted))
    broken("a completed stream holds " + std::to_string(count) + " of " + std::to_string(accepted) +
           " entries");
  if (!closed && count > accepted) broken("an abandoned stream holds more than was accepted");
  return 0;
}

// Sparse memory file writers (whole, or a diff against the mapped base) and checked opener; see
// snapshot_memory.h.
#include "vmm/snapshot_memory.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "util/error.h"
#include "util/log.h"
#include "vmm/snapshot.h"

namespace space::vmm::snapshot {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kMaxRun = 8u << 20;  // bytes per pwrite

// A temp file beside the target (in the same directory descriptor), removed unless commit() was
// called.
class TempFile {
 public:
  explicit TempFile(const fs::FileAt& to) : to_(to) {
    static unsigned counter = 0;
    auto slash = to.name.rfind('/');
    std::string dir = slash == std::string::npos ? "" : to.name.substr(0, slash + 1);
    name_ = dir + "." + to.name.substr(slash + 1) + ".tmp-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter++);
    fd_.reset(::openat(to.dir, name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0600));
    if (!fd_) throw_errno("create a temporary file for " + to.shown);
  }
  ~TempFile() {
    if (!committed_) ::unlinkat(to_.dir, name_.c_str(), 0);
  }
  int fd() const { return fd_.get(); }
  const std::string& shown() const { return to_.shown; }

  // Makes the finished file the target: size, fsync, rename, fsync of the directory.
  void commit(uint64_t size) {
    if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) throw_errno("truncate " + shown());
    if (::fsync(fd_.get()) != 0) throw_errno("fsync " + shown());
    if (::renameat(to_.dir, name_.c_str(), to_.dir, to_.name.c_str()) != 0)
      throw_errno("rename into " + shown());
    committed_ = true;
    auto slash = to_.name.rfind('/');
    std::string parent = slash == std::string::npos ? "." : to_.name.substr(0, slash);
    if (parent.empty()) parent = "/";
    Fd d(::openat(to_.dir, parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!d || ::fsync(d.get()) != 0) throw_errno("fsync the directory of " + shown());
  }

 private:
  fs::FileAt to_;
  std::string name_;
  Fd fd_;
  bool committed_ = false;
};

void pwrite_all(int fd, const uint8_t* p, size_t len, uint64_t off, const std::string& path) {
  while (len > 0) {
    ssize_t n = ::pwrite(fd, p, len, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write " + path);
    }
    p += n;
    off += static_cast<uint64_t>(n);
    len -= static_cast<size_t>(n);
  }
}

// Why `base` cannot serve as the base of a diff of `ram`, or "" if it can.
std::string check_base(const MemoryBase& base, std::span<const uint8_t> ram) {
  struct stat st {};
  if (base.fd < 0) return base.path + ": not open";
  if (::fstat(base.fd, &st) != 0) return base.path + ": " + std::strerror(errno);
  if (static_cast<uint64_t>(st.st_size) != ram.size()) return base.path + " changed size";
  return "";
}

}  // namespace

// pagemap entry bits: Documentation/admin-guide/mm/pagemap.rst.
std::vector<uint64_t> read_pagemap(std::span<const uint8_t> ram, int pagemap_fd) {
  Fd own;
  if (pagemap_fd < 0) {
    own.reset(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    if (!own) return {};
    pagemap_fd = own.get();
  }
  std::vector<uint64_t> e(ram.size() / kPage);
  const uint64_t off = reinterpret_cast<uintptr_t>(ram.data()) / kPage * sizeof(uint64_t);
  auto* dst = reinterpret_cast<char*>(e.data());
  const size_t bytes = e.size() * sizeof(uint64_t);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(pagemap_fd, dst + done, bytes - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    done += static_cast<size_t>(n);
  }
  return e;
}

bool page_written(uint64_t entry) {
  constexpr uint64_t kPresent = 1ULL << 63, kSwapped = 1ULL << 62, kFilePage = 1ULL << 61;
  return (entry & kSwapped) || ((entry & kPresent) && !(entry & kFilePage));
}

MemoryBase memory_base_of(int fd, const std::string& path) {
  return {path, fd};
}

MemoryFileStats write_memory_diff(const fs::FileAt& to, std::span<const uint8_t> ram,
                                  const MemoryBase& base, int pagemap_fd, bool* diff) {
  if (diff) *diff = false;
  if (base.path.empty()) return write_memory_file(to, ram);
  if (ram.size() % kPage != 0)
    fail("write " + to.shown + ": memory size is not a multiple of 4 KiB");
  std::string why = check_base(base, ram);
  std::vector<uint64_t> map;
  if (why.empty()) {
    map = read_pagemap(ram, pagemap_fd);
    if (map.empty()) why = "cannot read the pagemap";
  }
  if (why.empty()) {
    TempFile tmp(to);
    if (::ioctl(tmp.fd(), FICLONE, base.fd) != 0) {
      why = "cannot reflink " + base.path + ": " + std::strerror(errno);
    } else {
      MemoryFileStats st;
      st.size = ram.size();
      size_t i = 0;
      const size_t pages = map.size();
      while (i < pages) {
        if (!page_written(map[i])) {
          i++;
          continue;
        }
        const bool zero = page_is_zero(ram.data() + i * kPage);
        size_t j = i + 1;
        while (j < pages && (j - i) * kPage < kMaxRun && page_written(map[j]) &&
               page_is_zero(ram.data() + j * kPage) == zero)
          j++;
        const uint64_t off = i * kPage, len = (j - i) * kPage;
        if (!zero || ::fallocate(tmp.fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                 static_cast<off_t>(off), static_cast<off_t>(len)) != 0) {
          pwrite_all(tmp.fd(), ram.data() + off, len, off, tmp.shown());
          st.data_bytes += len;
        }
        i = j;
      }
      tmp.commit(ram.size());
      if (diff) *diff = true;
      return st;
    }
  }
  log::info("memory written in full, not as a diff: " + why);
  return write_memory_file(to, ram);
}

bool page_is_zero(const uint8_t* p) {
  uint64_t head;
  std::memcpy(&head, p, 8);
  return head == 0 && std::memcmp(p, p + 8, kPage - 8) == 0;
}

MemoryFileStats write_memory_file(const fs::FileAt& to, std::span<const uint8_t> ram) {
  if (ram.size() % kPage != 0)
    fail("write " + to.shown + ": memory size is not a multiple of 4 KiB");
  TempFile tmp(to);
  MemoryFileStats st;
  st.size = ram.size();
  size_t pos = 0;
  while (pos < ram.size()) {
    if (page_is_zero(ram.data() + pos)) {
      pos += kPage;
      continue;
    }
    size_t end = pos + kPage;
    while (end < ram.size() && end - pos < kMaxRun && !page_is_zero(ram.data() + end)) end += kPage;
    pwrite_all(tmp.fd(), ram.data() + pos, end - pos, pos, tmp.shown());
    st.data_bytes += end - pos;
    pos = end;
  }
  tmp.commit(ram.size());
  return st;
}

MemoryFileStats write_memory_file(const std::string& path, std::span<const uint8_t> ram) {
  return write_memory_file(fs::file_at(path), ram);
}

void check_memory_file(int fd, const std::string& path, uint64_t expected_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) != expected_bytes)
    throw Error(
        "snapshot " + path + ": not a regular file of " + std::to_string(expected_bytes) + " bytes",
        0, rebuild_hint());
}

}  // namespace space::vmm::snapshot

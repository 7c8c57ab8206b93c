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

// Removes the temp file unless commit() was called.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {
    fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd_) throw_errno("create " + path_);
  }
  ~TempFile() {
    if (!committed_) ::unlink(path_.c_str());
  }
  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  void commit() { committed_ = true; }

 private:
  std::string path_;
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

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Makes the finished temp file `path`: size, fsync, rename, fsync of the directory.
void commit(TempFile& tmp, const std::string& path, uint64_t size) {
  if (::ftruncate(tmp.fd(), static_cast<off_t>(size)) != 0) throw_errno("truncate " + tmp.path());
  if (::fsync(tmp.fd()) != 0) throw_errno("fsync " + tmp.path());
  if (::rename(tmp.path().c_str(), path.c_str()) != 0)
    throw_errno("rename " + tmp.path() + " to " + path);
  tmp.commit();
  std::string dir = dir_of(path);
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d || ::fsync(d.get()) != 0) throw_errno("fsync " + dir);
}

std::string temp_name(const std::string& path) {
  return dir_of(path) + "/." + path.substr(path.rfind('/') + 1) + ".tmp-" +
         std::to_string(::getpid());
}

// Why `base` cannot serve as the base of a diff of `ram`, or "" if it can (`fd` then opened).
std::string check_base(const MemoryBase& base, std::span<const uint8_t> ram, Fd& fd) {
  fd.reset(::open(base.path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return base.path + ": " + std::strerror(errno);
  if (st.st_dev != base.dev || st.st_ino != base.ino) return base.path + " was replaced";
  if (static_cast<uint64_t>(st.st_size) != ram.size()) return base.path + " changed size";
  return "";
}

}  // namespace

// pagemap entry bits: Documentation/admin-guide/mm/pagemap.rst.
std::vector<uint64_t> read_pagemap(std::span<const uint8_t> ram) {
  Fd fd(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  std::vector<uint64_t> e(ram.size() / kPage);
  const uint64_t off = reinterpret_cast<uintptr_t>(ram.data()) / kPage * sizeof(uint64_t);
  auto* dst = reinterpret_cast<char*>(e.data());
  const size_t bytes = e.size() * sizeof(uint64_t);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd.get(), dst + done, bytes - done, static_cast<off_t>(off + done));
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
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("stat " + path);
  return {path, st.st_dev, st.st_ino};
}

MemoryFileStats write_memory_diff(const std::string& path, std::span<const uint8_t> ram,
                                  const MemoryBase& base, bool* diff) {
  if (diff) *diff = false;
  if (base.path.empty()) return write_memory_file(path, ram);
  if (ram.size() % kPage != 0) fail("write " + path + ": memory size is not a multiple of 4 KiB");
  std::string why;
  {
    Fd b;
    why = check_base(base, ram, b);
    std::vector<uint64_t> map;
    if (why.empty()) {
      map = read_pagemap(ram);
      if (map.empty()) why = "cannot read /proc/self/pagemap";
    }
    if (why.empty()) {
      TempFile tmp(temp_name(path));
      if (::ioctl(tmp.fd(), FICLONE, b.get()) != 0) {
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
            pwrite_all(tmp.fd(), ram.data() + off, len, off, tmp.path());
            st.data_bytes += len;
          }
          i = j;
        }
        commit(tmp, path, ram.size());
        if (diff) *diff = true;
        return st;
      }
    }
  }
  log::info("memory written in full, not as a diff: " + why);
  return write_memory_file(path, ram);
}

bool page_is_zero(const uint8_t* p) {
  uint64_t head;
  std::memcpy(&head, p, 8);
  return head == 0 && std::memcmp(p, p + 8, kPage - 8) == 0;
}

MemoryFileStats write_memory_file(const std::string& path, std::span<const uint8_t> ram) {
  if (ram.size() % kPage != 0) fail("write " + path + ": memory size is not a multiple of 4 KiB");
  TempFile tmp(temp_name(path));
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
    pwrite_all(tmp.fd(), ram.data() + pos, end - pos, pos, tmp.path());
    st.data_bytes += end - pos;
    pos = end;
  }
  commit(tmp, path, ram.size());
  return st;
}

Fd open_memory_file(const std::string& path, uint64_t expected_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    int e = errno;
    throw Error("snapshot " + path + ": " + std::strerror(e), e, rebuild_hint());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("snapshot " + path + ": stat");
  if (!S_ISREG(st.st_mode))
    throw Error("snapshot " + path + ": not a regular file", 0, rebuild_hint());
  if (static_cast<uint64_t>(st.st_size) != expected_bytes)
    throw Error("snapshot " + path + ": memory file is " + std::to_string(st.st_size) +
                    " bytes, the saved guest has " + std::to_string(expected_bytes),
                0, rebuild_hint());
  return fd;
}

}  // namespace space::vmm::snapshot

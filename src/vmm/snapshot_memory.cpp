// Sparse memory file writer and checked opener; see snapshot_memory.h.
#include "vmm/snapshot_memory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "vmm/snapshot.h"

namespace space::snapshot {
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

}  // namespace

bool page_is_zero(const uint8_t* p) {
  uint64_t head;
  std::memcpy(&head, p, 8);
  return head == 0 && std::memcmp(p, p + 8, kPage - 8) == 0;
}

MemoryFileStats write_memory_file(const std::string& path, std::span<const uint8_t> ram) {
  if (ram.size() % kPage != 0) fail("write " + path + ": memory size is not a multiple of 4 KiB");
  std::string dir = dir_of(path);
  std::string base = path.substr(path.rfind('/') + 1);
  TempFile tmp(dir + "/." + base + ".tmp-" + std::to_string(::getpid()));
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
  if (::ftruncate(tmp.fd(), static_cast<off_t>(ram.size())) != 0)
    throw_errno("truncate " + tmp.path());
  if (::fsync(tmp.fd()) != 0) throw_errno("fsync " + tmp.path());
  if (::rename(tmp.path().c_str(), path.c_str()) != 0)
    throw_errno("rename " + tmp.path() + " to " + path);
  tmp.commit();
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d || ::fsync(d.get()) != 0) throw_errno("fsync " + dir);
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

}  // namespace space::snapshot

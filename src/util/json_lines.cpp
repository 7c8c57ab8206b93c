// JSON-lines logs; see json_lines.h.
#include "util/json_lines.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/utc.h"

namespace space::jsonl {

namespace {

Fd open_log(const std::string& path) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) throw_errno("open " + path);
  return fd;
}

// The number of lines in `path` (0 when it does not exist).
uint64_t count_lines(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return 0;
    throw_errno("open " + path);
  }
  uint64_t n = 0;
  char buf[65536];
  for (;;) {
    ssize_t got = ::read(fd.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_errno("read " + path);
    if (got == 0) return n;
    for (ssize_t i = 0; i < got; i++) n += buf[i] == '\n';
  }
}

}  // namespace

std::string rfc3339_ms(uint64_t ms) {
  return utc::rfc3339_ms(ms);
}

void append(const std::string& path, const json::Value& v) {
  std::string line = json::serialize(v) + "\n";
  Fd fd = open_log(path);
  write_all(fd.get(), line.data(), line.size());
}

std::string previous(const std::string& path) {
  return path + ".1";
}

bool append(const std::string& path, const json::Value& v, const Bound& bound) {
  if (bound.max_bytes == 0) {
    append(path, v);
    return false;
  }
  std::string line = json::serialize(v) + "\n";
  Fd fd = open_log(path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + path);
  if (uint64_t(st.st_size) + line.size() <= bound.max_bytes) {
    write_all(fd.get(), line.data(), line.size());
    return false;
  }
  // Full: this generation becomes the previous one, and the one there before is dropped.
  const std::string prev = previous(path);
  uint64_t dropped = count_lines(prev);
  std::string first = json::serialize(bound.marker(dropped)) + "\n";
  if (first.size() + line.size() > bound.max_bytes)
    throw Error("a line of " + std::to_string(line.size()) + " bytes does not fit " + path +
                    ", bounded to " + std::to_string(bound.max_bytes) + " bytes",
                EFBIG, "raise the log's bound");
  fd.reset();
  if (::rename(path.c_str(), prev.c_str()) != 0) throw_errno("rename " + path + " to " + prev);
  fd = open_log(path);
  first += line;
  write_all(fd.get(), first.data(), first.size());
  return true;
}

std::vector<json::Value> read(const std::string& path) {
  std::vector<json::Value> out;
  if (!fs::exists(path)) return out;
  std::string text = fs::read_file(path, 256u << 20);
  size_t pos = 0, lineno = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lineno++;
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    try {
      out.push_back(json::parse(line));
    } catch (Error& e) {
      e.add_context(path + " line " + std::to_string(lineno));
      throw;
    }
  }
  return out;
}

std::vector<json::Value> read_generations(const std::string& path) {
  std::vector<json::Value> out = read(previous(path));
  for (auto& v : read(path)) out.push_back(std::move(v));
  return out;
}

}  // namespace space::jsonl

// JSON-lines logs; see json_lines.h.
#include "util/json_lines.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/utc.h"

namespace space::jsonl {

std::string rfc3339_ms(uint64_t ms) {
  return utc::rfc3339_ms(ms);
}

void append(const std::string& path, const json::Value& v) {
  std::string line = json::serialize(v) + "\n";
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) throw_errno("open " + path);
  write_all(fd.get(), line.data(), line.size());
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

}  // namespace space::jsonl

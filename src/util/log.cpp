// Log sink: formats a line as text ("2026-11-29T17:00:00.123Z warn msg") or JSON and writes it
// with a single write() so lines from different threads never interleave.
#include "util/log.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "util/capped_writer.h"
#include "util/error.h"
#include "util/timing.h"
#include "util/utc.h"

namespace space::log {
namespace {
struct Sink {
  Level level = Level::Warn;
  Format format = Format::Text;
  int fd = 2;
  std::unique_ptr<CappedWriter> capped;  // set by limit_size
};
Sink& sink() {
  static Sink s;
  return s;
}
const char* name(Level l) {
  return level_names().at(static_cast<size_t>(l)).c_str();
}
std::string json_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o;
}
}  // namespace

void configure(Level level, Format format, int fd) {
  sink() = Sink{level, format, fd, nullptr};
}

void limit_size(uint64_t max_bytes) {
  sink().capped = std::make_unique<CappedWriter>(sink().fd, max_bytes);
}

const std::vector<std::string>& level_names() {
  static const std::vector<std::string> names = {"debug", "info", "warn", "error"};
  return names;
}

Level parse_level(std::string_view s) {
  const auto& names = level_names();
  for (size_t i = 0; i < names.size(); i++)
    if (s == names[i]) return static_cast<Level>(i);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  fail("invalid log level '" + std::string(s) + "'", "use one of " + all);
}

Format parse_format(std::string_view s) {
  if (s == "text") return Format::Text;
  if (s == "json") return Format::Json;
  fail("invalid log format '" + std::string(s) + "'", "use text or json");
}

bool enabled(Level level) {
  return level >= sink().level;
}

void write(Level level, std::string_view msg) {
  if (!enabled(level)) return;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  // Not gmtime_r: its first call opens /etc/localtime, which kills a jailed VMM (util/utc.h).
  std::string stamp = utc::rfc3339_ms(static_cast<uint64_t>(ts.tv_sec) * 1000 +
                                      static_cast<uint64_t>(ts.tv_nsec / 1000000));
  std::string line;
  if (sink().format == Format::Json) {
    line = std::string("{\"time\":\"") + stamp + "\",\"level\":\"" + name(level) + "\",\"msg\":\"" +
           json_escape(msg) + "\"}\n";
  } else {
    line = stamp + " " + name(level) + " " + std::string(msg) + "\n";
  }
  if (sink().capped) {
    sink().capped->write(line);
    return;
  }
  ssize_t n = ::write(sink().fd, line.data(), line.size());
  (void)n;
}

bool Throttle::admit(uint64_t now_ms, uint64_t& suppressed_before) {
  std::lock_guard g(mu_);
  if (!bucket_.take(now_ms)) {
    suppressed_++;
    return false;
  }
  suppressed_before = suppressed_;
  suppressed_ = 0;
  return true;
}

void Throttle::warn(std::string_view msg) {
  if (!enabled(Level::Warn)) return;
  uint64_t left_out = 0;
  if (!admit(static_cast<uint64_t>(timing::mono_ms()), left_out)) return;
  if (left_out == 0) {
    write(Level::Warn, msg);
  } else {
    write(Level::Warn, std::string(msg) + " (" + std::to_string(left_out) +
                           " similar lines left out: rate limit)");
  }
}

}  // namespace space::log

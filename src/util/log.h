// Logging: one process-wide sink configured once in main (level, text or JSON lines, fd).
// Logging is the one sanctioned piece of process state: it is set before any thread starts.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "util/token_bucket.h"

namespace space::log {

enum class Level { Debug = 0, Info = 1, Warn = 2, Error = 3 };
enum class Format { Text, Json };

// Configures the sink; call once before threads start. `fd` defaults to stderr.
void configure(Level level, Format format, int fd = 2);
// The levels' names, in Level's order: "debug", "info", "warn", "error".
const std::vector<std::string>& level_names();
// Parses one of level_names(); throws space::Error, listing them, on anything else.
Level parse_level(std::string_view s);
// Parses "text|json"; throws space::Error on anything else.
Format parse_format(std::string_view s);
// Keeps the sink's file at most `max_bytes` (util/capped_writer.h): for long-lived processes
// whose warnings a guest can provoke (the VMM). Call after configure, before threads start.
void limit_size(uint64_t max_bytes);
bool enabled(Level level);
// Writes one line (timestamped) if `level` is enabled. Thread-safe (one write() per line).
void write(Level level, std::string_view msg);

inline void debug(std::string_view m) {
  write(Level::Debug, m);
}
inline void info(std::string_view m) {
  write(Level::Info, m);
}
inline void warn(std::string_view m) {
  write(Level::Warn, m);
}
inline void error(std::string_view m) {
  write(Level::Error, m);
}

// A rate limit for lines that someone else can provoke (a guest, a client): `burst` lines at
// once, then one per `period_ms`; the next line let through says how many were left out.
// Thread-safe; a device keeps one as a member.
class Throttle {
 public:
  explicit Throttle(unsigned burst = 10, uint64_t period_ms = 1000) : bucket_(burst, period_ms) {}
  void warn(std::string_view msg);
  // Whether a line may be written now (counts it as suppressed if not). `now_ms` is monotonic.
  bool admit(uint64_t now_ms, uint64_t& suppressed_before);

 private:
  std::mutex mu_;
  TokenBucket bucket_;
  uint64_t suppressed_ = 0;
};

}  // namespace space::log

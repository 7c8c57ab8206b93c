// Logging: one process-wide sink configured once in main (level, text or JSON lines, fd).
// Logging is the one sanctioned piece of process state: it is set before any thread starts.
#pragma once
#include <string>
#include <string_view>

namespace space::log {

enum class Level { Debug = 0, Info = 1, Warn = 2, Error = 3 };
enum class Format { Text, Json };

// Configures the sink; call once before threads start. `fd` defaults to stderr.
void configure(Level level, Format format, int fd = 2);
// Parses "debug|info|warn|error"; throws space::Error on anything else.
Level parse_level(std::string_view s);
// Parses "text|json"; throws space::Error on anything else.
Format parse_format(std::string_view s);
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

}  // namespace space::log

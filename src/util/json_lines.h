// JSON-lines logs (the credential and network audit logs): one JSON object per line, appended
// with O_APPEND in a single write per line, mode 0600, so that concurrent writers never
// interleave within a line; and the times in them, RFC 3339 UTC with milliseconds. A log a guest
// can make us write has a hard bound (Bound): it is rotated to one older generation, <path>.1,
// whose lines are dropped at the next rotation, and the new file's first line (the caller's
// marker) says how many were. Rotation assumes one writer per file (the daemon holding its lock).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/json.h"

namespace space::jsonl {

// "2026-11-29T20:00:00.123Z" for `ms` since the epoch.
std::string rfc3339_ms(uint64_t ms);
// Appends `v`, serialised compactly, and a newline to `path` (created 0600). Throws on failure.
void append(const std::string& path, const json::Value& v);

// A hard bound on the size of one file of a log.
struct Bound {
  uint64_t max_bytes = 0;  // 0: none
  // The first line of a new generation, given the number of lines dropped to make room.
  std::function<json::Value(uint64_t dropped_lines)> marker;
};
// Appends like append(), keeping `path` within bound.max_bytes: when the line would pass it,
// `path` is renamed to previous(path) (replacing, and so dropping, the generation there) and a
// new `path` starts with bound.marker(lines dropped), then the line. Throws on failure, and for
// a line that would not fit even a new generation. Returns whether it rotated.
bool append(const std::string& path, const json::Value& v, const Bound& bound);
// `path` + ".1": the generation before the current one.
std::string previous(const std::string& path);

// Every line of `path` parsed (a missing file has none; empty lines are skipped). Throws naming
// the file and line on bad content.
std::vector<json::Value> read(const std::string& path);
// The lines of previous(path), then those of `path`: a bounded log, oldest first.
std::vector<json::Value> read_generations(const std::string& path);

}  // namespace space::jsonl

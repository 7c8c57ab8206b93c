// JSON-lines logs (the credential and network audit logs): one JSON object per line, appended
// with O_APPEND in a single write per line, mode 0600, so that concurrent writers never
// interleave within a line; and the times in them, RFC 3339 UTC with milliseconds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/json.h"

namespace space::jsonl {

// "2026-11-29T20:00:00.123Z" for `ms` since the epoch.
std::string rfc3339_ms(uint64_t ms);
// Appends `v`, serialised compactly, and a newline to `path` (created 0600). Throws on failure.
void append(const std::string& path, const json::Value& v);
// Every line of `path` parsed (a missing file has none; empty lines are skipped). Throws naming
// the file and line on bad content.
std::vector<json::Value> read(const std::string& path);

}  // namespace space::jsonl

// Audit records a sandbox provokes, bounded; see audit_throttle.h.
#include "util/audit_throttle.h"

#include <algorithm>

namespace space {

bool AuditThrottle::admit(const std::string& sandbox, const std::string& kind, uint64_t now_ms) {
  Sandbox& s = sandboxes_.try_emplace(sandbox, limits_).first->second;
  s.last_ms = std::max(s.last_ms, now_ms);
  std::string k = kind;
  if (!s.seen.count(k) && !s.counted.count(k)) {
    size_t kinds = s.seen.size();
    for (const auto& [name, c] : s.counted) kinds += !s.seen.count(name);
    if (kinds >= kMaxKinds) k = "other";
  }
  const bool first = s.seen.insert(k).second;
  if (s.bucket.take(now_ms) || first) return true;
  auto [it, fresh] = s.counted.try_emplace(k);
  if (fresh) it->second = Count{sandbox, k, 0, now_ms};
  it->second.count++;
  return false;
}

std::vector<AuditThrottle::Count> AuditThrottle::due(uint64_t now_ms, bool all) {
  std::vector<Count> out;
  for (auto s = sandboxes_.begin(); s != sandboxes_.end();) {
    auto& counted = s->second.counted;
    for (auto c = counted.begin(); c != counted.end();) {
      if (all || now_ms >= c->second.first_ms + limits_.window_ms) {
        out.push_back(std::move(c->second));
        c = counted.erase(c);
      } else {
        ++c;
      }
    }
    // Quiet for a window: its bucket would be full again; its kinds are new again.
    if (counted.empty() && now_ms >= s->second.last_ms + limits_.window_ms)
      s = sandboxes_.erase(s);
    else
      ++s;
  }
  return out;
}

uint64_t AuditThrottle::pending() const {
  uint64_t n = 0;
  for (const auto& [id, s] : sandboxes_)
    for (const auto& [kind, c] : s.counted) n += c.count;
  return n;
}

std::string AuditThrottle::describe(const Count& c, std::string_view verb, uint64_t now_ms) {
  const uint64_t span = now_ms > c.first_ms ? now_ms - c.first_ms : 0;
  const uint64_t secs = std::max<uint64_t>(1, (span + 999) / 1000);
  return std::string(verb) + " " + std::to_string(c.count) +
         (c.count == 1 ? " request" : " requests") + " of kind '" + c.kind + "' from sandbox " +
         c.sandbox + " in the last " + std::to_string(secs) + " s (not audited one by one)";
}

}  // namespace space

// The ready line; see ready.h.
#include "util/ready.h"

#include <unistd.h>

#include "util/error.h"
#include "util/log.h"

namespace space::ready {

void report_line(const Fd& ready, const std::string& line) {
  if (!ready) return;
  std::string l = line + "\n";
  ssize_t n = ::write(ready.get(), l.data(), l.size());
  (void)n;
}

int report_failure(const Fd& ready, const std::exception& e) {
  std::string msg = e.what();
  if (auto* se = dynamic_cast<const Error*>(&e); se && !se->hint().empty())
    msg += " (" + se->hint() + ")";
  log::error(msg);
  report_line(ready, "error: " + msg);
  return 1;
}

}  // namespace space::ready

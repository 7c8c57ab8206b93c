// The ready pipe of a daemon (the VMM, the credential helper) started by spawn_detached
// (process.h): it writes one line, "ok" once it serves, or "error: <message>" when it cannot
// start, with the error's hint in parentheses, since the line is all its starter sees.
#pragma once
#include <exception>
#include <string>

#include "util/fd.h"

namespace space::ready {

// Writes `line` and a newline to `ready`; nothing if it is not open. Write errors are ignored:
// the starter may have given up and gone.
void report_line(const Fd& ready, const std::string& line);
// Logs `e` (with its hint, if it is a space::Error) and reports it as "error: ..."; returns 1,
// the daemon's exit code.
int report_failure(const Fd& ready, const std::exception& e);

}  // namespace space::ready

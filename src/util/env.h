// Settings read from the environment: one parser for the SPACE_* variables that hold a number of
// seconds (SPACE_BOOT_TIMEOUT, SPACE_CREDD_IDLE_SECONDS), so they accept and reject the same
// things and name the fix the same way. Also the fixed environment of the daemons.
#pragma once
#include <string>
#include <vector>

namespace space::env {

// The whole number of seconds in $`name`, 1..86400; `fallback` when it is unset or empty.
// Throws space::Error naming the variable and the fix for anything else ("5s", "0", "-1").
int seconds(const char* name, int fallback);

// The environment of the daemons space starts (VMMs, the credential helper, the network broker):
// a fixed PATH and the SPACE_* settings they read, if set; nothing else of the caller's (no CI
// tokens, no LD_PRELOAD).
std::vector<std::string> daemon_environment();

}  // namespace space::env

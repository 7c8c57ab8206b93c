// Settings read from the environment: one parser for the SPACE_* variables that hold a number of
// seconds (SPACE_BOOT_TIMEOUT, SPACE_CREDD_IDLE_SECONDS), so they accept and reject the same
// things and name the fix the same way.
#pragma once

namespace space::env {

// The whole number of seconds in $`name`, 1..86400; `fallback` when it is unset or empty.
// Throws space::Error naming the variable and the fix for anything else ("5s", "0", "-1").
int seconds(const char* name, int fallback);

}  // namespace space::env

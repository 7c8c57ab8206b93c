// The seccomp programs a jailed VMM loads, compiled when space was built. compile()
// (jail/seccomp.h) turns each role's lists into BPF through libseccomp, which takes about a
// millisecond for the three roles: too much to pay on every create. So the build runs
// seccomp-gen (jail/seccomp_gen.cpp), which calls that same compile() for every role and writes
// the programs out as C arrays; they are linked in here. A unit test checks that they equal what
// compile() gives now, so the two can never differ unnoticed. Unlisted::Log (SPACE_SECCOMP=log, a
// debugging aid) still compiles at run time.
#pragma once
#include "jail/seccomp.h"

namespace space::jail {

// The filter for `role`: the program built in for Unlisted::Kill, compile(role, Log) for Log.
Program program(Role role, Unlisted unlisted = Unlisted::Kill);
// The program built in for `role` (always Unlisted::Kill).
Program prebuilt(Role role);
// program() then load(); throws with the errno on failure.
void install(Role role, Unlisted unlisted = Unlisted::Kill);

}  // namespace space::jail

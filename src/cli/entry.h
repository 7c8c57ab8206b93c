// The program's entry: see entry.cpp.
#pragma once

namespace space::cli {

// Runs the command `argv` names and returns the process's exit code; never throws.
int main_entry(int argc, char** argv);

}  // namespace space::cli

// Context: what every core operation needs from the command line, passed explicitly (no globals).
#pragma once
#include <string>

namespace space::store {

struct Context {
  std::string root;                 // --root: the run directory (may be relative)
  std::string log_level = "warn";   // --log-level, handed on to the processes we start
  std::string log_format = "text";  // --log-format, likewise
};

}  // namespace space::store

// BootFlags: the flags that shape a cold boot, shared by `create`, `run` and `template build`:
// --cpus and --memory (range-checked here, applied only when given, so that config.toml fills
// the rest) and --kernel and --rootfs, with one help text each.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

namespace space::cli {

class BootFlags {
 public:
  // Declares the four flags on `cmd`; --kernel and --rootfs are stored straight into `kernel` and
  // `rootfs`. `when` ends the help of each, e.g. ", for a cold boot" ("" for a template build).
  // The BootFlags must outlive the parse (the commands keep theirs for the process's life).
  void add(CLI::App* cmd, std::string& kernel, std::string& rootfs, const std::string& when);
  // Copies --cpus and --memory, if given, into `vcpus` and `memory_mib`.
  void apply(std::optional<uint32_t>& vcpus, std::optional<uint32_t>& memory_mib) const;

 private:
  uint32_t cpus_ = 0, memory_ = 0;
  CLI::Option* cpus_opt_ = nullptr;
  CLI::Option* memory_opt_ = nullptr;
};

// Declares --engine (vm or gvisor) on `cmd`, stored into `engine`; without it launch/engine.h
// chooses (SPACE_ENGINE, config.toml, vm) and fails closed where the choice cannot run.
void add_engine_option(CLI::App* cmd, std::string& engine);

}  // namespace space::cli

// PhaseLog: named timestamps for one multi-step operation (a restore, a snapshot), printed as a
// single log line ("config 0.08 ms, vm 0.41 ms, ..., total 1.20 ms") so slow phases stand out.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace space {

class PhaseLog {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts timing at `start` (default: now).
  explicit PhaseLog(Clock::time_point start = Clock::now()) : start_(start), last_(start) {}
  // Ends the current phase, naming it.
  void mark(std::string name) {
    auto now = Clock::now();
    phases_.emplace_back(std::move(name), ms(last_, now));
    last_ = now;
  }
  // The phases so far: (name, milliseconds).
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }
  // Milliseconds since the start.
  double total_ms() const { return ms(start_, last_); }
  // "name 0.12 ms, ..., total X ms".
  std::string summary() const {
    std::string s;
    char b[64];
    for (const auto& [name, v] : phases_) {
      std::snprintf(b, sizeof b, " %.3f ms, ", v);
      s += name + b;
    }
    std::snprintf(b, sizeof b, "total %.3f ms", total_ms());
    return s + b;
  }

 private:
  static double ms(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  }
  Clock::time_point start_, last_;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace space

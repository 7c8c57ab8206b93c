// Errors as exceptions. An Error carries a message of the form "<what>: <why>", the errno that
// caused it (0 when none), and an optional hint naming the fix. Context is prepended as it unwinds
// (`e.add_context("create foo")`). main() catches once, prints `space: error: ...` and exits 125.
#pragma once
#include <stdexcept>
#include <string>

namespace space {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string msg, int err = 0, std::string hint = {})
      : std::runtime_error(msg), msg_(std::move(msg)), errno_(err), hint_(std::move(hint)) {}
  const char* what() const noexcept override { return msg_.c_str(); }
  int err() const { return errno_; }
  const std::string& hint() const { return hint_; }
  // Prefix the message with what the caller was doing.
  Error& add_context(const std::string& ctx) {
    msg_ = ctx + ": " + msg_;
    return *this;
  }
  Error& set_hint(std::string hint) {
    hint_ = std::move(hint);
    return *this;
  }

 private:
  std::string msg_;
  int errno_;
  std::string hint_;
};

// Throws Error("<what>: strerror(errno)") with the current errno.
[[noreturn]] void throw_errno(const std::string& what);
// Throws Error("<what>: strerror(err)") with the given errno value.
[[noreturn]] void throw_errno(const std::string& what, int err);
// Throws Error(what) with an optional hint.
[[noreturn]] void fail(const std::string& what, const std::string& hint = {});

}  // namespace space

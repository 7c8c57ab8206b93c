// ExecBridge: one poll() loop and its buffers; see exec_bridge.h for the flow-control rules.
#include "agent/exec_bridge.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "agent/client.h"
#include "proto/frame_queue.h"
#include "util/error.h"
#include "util/nonblocking.h"
#include "util/terminal.h"

namespace space::agent {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kSockRead = 256 * 1024;
constexpr size_t kQueueLimit = 256 * 1024;  // frames waiting for the socket before stdin pauses
constexpr int kTimeoutGraceMs = 30'000;     // after --timeout: how long the guest may take

// Output waiting for the caller's stdout or stderr.
class OutBuf {
 public:
  void append(const std::vector<uint8_t>& d) {
    if (off_ == data_.size()) {
      data_.clear();
      off_ = 0;
    }
    data_.insert(data_.end(), d.begin(), d.end());
  }
  const uint8_t* data() const { return data_.data() + off_; }
  size_t size() const { return data_.size() - off_; }
  void consume(size_t n) { off_ += n; }
  void clear() { off_ = data_.size(); }

 private:
  std::vector<uint8_t> data_;
  size_t off_ = 0;
};

// SIGPIPE ignored while bridging: a closed stdout is an EPIPE we handle, not our death.
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ign, &old_);
  }
  ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

int ms_until(Clock::time_point t) {
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count();
  return ms < 0 ? 0 : ms > 86'400'000 ? 86'400'000 : static_cast<int>(ms);
}

class Bridge {
 public:
  Bridge(int sock, const ExecOptions& opts, const StdioFds& io, proc::SignalGuard& sig)
      : sock_(sock), opts_(opts), io_(io), sig_(sig), in_done_(!opts.interactive) {
    if (opts.interactive) in_ = io::NonBlockingEnd::open(io.in, false);
    out_[0] = io::NonBlockingEnd::open(io.out, true);
    out_[1] = io::NonBlockingEnd::open(io.err, true);
    if (opts.timeout_ms)
      backstop_ =
          Clock::now() + std::chrono::milliseconds(int64_t{opts.timeout_ms} + kTimeoutGraceMs);
    buf_ = std::make_unique_for_overwrite<uint8_t[]>(kSockRead);
  }

  proto::ExitStatus run() {
    IgnoreSigpipe ignore_sigpipe;
    for (;;) {
      if (exit_ && out_buf_[0].size() == 0 && out_buf_[1].size() == 0) return *exit_;
      const bool room = out_buf_[0].size() + out_buf_[1].size() < kHostOutLimit;
      const bool read_stdin = !in_done_ && !exit_ && credit_ > 0 && q_.bytes() < kQueueLimit;
      pollfd p[5] = {
          {sock_,
           static_cast<short>((!exit_ && room ? POLLIN : 0) |
                              (q_.empty() || send_failed_ ? 0 : POLLOUT)),
           0},
          {read_stdin ? in_.fd() : -1, POLLIN, 0},
          {out_buf_[0].size() ? out_[0].fd() : -1, POLLOUT, 0},
          {out_buf_[1].size() ? out_[1].fd() : -1, POLLOUT, 0},
          {sig_.fd(), POLLIN, 0},
      };
      if (exit_ || (p[0].events == 0)) p[0].fd = -1;
      int n = ::poll(p, 5, next_timeout());
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_errno("poll");
      }
      if (auto st = check_deadlines()) return *st;
      if (p[4].revents && on_signals()) return *exit_;
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) read_socket();
      if (p[1].revents) read_stdin_chunk();
      for (int i = 0; i < 2; i++)
        if (p[2 + i].revents) write_output(i);
      if (!q_.empty() && !send_failed_ && !q_.flush(sock_)) {
        // The guest may have closed after a quick Exit that is still unread: stop sending
        // (stdin is moot now) and let the reads tell whether the command ended.
        send_failed_ = true;
        in_done_ = true;
        q_ = proto::FrameQueue();
      }
    }
  }

 private:
  int next_timeout() const {
    int t = -1;
    if (backstop_ && !exit_) t = ms_until(*backstop_);
    if (give_up_ && !exit_) {
      int g = ms_until(*give_up_);
      t = t < 0 || g < t ? g : t;
    }
    return t;
  }

  std::optional<proto::ExitStatus> check_deadlines() {
    if (exit_) return std::nullopt;
    if (give_up_ && Clock::now() >= *give_up_) {
      proto::ExitStatus st{
          .kind = proto::ExitKind::Signaled,
          .value = forwarded_,
          .message = "the command did not end after " + proc::signal_name(forwarded_)};
      return st;
    }
    if (backstop_ && Clock::now() >= *backstop_)
      return proto::ExitStatus{
          .kind = proto::ExitKind::TimedOut,
          .value = SIGKILL,
          .message = "the guest did not confirm the end of the timed-out command"};
    return std::nullopt;
  }

  // Handles pending signals; true if bridging should stop now (the exit is known, and the
  // caller asked to stop waiting for the output to drain).
  bool on_signals() {
    bool stop = false;
    while (int s = sig_.take()) {
      if (s == SIGWINCH) {
        if (!opts_.tty || exit_) continue;
        auto size = term::window_size(io_.in);
        if (!size) size = term::window_size(io_.out);
        if (size)
          q_.push(proto::Type::Resize,
                  proto::WindowSize{.rows = size->rows, .cols = size->cols}.encode());
        continue;
      }
      if (exit_) {
        stop = true;
        continue;
      }
      q_.push(proto::Type::Signal, proto::SignalMsg{.signo = static_cast<uint32_t>(s)}.encode());
      if (!forwarded_ && opts_.give_up_after_signal_ms > 0)
        give_up_ = Clock::now() + std::chrono::milliseconds(opts_.give_up_after_signal_ms);
      if (!forwarded_) forwarded_ = s;
    }
    return stop;
  }

  void read_socket() {
    ssize_t n = ::recv(sock_, buf_.get(), kSockRead, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      throw_errno("read from the guest");
    }
    if (n == 0) throw Error("the guest closed the connection before the command ended", ECONNRESET);
    try {
      dec_.feed({buf_.get(), static_cast<size_t>(n)});
      while (!exit_) {
        auto f = dec_.next();
        if (!f) break;
        on_frame(*f);
      }
    } catch (proto::ProtoError& e) {
      e.add_context("malformed frame from the guest");
      throw;
    }
  }

  void on_frame(const proto::Frame& f) {
    switch (f.type) {
      case proto::Type::Stdout:
      case proto::Type::Stderr: {
        int i = f.type == proto::Type::Stdout ? 0 : 1;
        if (!f.payload.empty() && !broken_[i]) out_buf_[i].append(f.payload);
        return;
      }
      case proto::Type::StdinAck: {
        auto a = proto::StdinAck::decode(f.payload);
        if (credit_ + a.bytes > proto::kStdinWindow)
          fail("the guest acknowledged stdin it was not sent");
        credit_ += a.bytes;
        return;
      }
      case proto::Type::Exit:
        exit_ = proto::ExitStatus::decode(f.payload);
        return;
      case proto::Type::Error:
        fail("guest-init: " + proto::ErrorMsg::decode(f.payload).message);
      default:
        fail("the guest sent frame type " + std::to_string(static_cast<int>(f.type)) +
             " during an exec");
    }
  }

  void read_stdin_chunk() {
    size_t want = std::min<size_t>(proto::kMaxStdinChunk, credit_);
    ssize_t n = in_.read(buf_.get(), want);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {  // EOF (or an error, which ends our input just the same)
      q_.push(proto::Type::Stdin);
      in_done_ = true;
      return;
    }
    q_.push(proto::Type::Stdin, {buf_.get(), static_cast<size_t>(n)});
    credit_ -= static_cast<uint32_t>(n);
  }

  void write_output(int i) {
    OutBuf& b = out_buf_[i];
    ssize_t n = out_[i].write(b.data(), b.size());
    if (n >= 0) return b.consume(static_cast<size_t>(n));
    if (errno == EAGAIN || errno == EINTR) return;
    broken_[i] = true;  // EPIPE: nobody reads it any more
    b.clear();
    if (!exit_ && !sent_sigpipe_) {
      q_.push(proto::Type::Signal, proto::SignalMsg{.signo = SIGPIPE}.encode());
      sent_sigpipe_ = true;
    }
  }

  int sock_;
  const ExecOptions& opts_;
  const StdioFds& io_;
  proc::SignalGuard& sig_;
  io::NonBlockingEnd in_, out_[2];
  OutBuf out_buf_[2];
  bool broken_[2] = {false, false};
  bool in_done_, sent_sigpipe_ = false, send_failed_ = false;
  uint32_t credit_ = proto::kStdinWindow;
  int forwarded_ = 0;
  std::optional<Clock::time_point> give_up_, backstop_;
  std::optional<proto::ExitStatus> exit_;
  proto::FrameQueue q_;
  proto::FrameDecoder dec_;
  std::unique_ptr<uint8_t[]> buf_;
};

}  // namespace

proto::ExitStatus bridge_exec(int sock, const ExecOptions& opts, const StdioFds& io,
                              proc::SignalGuard& sig) {
  return Bridge(sock, opts, io, sig).run();
}

namespace {

constexpr int kConnectTimeoutMs = 30'000;  // for guest-init's HelloReply

int64_t us_since(std::chrono::steady_clock::time_point t0) {
  auto d = std::chrono::steady_clock::now() - t0;
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

proto::ExecRequest make_exec_request(const ExecOptions& opts, const StdioFds& io) {
  proto::ExecRequest req;
  req.argv = opts.argv;
  req.env = opts.env;
  req.cwd = opts.cwd;
  req.uid = opts.uid;
  req.gid = opts.gid;
  req.user = opts.user;
  req.tty = opts.tty;
  req.with_stdin = opts.interactive;
  req.timeout_ms = opts.timeout_ms;
  req.secret_env = opts.secret_env;
  req.groups = opts.groups;
  req.umask = opts.umask;
  req.rlimits = opts.rlimits;
  if (opts.tty) {
    auto size = term::window_size(io.in);
    if (!size) size = term::window_size(io.out);
    req.rows = size ? size->rows : 24;
    req.cols = size ? size->cols : 80;
    bool has_term = false;
    for (const auto& e : req.env) has_term |= e.rfind("TERM=", 0) == 0;
    const char* term = std::getenv("TERM");
    if (!has_term) req.env.push_back(std::string("TERM=") + (term && *term ? term : "xterm"));
  }
  return req;
}

ExecResult exec_on_connection(int sock, const ExecOptions& opts, const StdioFds& io,
                              proc::SignalGuard& sig) {
  const auto t0 = std::chrono::steady_clock::now();
  ExecResult r;
  auto dl = net::Deadline::after_ms(kConnectTimeoutMs);
  dl.cancel_on(sig.fd());
  try {
    // Hello and Exec leave in one write: no round trip between them.
    auto bytes = proto::encode_frame(
        proto::Type::Hello,
        make_hello(opts.sandbox, (opts.image ? proto::Hello::kImage : 0) | opts.hello_flags)
            .encode());
    auto exec = proto::encode_frame(proto::Type::Exec, make_exec_request(opts, io).encode());
    bytes.insert(bytes.end(), exec.begin(), exec.end());
    net::send_all(sock, {reinterpret_cast<const char*>(bytes.data()), bytes.size()}, dl);
    read_hello_reply(sock, dl);
  } catch (const net::Cancelled&) {
    fail("interrupted by " + proc::signal_name(sig.take()) + " before the command started");
  } catch (const proto::ProtoError& e) {
    fail(std::string("exec request: ") + e.what(), "the command line or environment is too long");
  } catch (const Error& e) {
    if (e.err() == ECONNRESET || e.err() == ETIMEDOUT || e.err() == EPIPE)
      throw Error(std::string("guest-init does not answer: ") + e.what(), e.err());
    throw;
  }
  r.stats.hello_us = us_since(t0);
  {
    std::optional<term::RawMode> raw;
    if (opts.tty && opts.interactive) raw.emplace(io.in);
    r.status = bridge_exec(sock, opts, io, sig);
  }
  r.stats.total_us = us_since(t0);
  r.stats.guest_us = r.status.duration_us;
  r.exit_code = proto::exit_code_of(r.status);
  return r;
}

}  // namespace space::agent

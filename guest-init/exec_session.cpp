// ExecRun: the per-exec poll loop described in exec_session.h. Syscalls are counted: the
// socket is used with MSG_DONTWAIT (no fcntl), pipes are only read after poll() said so (one
// read per wakeup, blocking fds are fine), and queued frames leave in one sendmsg.
#include "exec_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "exec_spawn.h"
#include "proto/frame_queue.h"

namespace space::guest {

int64_t monotonic_us() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

namespace {

constexpr size_t kSmallRead = 64 * 1024;
constexpr size_t kBigRead = proto::kMaxPayload;
constexpr size_t kSockRead = 64 * 1024;
constexpr int kStatusWaitMs = 10'000;

// Where the reaper (main thread) leaves the status for the exec thread.
struct ExitBox {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int status = 0;
};

class ExecRun {
 public:
  ExecRun(Context& ctx, int sock, proto::FrameDecoder& dec, const proto::ExecRequest& req,
          int64_t start_us, std::vector<std::string>* secret_env)
      : ctx_(ctx),
        sock_(sock),
        dec_(dec),
        req_(req),
        start_us_(start_us),
        secret_env_(secret_env) {}

  void run() {
    auto box = std::make_shared<ExitBox>();
    try {
      sp_ = spawn_exec(
          req_, ctx_.reaper,
          [box](pid_t, int status) {
            std::lock_guard lock(box->mu);
            box->status = status;
            box->done = true;
            box->cv.notify_all();
          },
          secret_env_, ctx_.image.root_fd());
    } catch (const SpawnFailed& f) {
      auto took = static_cast<uint64_t>(elapsed_us(monotonic_us()));
      proto::ExitStatus st{
          .kind = f.kind, .value = f.err, .duration_us = took, .message = f.message};
      q_.push(proto::Type::Exit, st.encode());
      finish_flush();
      return;
    }
    if (req_.tty) {
      out_[0] = {sp_.master.get(), proto::Type::Stdout, kSmallRead};
      stdin_fd_ = req_.with_stdin ? sp_.master.get() : -1;
    } else {
      out_[0] = {sp_.out.get(), proto::Type::Stdout, kSmallRead};
      out_[1] = {sp_.err.get(), proto::Type::Stderr, kSmallRead};
      stdin_fd_ = sp_.in.get();
    }
    if (req_.timeout_ms) deadline_us_ = start_us_ + int64_t{req_.timeout_ms} * 1000;
    try {
      sock_buf_ = std::make_unique_for_overwrite<uint8_t[]>(kSockRead);
      handle_frames();
      loop();
    } catch (...) {
      kill_group(SIGKILL);  // never leave a process running that nobody serves
      throw;
    }
    if (host_gone_) return;
    q_.push(proto::Type::Exit, exit_status(*box).encode());
    finish_flush();
  }

 private:
  struct Output {
    int fd = -1;
    proto::Type type = proto::Type::Stdout;
    size_t cap = kSmallRead;
  };

  int64_t elapsed_us(int64_t end) const { return end > start_us_ ? end - start_us_ : 0; }
  bool outputs_open() const { return out_[0].fd >= 0 || out_[1].fd >= 0; }
  bool stdin_pending() const { return stdin_fd_ >= 0 && in_off_ < in_buf_.size(); }

  void loop() {
    for (;;) {
      if (exited_ && !outputs_open()) return;  // run() sends what is queued, with Exit
      const bool room = q_.bytes() < kOutLimit;
      pollfd p[5] = {
          {host_gone_ ? -1 : sock_, static_cast<short>(POLLIN | (q_.empty() ? 0 : POLLOUT)), 0},
          {stdin_pending() ? stdin_fd_ : -1, POLLOUT, 0},
          {room ? out_[0].fd : -1, POLLIN, 0},
          {room ? out_[1].fd : -1, POLLIN, 0},
          {exited_ ? -1 : sp_.pidfd.get(), POLLIN, 0},
      };
      const bool draining = exited_ && room && outputs_open();
      int timeout = -1;
      if (draining) {
        timeout = 0;
      } else if (deadline_us_ && !timed_out_ && !exited_) {
        int64_t left = (deadline_us_ - monotonic_us() + 999) / 1000;
        timeout = left < 0 ? 0 : left > 86'400'000 ? 86'400'000 : static_cast<int>(left);
      }
      int n = ::poll(p, 5, timeout);
      if (n < 0) {
        if (errno == EINTR) continue;
        ctx_.console.log(std::string("exec: poll: ") + std::strerror(errno));
        abandon();
        ::poll(nullptr, 0, 10);
        continue;
      }
      if (n == 0) {
        if (draining) {
          for (int i = 0; i < 2; i++) close_output(i);
        } else if (deadline_us_ && monotonic_us() >= deadline_us_ && !exited_) {
          timed_out_ = true;
          kill_group(SIGKILL);
        }
        continue;
      }
      if (p[4].revents) {
        exited_ = true;
        end_us_ = monotonic_us();
      }
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) read_socket();
      if (p[1].revents && stdin_pending()) write_stdin();
      for (int i = 0; i < 2; i++)
        if (p[2 + i].revents && out_[i].fd >= 0) read_output(i);
      // Once the process is gone and its output read, the last frames wait for Exit, so that
      // EOFs and Exit leave in one sendmsg (one vsock packet less on the exec's critical path).
      const bool ending = exited_ && !outputs_open();
      if (!q_.empty() && !host_gone_ && !ending && !q_.flush(sock_)) abandon();
    }
  }

  void kill_group(int sig) {
    if (!exited_) ::kill(-sp_.pid, sig);
  }

  // The host is gone or broke the protocol: kill the process, drop its output, wait for it.
  void abandon() {
    if (host_gone_) return;
    host_gone_ = true;
    kill_group(SIGKILL);
    for (int i = 0; i < 2; i++) close_output(i);
    close_stdin();
    q_ = proto::FrameQueue();
  }

  void protocol_error(const std::string& why) {
    ctx_.console.log("exec: " + why + "; killing the process");
    q_.push(proto::Type::Error, proto::ErrorMsg{.message = why}.encode());
    q_.flush(sock_);
    abandon();
  }

  void read_socket() {
    ssize_t n = ::recv(sock_, sock_buf_.get(), kSockRead, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) return abandon();
    try {
      dec_.feed({sock_buf_.get(), static_cast<size_t>(n)});
    } catch (const proto::ProtoError& e) {
      return protocol_error(std::string("malformed frame: ") + e.what());
    }
    handle_frames();
  }

  // Handles the complete frames in the decoder (some may have come with the Exec frame).
  void handle_frames() {
    try {
      while (!host_gone_) {
        auto f = dec_.next();
        if (!f) break;
        on_frame(*f);
      }
    } catch (const proto::ProtoError& e) {
      protocol_error(std::string("malformed frame: ") + e.what());
    }
  }

  void on_frame(const proto::Frame& f) {
    switch (f.type) {
      case proto::Type::Stdin:
        return on_stdin(f.payload);
      case proto::Type::Signal:
        return kill_group(static_cast<int>(proto::SignalMsg::decode(f.payload).signo));
      case proto::Type::Resize: {
        auto ws = proto::WindowSize::decode(f.payload);
        winsize w{ws.rows, ws.cols, 0, 0};
        if (req_.tty && sp_.master) ::ioctl(sp_.master.get(), TIOCSWINSZ, &w);
        return;
      }
      case proto::Type::Error:
        return abandon();
      default:
        return protocol_error("unexpected frame type " + std::to_string(static_cast<int>(f.type)) +
                              " during an exec");
    }
  }

  void on_stdin(const std::vector<uint8_t>& data) {
    if (!req_.with_stdin || in_eof_) return protocol_error("stdin after EOF or without -i");
    if (data.empty()) {
      in_eof_ = true;
      if (!stdin_pending()) close_stdin();
      return;
    }
    if (stdin_fd_ < 0) {  // the process closed its stdin: discard, but return the credit
      unacked_ += data.size();
      return ack();
    }
    if (in_off_ == in_buf_.size()) {
      in_buf_.clear();
      in_off_ = 0;
    }
    if (in_buf_.size() - in_off_ + data.size() > proto::kStdinWindow)
      return protocol_error("stdin beyond the flow-control window");
    in_buf_.insert(in_buf_.end(), data.begin(), data.end());
  }

  void write_stdin() {
    const size_t len = in_buf_.size() - in_off_;
    ssize_t n = ::write(stdin_fd_, in_buf_.data() + in_off_, len);
    if ((n < 0 && errno == EAGAIN) || (n >= 0 && static_cast<size_t>(n) < len)) grow_stdin_pipe();
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      unacked_ += in_buf_.size() - in_off_;  // EPIPE: the process closed its stdin
      in_off_ = in_buf_.size();
      close_stdin();
      return ack();
    }
    in_off_ += static_cast<size_t>(n);
    unacked_ += static_cast<size_t>(n);
    if (in_off_ == in_buf_.size() && in_eof_) close_stdin();
    if (unacked_ >= proto::kStdinWindow / 4 || in_off_ == in_buf_.size()) ack();
  }

  // The pipe filled up: make it bigger than the whole stdin window, so that it never fills
  // again and the process's reads stop waking us (a context switch is costly under PVM).
  void grow_stdin_pipe() {
    if (stdin_grown_ || req_.tty) return;
    stdin_grown_ = true;
    ::fcntl(stdin_fd_, F_SETPIPE_SZ, static_cast<int>(kBigRead));
  }

  void ack() {
    if (unacked_ == 0 || host_gone_) return;
    q_.push(proto::Type::StdinAck,
            proto::StdinAck{.bytes = static_cast<uint32_t>(unacked_)}.encode());
    unacked_ = 0;
  }

  void close_stdin() {
    if (stdin_fd_ < 0) return;
    if (req_.tty) {
      const char eof = 4;  // VEOF (^D): ends the line discipline's input
      ssize_t r = ::write(stdin_fd_, &eof, 1);
      (void)r;
    } else {
      sp_.in.reset();
    }
    stdin_fd_ = -1;
  }

  void read_output(int i) {
    Output& o = out_[i];
    uint8_t* p = q_.reserve(o.cap);
    ssize_t n = ::read(o.fd, p, o.cap);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) return close_output(i);  // EOF, or EIO: the pty's slave side is gone
    if (host_gone_) return;
    q_.commit(o.type, static_cast<size_t>(n));
    if (static_cast<size_t>(n) == o.cap && o.cap < kBigRead && !req_.tty &&
        ::fcntl(o.fd, F_SETPIPE_SZ, static_cast<int>(kBigRead)) >= 0)
      o.cap = kBigRead;
  }

  void close_output(int i) {
    Output& o = out_[i];
    if (o.fd < 0) return;
    if (!host_gone_) q_.push(o.type);  // EOF
    o.fd = -1;
    if (req_.tty) {
      stdin_fd_ = -1;
      sp_.master.reset();
    } else {
      (i == 0 ? sp_.out : sp_.err).reset();
    }
  }

  proto::ExitStatus exit_status(ExitBox& box) {
    proto::ExitStatus st;
    st.duration_us = static_cast<uint64_t>(elapsed_us(end_us_));
    int status = 0;
    {
      std::unique_lock lock(box.mu);
      auto done = [&] { return box.done; };
      if (!box.cv.wait_for(lock, std::chrono::milliseconds(kStatusWaitMs), done)) {
        ctx_.console.log("exec: no exit status for pid " + std::to_string(sp_.pid));
        ctx_.reaper.forget(sp_.pid);
        status = SIGKILL;  // as if killed: the status is lost
      } else {
        status = box.status;
      }
    }
    if (timed_out_) {
      st.kind = proto::ExitKind::TimedOut;
      st.value = SIGKILL;
    } else if (WIFEXITED(status)) {
      st.value = WEXITSTATUS(status);
    } else {
      st.kind = proto::ExitKind::Signaled;
      st.value = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    }
    return st;
  }

  // Sends what is queued (the last output, EOFs and Exit) however slowly the host reads (its
  // reader may be paused, e.g. a pager); a host that goes away ends it with an error.
  void finish_flush() {
    while (!q_.empty() && q_.flush(sock_) && !q_.empty()) {
      pollfd p{sock_, POLLOUT, 0};
      ::poll(&p, 1, -1);
    }
  }

  Context& ctx_;
  int sock_;
  proto::FrameDecoder& dec_;
  const proto::ExecRequest& req_;
  const int64_t start_us_;
  std::vector<std::string>* secret_env_;
  int64_t end_us_ = 0, deadline_us_ = 0;
  Spawned sp_;
  Output out_[2];
  int stdin_fd_ = -1;
  std::vector<uint8_t> in_buf_;
  size_t in_off_ = 0, unacked_ = 0;
  bool in_eof_ = false, exited_ = false, timed_out_ = false, host_gone_ = false;
  bool stdin_grown_ = false;
  proto::FrameQueue q_;
  std::unique_ptr<uint8_t[]> sock_buf_;
};

}  // namespace

void run_exec(Context& ctx, int sock, proto::FrameDecoder& dec, const proto::ExecRequest& req,
              int64_t start_us, std::vector<std::string>* secret_env) noexcept {
  try {
    ExecRun(ctx, sock, dec, req, start_us, secret_env).run();
  } catch (const std::exception& e) {
    ctx.console.log(std::string("exec failed: ") + e.what());
  }
}

}  // namespace space::guest

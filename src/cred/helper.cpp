// The credential helper's sockets and event loop; see helper.h. Decisions are CredService's.
#include "cred/helper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "cred/paths.h"
#include "cred/service.h"
#include "proto/agent.h"
#include "proto/cred.h"
#include "store/context.h"
#include "store/store.h"
#include "util/daemon.h"
#include "util/env.h"
#include "util/error.h"
#include "util/event_loop.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/ready.h"
#include "util/sandbox_sockets.h"
#include "util/secret_memory.h"
#include "util/socket.h"
#include "util/timing.h"
#include "util/wipe.h"

namespace space::cred {

namespace {

constexpr size_t kMaxConns = 256;
constexpr size_t kMaxConnsPerSandbox = 16;
constexpr size_t kMaxOperatorLine = 1u << 20;  // a 64 KiB secret in base64 fits easily
constexpr size_t kMaxQueued = 256 * 1024;      // replies waiting for a slow reader
constexpr int kLockWaitMs = 3000;

class Helper {
 public:
  Helper(const HelperOptions& o, CredPaths p)
      : root_(o.root),
        paths_(std::move(p)),
        svc_(o.root, paths_, wall_clock_ms),
        idle_(int64_t{idle_seconds()} * 1000) {}

  ~Helper() {
    for (auto& [fd, c] : conns_) loop_.remove(fd);
    if (op_listener_) {
      loop_.remove(op_listener_.get());
      ::unlink(paths_.sock.c_str());
    }
  }

  void start(Fd& ready, bool store_ok) {
    if (store_ok) svc_.drop_vanished();
    svc_.sweep_expired();
    op_listener_ = net::unix_listen(paths_.sock, 64);
    loop_.add(op_listener_.get(), EPOLLIN,
              [this](uint32_t) { sockets_.accept_pending(op_listener_.get(), ""); });
    sync_listeners();
    sigfd_ = daemon::stop_loop_on_signals(loop_);
    idle_.touch();
    daemon::report_ready(ready);
    log::info("credential helper serving " + paths_.dir + " (idle exit after " +
              std::to_string(idle_.idle_ms() / 1000) + " s)");
  }

  void run() {
    while (!loop_.stopping()) {
      auto next = svc_.sweep_expired();
      sync_listeners();  // a sandbox that got a run directory, or lost it, since
      // Idle only when no sandbox holds a grant: a jailed VMM cannot start a helper, so one
      // stays up while a running sandbox may ask it for a secret.
      int64_t wait = idle_.left(!conns_.empty() || !sockets_.empty(), 1000);
      if (wait <= 0) break;
      if (next) {
        int64_t until = int64_t(*next) - int64_t(wall_clock_ms());
        wait = std::min(wait, std::max<int64_t>(until, 0) + 1);
      }
      loop_.run_once(static_cast<int>(std::clamp<int64_t>(wait, 0, 60'000)));
    }
    svc_.flush_audit();  // the count of denials repeated since the last line
  }

 private:
  struct Conn {
    Fd fd;
    std::string sandbox;  // "" = operator
    std::string peer_problem;
    SecretString in;          // operator: partial line (a set request holds a secret)
    proto::FrameDecoder dec;  // guest: frames
    // Replies not yet taken by the socket, in secret memory (a value may wait there as long as
    // the peer does not read); wiped once sent.
    std::vector<uint8_t, SecretAllocator<uint8_t>> out;
    bool closing = false;     // close once `out` is empty
    uint32_t mask = EPOLLIN;  // the events watched
  };

  // Listens for every sandbox that should have a socket and runs (has a run directory), open to
  // the run directory's group, the jail's; stops listening for the others.
  void sync_listeners() {
    std::map<std::string, gid_t> want;
    for (const auto& id : svc_.socket_sandboxes())
      if (auto gid = directory_group(store::sandbox_run_dir(id))) want[id] = *gid;
    sockets_.sync(want);
  }

  // A connection to the operator socket (sandbox "") or to a sandbox's.
  void on_conn(Fd c, const std::string& sandbox, const ucred& cr) {
    idle_.touch();
    if (conns_.size() >= kMaxConns) {
      warn_.warn("too many connections; refusing one");
      return;
    }
    Conn conn;
    conn.sandbox = sandbox;
    if (sandbox.empty()) {
      if (cr.uid != 0 && cr.uid != ::getuid()) {
        log::warn("operator connection from uid " + std::to_string(cr.uid) + " refused");
        return;
      }
    } else {
      size_t n = 0;
      for (auto& [fd, x] : conns_) n += x.sandbox == sandbox;
      if (n >= kMaxConnsPerSandbox) {
        warn_.warn("sandbox " + sandbox + ": too many connections; refusing one");
        return;
      }
      conn.peer_problem = svc_.check_peer(sandbox, cr.pid);
    }
    int fd = c.get();
    conn.fd = std::move(c);
    conns_.emplace(fd, std::move(conn));
    loop_.add(fd, EPOLLIN, [this, fd](uint32_t ev) { on_event(fd, ev); });
  }

  void close_conn(int fd) {
    loop_.remove(fd);
    conns_.erase(fd);
    idle_.touch();
  }

  // One handler per connection. Replies wait in c.out (wiped as they leave); while any are
  // waiting the connection is not read and no further request is handled, so a peer that does
  // not read its replies holds at most kMaxQueued bytes here and never blocks the loop.
  void on_event(int fd, uint32_t events) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (events & EPOLLERR) return close_conn(fd);
    if (!flush(c)) return close_conn(fd);
    if (c.out.empty() && !c.closing && (events & (EPOLLIN | EPOLLHUP))) {
      uint8_t buf[16384];
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EINTR) return close_conn(fd);
      if (n == 0) c.closing = true;  // the peer sent all it will; answer what came, then close
      if (n > 0) {
        idle_.touch();
        if (c.sandbox.empty()) {
          append_wiped(c.in.bytes, {reinterpret_cast<const char*>(buf), size_t(n)});
        } else {
          try {
            c.dec.feed({buf, size_t(n)});
          } catch (const proto::ProtoError& e) {
            refuse_malformed(c, e.what());
          }
        }
        wipe(buf, sizeof buf);
      }
    }
    // Requests already received are answered even after the peer's EOF (space-secret --raw
    // shuts its write side down, then reads); each serve stops at kMaxQueued bytes of replies.
    Served r;
    for (;;) {
      r = c.sandbox.empty() ? serve_operator(c) : serve_guest(c);
      if (r == Served::Close) c.closing = true;
      if (!flush(c)) return close_conn(fd);
      if (r != Served::Full || !c.out.empty()) break;  // else the socket took it all: go on
    }
    if (c.closing && c.out.empty() && r != Served::Full) return close_conn(fd);
    uint32_t mask = c.out.empty() ? EPOLLIN : EPOLLOUT;
    if (mask != c.mask) {
      loop_.modify(fd, mask);
      c.mask = mask;
    }
  }

  // Sends what c.out holds, as far as the socket takes it; false if the peer is gone.
  static bool flush(Conn& c) {
    size_t sent = 0;
    while (sent < c.out.size()) {
      ssize_t n =
          ::send(c.fd.get(), c.out.data() + sent, c.out.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += size_t(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      wipe(c.out);
      return false;
    }
    if (sent == c.out.size()) {
      wipe(c.out);
    } else if (sent > 0) {
      std::memmove(c.out.data(), c.out.data() + sent, c.out.size() - sent);
      wipe(c.out.data() + c.out.size() - sent, sent);  // no copy left behind the live bytes
      c.out.resize(c.out.size() - sent);
    }
    return true;
  }

  static void queue(Conn& c, const std::vector<uint8_t>& bytes) {
    c.out.insert(c.out.end(), bytes.begin(), bytes.end());
  }

  enum class Served {
    Done,   // every complete request is answered
    Full,   // stopped at kMaxQueued bytes of replies; more requests wait
    Close,  // the peer broke the protocol: close once the replies are out
  };

  // Handles the complete request lines received.
  Served serve_operator(Conn& c) {
    size_t nl;
    while (c.out.size() < kMaxQueued && (nl = c.in.bytes.find('\n')) != std::string::npos) {
      SecretString out;
      {
        SecretString line(c.in.bytes.substr(0, nl));
        c.in.bytes.erase(0, nl + 1);  // the stale tail stays within capacity: wiped with c.in
        out = svc_.handle_line(line.bytes);
      }
      sync_listeners();
      c.out.insert(c.out.end(), out.bytes.begin(), out.bytes.end());
    }
    if (c.in.bytes.size() > kMaxOperatorLine) {
      log::warn("operator request too long; closing");
      wipe(c.in.bytes);
      return Served::Close;
    }
    return c.out.size() >= kMaxQueued && c.in.bytes.find('\n') != std::string::npos ? Served::Full
                                                                                    : Served::Done;
  }

  void deny(Conn& c, proto::DenyCode code, const std::string& msg) {
    queue(c, proto::encode_frame(proto::Type::CredDenied,
                                 proto::CredDenied{.code = code, .message = msg}.encode()));
  }

  void refuse_malformed(Conn& c, const std::string& why) {
    svc_.audit_bad_request(c.sandbox, why);
    deny(c, proto::DenyCode::BadRequest, "malformed request: " + why);
    c.closing = true;
    c.dec = proto::FrameDecoder();
  }

  // Handles the complete frames received.
  Served serve_guest(Conn& c) {
    try {
      for (;;) {
        if (c.out.size() >= kMaxQueued) return c.dec.buffered() ? Served::Full : Served::Done;
        auto f = c.dec.next();
        if (!f) break;
        if (f->type != proto::Type::CredGet) {
          std::string t = std::to_string(int(f->type));
          svc_.audit_bad_request(c.sandbox, "frame type " + t);
          deny(c, proto::DenyCode::BadRequest, "unexpected frame type " + t);
          c.dec = proto::FrameDecoder();
          return Served::Close;
        }
        auto get = proto::CredGet::decode(f->payload);
        auto r = svc_.fetch(c.sandbox, get.name, c.peer_problem);
        if (!r.ok) {
          deny(c, r.code, r.message);
          continue;
        }
        proto::CredValue v;
        v.value.assign(r.value.bytes.begin(), r.value.bytes.end());
        std::vector<uint8_t> payload = v.encode();
        wipe(v.value);
        std::vector<uint8_t> frame = proto::encode_frame(proto::Type::CredValue, payload);
        wipe(payload);
        queue(c, frame);
        wipe(frame);
      }
    } catch (const proto::ProtoError& e) {
      refuse_malformed(c, e.what());
      return Served::Close;
    }
    return Served::Done;
  }

  std::string root_;
  CredPaths paths_;
  CredService svc_;
  daemon::IdleExit idle_;
  EventLoop loop_;
  log::Throttle warn_;  // what sandboxes provoke is rate-limited
  Fd op_listener_, sigfd_;
  SandboxSockets sockets_{
      loop_, sandbox_socket, 16,
      [this](Fd c, const std::string& id, const ucred& cr) { on_conn(std::move(c), id, cr); }};
  std::map<int, Conn> conns_;
};

}  // namespace

bool helper_running(const CredPaths& p) {
  return daemon::running(p.lock);
}

int idle_seconds() {
  return env::seconds("SPACE_CREDD_IDLE_SECONDS", 60);
}

int credd_main(const HelperOptions& opts) {
  Fd ready = daemon::ready_pipe(opts.ready_fd);
  try {
    if (opts.protect_memory) protect_process_memory();  // before it holds any value
    CredPaths p =
        cred_paths_in(opts.cred_dir.empty() ? cred_dir_for_root(opts.root) : opts.cred_dir);
    check_socket_paths(p.dir);
    make_cred_dir(p);
    ::umask(077);
    Fd lock = daemon::claim(p.lock, kLockWaitMs, ready,
                            "a credential helper is already running for " + p.dir);
    if (!lock) return 0;
    bool store_ok = true;
    try {
      store::ensure_store({opts.root}, store::StoreUse::Existing);  // to see the sandboxes
    } catch (const Error& e) {
      store_ok = false;  // then grants of vanished sandboxes are dropped by a later start
      log::warn(std::string("the store is not available: ") + e.what());
    }
    Helper h(opts, p);
    h.start(ready, store_ok);
    h.run();
    return 0;
  } catch (const std::exception& e) {
    return daemon::report_start_failure(ready, e);
  }
}

}  // namespace space::cred

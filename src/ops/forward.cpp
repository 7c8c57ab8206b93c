// Port forwarding into a sandbox; see forward.h.
#include "ops/forward.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <memory>
#include <optional>
#include <thread>

#include "agent/client.h"
#include "core/idle.h"
#include "core/image_use.h"
#include "core/sandbox.h"
#include "proto/agent.h"
#include "proto/net.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/acceptor.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/relay.h"

namespace space::ops {

namespace {

constexpr int kDialMs = 120'000;  // dial, Hello and guest-init's answer: a loaded guest is slow
constexpr int kWatchMs = 500;
const char* const kForms =
    "forms: HOST_PORT:GUEST_PORT, ADDR:HOST_PORT:GUEST_PORT, "
    "[IPV6]:HOST_PORT:GUEST_PORT (ADDR an IP address or localhost)";

std::optional<uint16_t> parse_port(std::string_view s, bool zero_ok) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v > 65535 ||
      (v == 0 && !zero_ok))
    return std::nullopt;
  return uint16_t(v);
}

bool is_ip(const std::string& a, int family) {
  in6_addr buf{};
  return ::inet_pton(family, a.c_str(), &buf) == 1;
}

// A listening socket on spec's address and port; the port chosen is written back.
Fd listen_tcp(ForwardSpec& spec) {
  bool v6 = is_ip(spec.address, AF_INET6);
  Fd s(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) throw_errno("socket");
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(spec.host_port);
    ::inet_pton(AF_INET6, spec.address.c_str(), &a->sin6_addr);
    ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(spec.host_port);
    ::inet_pton(AF_INET, spec.address.c_str(), &a->sin_addr);
    len = sizeof *a;
  }
  std::string where =
      (v6 ? "[" + spec.address + "]" : spec.address) + ":" + std::to_string(spec.host_port);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    int e = errno;
    throw Error("listen on " + where + ": " + std::strerror(e), e,
                e == EADDRINUSE ? "choose another host port, or 0 for any free one"
                                : "the address must be one of this host's");
  }
  if (::listen(s.get(), 128) != 0) throw_errno("listen on " + where);
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  spec.host_port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return s;
}

std::string describe(const ForwardSpec& s) {
  if (!s.unix_path.empty()) return s.unix_path + " -> " + std::to_string(s.guest_port);
  bool v6 = s.address.find(':') != std::string::npos;
  return (v6 ? "[" + s.address + "]" : s.address) + ":" + std::to_string(s.host_port) + " -> " +
         std::to_string(s.guest_port);
}

// Running, or asleep from idleness (core/idle.h): the next connection wakes it.
bool can_serve(const store::SandboxState& st) {
  store::Status s = store::observed_status(st);
  return s == store::Status::Running ||
         (st.idle_asleep && (s == store::Status::Paused || s == store::Status::Checkpointed));
}

bool still_running(const store::SandboxPaths& p) {
  try {
    return can_serve(store::read_state(p.state));
  } catch (const Error&) {
    return false;  // destroyed
  }
}

// Carries one client connection to the guest port; returns "" or why it could not.
std::string carry(int client, const store::SandboxPaths& p, const std::string& id, bool image,
                  uint16_t guest_port, int stop_fd) {
  Fd conn;
  try {
    auto dl = net::Deadline::after_ms(kDialMs);
    dl.cancel_on(stop_fd);
    conn = agent::vsock_dial(p.vsock_sock, proto::kAgentPort, dl);
    auto bytes = proto::encode_frame(
        proto::Type::Hello, agent::make_hello(id, image ? proto::Hello::kImage : 0).encode());
    auto req = proto::encode_frame(proto::Type::Forward,
                                   proto::ForwardRequest{.port = guest_port}.encode());
    bytes.insert(bytes.end(), req.begin(), req.end());
    net::send_all(conn.get(), {reinterpret_cast<const char*>(bytes.data()), bytes.size()}, dl);
    agent::read_hello_reply(conn.get(), dl);
    auto f = agent::read_frame(conn.get(), dl);
    if (!f) return "guest-init closed the connection";
    if (f->type == proto::Type::Error) return proto::ErrorMsg::decode(f->payload).message;
    if (f->type != proto::Type::NetResult)
      return "unexpected frame type " + std::to_string(int(f->type)) + " from guest-init";
    auto r = proto::NetResult::decode(f->payload);
    if (!r.ok()) return r.message;
  } catch (const std::exception& e) {
    return e.what();
  }
  relay(client, conn.get(), -1, stop_fd);
  return "";
}

}  // namespace

ForwardSpec parse_forward_spec(std::string_view text) {
  auto bad = [&](const std::string& why) -> ForwardSpec {
    throw Error("forward \"" + std::string(text) + "\": " + why, 0, kForms);
  };
  ForwardSpec s;
  std::string_view rest = text;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
      return bad("an IPv6 address goes in brackets, followed by :HOST_PORT:GUEST_PORT");
    s.address = std::string(rest.substr(1, close - 1));
    if (!is_ip(s.address, AF_INET6)) return bad("\"" + s.address + "\" is not an IPv6 address");
    rest = rest.substr(close + 2);
  } else if (std::count(rest.begin(), rest.end(), ':') == 2) {
    size_t c = rest.find(':');
    s.address = std::string(rest.substr(0, c));
    if (s.address == "localhost") s.address = "127.0.0.1";
    if (!is_ip(s.address, AF_INET)) return bad("\"" + s.address + "\" is not an IP address");
    rest = rest.substr(c + 1);
  }
  size_t c = rest.find(':');
  if (c == std::string_view::npos || rest.find(':', c + 1) != std::string_view::npos)
    return bad("expected HOST_PORT:GUEST_PORT");
  auto hp = parse_port(rest.substr(0, c), true);
  auto gp = parse_port(rest.substr(c + 1), false);
  if (!hp) return bad("host port \"" + std::string(rest.substr(0, c)) + "\" is not 0..65535");
  if (!gp) return bad("guest port \"" + std::string(rest.substr(c + 1)) + "\" is not 1..65535");
  s.host_port = *hp;
  s.guest_port = *gp;
  return s;
}

ForwardSpec parse_unix_forward_spec(std::string_view text) {
  const std::string shown(text);
  size_t c = text.rfind(':');
  auto bad = [&](const std::string& why) -> ForwardSpec {
    fail("forward --unix \"" + shown + "\": " + why, "the form is PATH:GUEST_PORT");
  };
  if (c == std::string_view::npos || c == 0) return bad("expected PATH:GUEST_PORT");
  auto gp = parse_port(text.substr(c + 1), false);
  if (!gp) return bad("guest port \"" + std::string(text.substr(c + 1)) + "\" is not 1..65535");
  ForwardSpec s;
  s.address.clear();
  s.unix_path = fs::absolute(std::string(text.substr(0, c)));
  s.guest_port = *gp;
  return s;
}

net::Listener listen_forward(ForwardSpec& spec) {
  if (spec.unix_path.empty()) return net::Listener{listen_tcp(spec), 0};
  net::SocketAccess only_owner;
  only_owner.mode = 0600;
  return net::listen_at(spec.unix_path, 128, only_owner);  // non-blocking, as accept needs
}

namespace {

// One `space forward`'s listeners and the threads carrying their connections. The Unix sockets
// go when it ends, however it ends (only if they are still ours); every connection ends with it.
class Forwarder {
 public:
  Forwarder(const store::Context& ctx, const std::string& id, const store::SandboxPaths& p,
            bool image, const ForwardOptions& opts)
      : ctx_(ctx), id_(id), p_(p), image_(image), opts_(opts), held_{opts.specs, {}} {
    for (auto& s : specs_) listeners_.push_back(listen_forward(s));
    stop_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_) throw_errno("eventfd");
  }
  ~Forwarder() {
    uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);  // every carried connection ends
    for (auto& w : workers_) w.thread.join();
  }
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Serves until a signal or the sandbox's end; says which.
  std::string serve(proc::SignalGuard& sig) {
    for (const auto& s : specs_)
      if (opts_.on_listening) opts_.on_listening(describe(s));
    for (;;) {
      std::vector<pollfd> pfds;
      for (const auto& l : listeners_) pfds.push_back({l.fd.get(), POLLIN, 0});
      pfds.push_back({sig.fd(), POLLIN, 0});
      int n = ::poll(pfds.data(), pfds.size(), kWatchMs);
      if (n < 0 && errno != EINTR) throw_errno("poll");
      if (pfds.back().revents) return "interrupted by " + proc::signal_name(sig.take());
      if (!still_running(p_)) return "sandbox " + id_ + " is no longer running";
      reap_finished();
      for (size_t i = 0; n > 0 && i < listeners_.size(); i++)
        if (pfds[i].revents) accept_all(i);
    }
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };
  const store::Context& ctx_;
  const std::string& id_;
  const store::SandboxPaths& p_;
  const bool image_;
  const ForwardOptions& opts_;
  // The listeners, unlinked by this one's destructor, which runs even when a later one fails.
  struct Listeners {
    std::vector<ForwardSpec> specs;
    std::vector<net::Listener> all;
    ~Listeners() {
      for (size_t i = 0; i < all.size(); i++)
        if (!specs[i].unix_path.empty()) net::unlink_if_ours(specs[i].unix_path, all[i]);
    }
  } held_;
  std::vector<ForwardSpec>& specs_ = held_.specs;
  std::vector<net::Listener>& listeners_ = held_.all;
  Fd stop_;
  std::list<Worker> workers_;
  std::atomic<int> active_{0};
  Acceptor acceptor_;  // out of descriptors: a client is closed, the loop does not spin

  void error(const std::string& what) const {
    if (opts_.on_error) opts_.on_error(what);
  }

  void reap_finished() {
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (!it->done->load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = workers_.erase(it);
    }
  }

  // Takes every client waiting on listener `i`, each carried by a thread of its own.
  void accept_all(size_t i) {
    for (;;) {
      Fd c = acceptor_.accept(listeners_[i].fd.get(), SOCK_CLOEXEC);
      if (!c) {
        if (errno != EAGAIN)
          error(describe(specs_[i]) + ": accept: " + std::strerror(errno) +
                (errno == EMFILE ? " (a client was closed)" : ""));
        return;
      }
      if (active_.load() >= opts_.max_connections) {
        error(describe(specs_[i]) + ": " + std::to_string(opts_.max_connections) +
              " connections at once already; closed");
        continue;
      }
      uint16_t gp = specs_[i].guest_port;
      std::string what = describe(specs_[i]);
      std::optional<store::ActivityHold> use;  // here, so that a wake takes our signals
      try {
        use.emplace(core::use_sandbox(ctx_, id_));  // in use while the connection lasts
      } catch (const Error& e) {
        error(what + ": " + e.what());
        continue;
      }
      active_++;
      Worker& w = workers_.emplace_back();
      w.thread = std::thread(
          [this, gp, what, done = w.done, fd = std::move(c), use = std::move(use)]() mutable {
            std::string err = carry(fd.get(), p_, id_, image_, gp, stop_.get());
            if (!err.empty()) error(what + ": " + err);
            fd.reset();
            use.reset();
            active_--;
            done->store(true);
          });
    }
  }
};

}  // namespace

std::string forward_ports(const store::Context& ctx, const std::string& id,
                          const ForwardOptions& opts) {
  if (opts.specs.empty()) fail("nothing to forward", std::string("give ") + kForms);
  store::SandboxPaths p = store::sandbox_paths(ctx.root, id);
  core::require_sandbox(p, id);
  store::SandboxState rec = store::read_state(p.state);
  store::Status st = store::observed_status(rec);
  if (!can_serve(rec))
    fail("sandbox " + id + " is " + store::status_name(st) + ", not running",
         st == store::Status::Paused || st == store::Status::Checkpointed
             ? "space resume " + id
             : "'space create' makes a new one");
  bool image = core::attached_image(p).has_value();
  proc::SignalGuard sig;  // before any thread: they inherit the blocked signals
  Forwarder f(ctx, id, p, image, opts);
  return f.serve(sig);
}

}  // namespace space::ops

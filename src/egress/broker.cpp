// The network broker's sockets, threads and limits; see broker.h. Decisions are
// connection.cpp's and the policy's.
#include "egress/broker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "cred/client.h"
#include "cred/paths.h"
#include "cred/sandbox_ca.h"
#include "egress/audit.h"
#include "egress/connection.h"
#include "egress/netns.h"
#include "egress/paths.h"
#include "egress/policy_store.h"
#include "proto/agent.h"
#include "proto/net.h"
#include "store/activity.h"
#include "store/config.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/daemon.h"
#include "util/env.h"
#include "util/error.h"
#include "util/event_loop.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/ready.h"
#include "util/sandbox_sockets.h"
#include "util/socket.h"
#include "util/timing.h"

namespace space::egress {

namespace {

constexpr size_t kMaxConnections = 2048;
constexpr int kLockWaitMs = 3000;
constexpr int kSyncEveryMs = 5000;
constexpr size_t kMaxOperatorLine = 256;

// Raises the soft descriptor limit to the hard one: each connection holds two descriptors.
void raise_nofile() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

class Broker {
 public:
  Broker(const BrokerOptions& o, EgressPaths p)
      : root_(o.root),
        paths_(std::move(p)),
        max_per_sandbox_(size_t(std::max(o.max_per_sandbox, 1))),
        audit_(paths_, o.audit_max_bytes, timing::wall_ms),
        idle_(int64_t{broker_idle_seconds()} * 1000),
        stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
        done_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!stop_ || !done_) throw_errno("eventfd");
  }

  ~Broker() {
    uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);  // every worker ends its wait
    for (auto& [n, t] : workers_) t.join();
    audit_.flush(true);  // the counts not yet written: nothing is lost silently
    if (op_listener_) {
      loop_.remove(op_listener_.get());
      ::unlink(paths_.sock.c_str());
    }
  }

  void start(Fd& ready) {
    fs::ensure_private_dir(store::run_base(), 0700);
    op_listener_ = net::unix_listen(paths_.sock, 64);
    loop_.add(op_listener_.get(), EPOLLIN,
              [this](uint32_t) { sockets_.accept_pending(op_listener_.get(), ""); });
    loop_.add(done_.get(), EPOLLIN, [this](uint32_t) { reap_workers(); });
    sigfd_ = daemon::stop_loop_on_signals(loop_);
    sync();
    idle_.touch();
    daemon::report_ready(ready);
    log::info("network broker serving " + root_ + " (idle exit after " +
              std::to_string(idle_.idle_ms() / 1000) + " s)");
  }

  void run() {
    int64_t last_sync = timing::mono_ms();
    while (!loop_.stopping()) {
      int64_t now = timing::mono_ms();
      if (now - last_sync >= kSyncEveryMs) {
        sync();
        audit_.flush(false);
        last_sync = now;
      }
      // Idle only when no sandbox needs us: a jailed VMM cannot start a broker, so one stays up
      // while a running sandbox has a policy.
      int64_t wait = kSyncEveryMs - (now - last_sync);
      int64_t idle_left = idle_.left(active() > 0 || !sockets_.empty(), wait);
      if (idle_left <= 0) return;
      wait = std::min(wait, idle_left);
      loop_.run_once(int(std::max<int64_t>(wait, 1)));
    }
  }

 private:
  size_t active() {
    std::lock_guard<std::mutex> g(mu_);
    return workers_.size();
  }

  // Listens for every sandbox that has a policy and a run directory, open to the run directory's
  // group (the jail's: the sandbox's VMM dials it); stops listening for those that lost either
  // (destroyed: the run directory and its socket are gone).
  void sync() {
    std::map<std::string, gid_t> want;
    for (const auto& name : fs::list_dir(paths_.policies)) {
      if (name.size() <= 5 || name.substr(name.size() - 5) != ".json") continue;
      std::string id = name.substr(0, name.size() - 5);
      std::string run_dir;
      try {
        run_dir = store::sandbox_run_dir(id);
      } catch (const Error&) {
        continue;  // not a policy space wrote
      }
      if (auto gid = directory_group(run_dir)) want[id] = *gid;
    }
    sockets_.sync(want);
  }

  // One connection to the operator socket: a request line, answered.
  void serve_operator(Fd c) {
    if (!net::peer_trusted(c.get())) return;
    // A short blocking exchange: the operator socket is used by our own processes only.
    std::string reply;
    try {
      auto line = net::read_line(c.get(), net::Deadline::after_ms(1000), kMaxOperatorLine);
      if (line && *line == "sync") {
        sync();
        reply = "ok\n";
      } else if (line && *line == "ping") {
        reply = "ok\n";
      } else {
        reply = "error: unknown request\n";
      }
      net::send_all(c.get(), reply, net::Deadline::after_ms(1000));
    } catch (const Error& e) {
      log::debug(std::string("operator connection: ") + e.what());
    }
  }

  // A connection to the operator socket (id "") or to a sandbox's.
  void on_conn(Fd c, const std::string& id, const ucred& cr) {
    idle_.touch();
    if (id.empty()) return serve_operator(std::move(c));
    std::string over;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (workers_.size() >= kMaxConnections)
        over = "the broker has " + std::to_string(kMaxConnections) + " connections open";
      else if (per_sandbox_[id] >= max_per_sandbox_)
        over = "sandbox " + id + " has " + std::to_string(max_per_sandbox_) +
               " connections open, its limit ([net] max_connections)";
    }
    if (!over.empty()) {
      refuse_busy(std::move(c), id, over);
      return;
    }
    start_worker(std::move(c), id, cr.pid);
  }

  // Answers 503 without reading the request (the guest's proxy turns it into its reply).
  void refuse_busy(Fd c, const std::string& id, const std::string& why) {
    proto::NetResult r;
    r.status = 503;
    r.message = why;
    auto frame = proto::encode_frame(proto::Type::NetResult, r.encode());
    (void)!::send(c.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    AuditRecord rec;
    rec.sandbox = id;
    rec.decision = "deny";
    rec.kind = "too many connections";
    rec.reason = why;
    rec.time_ms = timing::wall_ms();
    audit_.record(rec);
  }

  // The bindings of sandbox `id` (secrets bound to hosts), when it has a CA: the credential
  // helper keeps them; nullopt otherwise (a stat: every connection of every sandbox asks).
  std::optional<Injection> injection_for(const std::string& id) {
    std::string cred_dir;
    try {
      cred_dir = cred::cred_dir_for_root(root_);
      if (!cred::has_sandbox_ca(cred_dir, id)) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    Injection inj;
    cred::SandboxCa ca = cred::sandbox_ca(cred_dir, id);
    inj.ca_cert = ca.cert;
    inj.ca_key = ca.key;
    try {
      inj.trust_file = store::load_host_config(root_).egress_ca_file;
    } catch (const std::exception& e) {
      log::warn(std::string("config.toml: ") + e.what() + "; the system's CAs only");
    }
    const store::Context ctx{root_, "warn", "text"};
    inj.bindings = [ctx, id](const std::string& host, uint16_t port) {
      return cred::cred_call(ctx, proto::credd::BindingsRequest{id, host, port});
    };
    inj.swap = [ctx, id](const std::string& token, const std::string& host, uint16_t port,
                         const RequestInfo& r) -> std::optional<SecretString> {
      try {
        return cred::cred_swap(
            ctx, proto::credd::SwapRequest{id, token, host, port, r.method, r.target});
      } catch (const Error& e) {
        log::info("sandbox " + id + ": swap refused: " + e.what());
        return std::nullopt;
      }
    };
    return inj;
  }

  void start_worker(Fd c, const std::string& id, int pid) {
    std::lock_guard<std::mutex> g(mu_);
    uint64_t n = next_worker_++;
    per_sandbox_[id]++;
    int stop = stop_.get();
    workers_.emplace(n, std::thread([this, n, id, pid, stop, fd = std::move(c)]() mutable {
                       std::string engine;  // for the audit line, from the same read
                       std::string problem = store::vmm_peer_problem(root_, id, pid, &engine);
                       // Its connections leave from its own network namespace, if it names one
                       // (egress/netns.h); this thread is its alone, and ends with it.
                       if (problem.empty()) {
                         try {
                           if (auto ns = load_netns(paths_, id)) enter_netns(*ns);
                         } catch (const std::exception& e) {
                           problem = std::string("the sandbox's network namespace: ") + e.what();
                         }
                       }
                       // A connection is a use of its sandbox: not idle while it lasts
                       // (store/activity.h). Never waits: an idle pause under way wins.
                       std::optional<store::ActivityHold> use;
                       if (problem.empty()) {
                         try {
                           use.emplace(store::sandbox_paths(root_, id).activity,
                                       store::ActivityHold::Wait::NonBlocking);
                         } catch (const std::exception&) {
                         }
                       }
                       std::optional<Injection> inj = injection_for(id);
                       AuditRecord rec = serve_connection(
                           std::move(fd), id, problem,
                           [this, &id] { return load_policy(paths_, id); }, system_resolve,
                           ConnLimits{}, stop, inj ? &*inj : nullptr);
                       rec.engine = engine;
                       audit_.record(rec);
                       {
                         std::lock_guard<std::mutex> g2(mu_);
                         finished_.push_back(n);
                         per_sandbox_[id]--;
                       }
                       uint64_t one = 1;
                       (void)!::write(done_.get(), &one, sizeof one);
                     }));
  }

  void reap_workers() {
    uint64_t v;
    (void)!::read(done_.get(), &v, sizeof v);
    std::vector<std::thread> done;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (uint64_t n : finished_) {
        auto it = workers_.find(n);
        if (it == workers_.end()) continue;
        done.push_back(std::move(it->second));
        workers_.erase(it);
      }
      finished_.clear();
    }
    for (auto& t : done) t.join();
    idle_.touch();
  }

  std::string root_;
  EgressPaths paths_;
  size_t max_per_sandbox_;
  AuditLog audit_;  // thread-safe
  daemon::IdleExit idle_;
  EventLoop loop_;
  Fd op_listener_, sigfd_, stop_, done_;
  SandboxSockets sockets_{
      loop_, sandbox_socket, 64,
      [this](Fd c, const std::string& id, const ucred& cr) { on_conn(std::move(c), id, cr); }};
  std::mutex mu_;  // guards the worker tables below
  std::map<uint64_t, std::thread> workers_;
  std::vector<uint64_t> finished_;
  std::map<std::string, size_t> per_sandbox_;
  uint64_t next_worker_ = 0;
};

}  // namespace

int broker_idle_seconds() {
  return env::seconds("SPACE_EGRESS_IDLE_SECONDS", 60);
}

int egress_main(const BrokerOptions& opts) {
  Fd ready = daemon::ready_pipe(opts.ready_fd);
  try {
    EgressPaths p = egress_paths(opts.root);
    make_egress_dirs(p);
    ::umask(077);
    Fd lock = daemon::claim(p.lock, kLockWaitMs, ready,
                            "a network broker is already running for " + opts.root);
    if (!lock) return 0;
    raise_nofile();
    Broker b(opts, p);
    b.start(ready);
    b.run();
    return 0;
  } catch (const std::exception& e) {
    return daemon::report_start_failure(ready, e);
  }
}

}  // namespace space::egress

// Session: a blocking read loop feeding proto::FrameDecoder and dispatching whole frames.
// Blocking I/O on a thread of its own keeps each conversation straight-line code; see main.cpp
// for why guest-init uses a thread per connection.
#include "session.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>

#include "channel.h"
#include "cred_fetch.h"
#include "exec_session.h"
#include "file_session.h"
#include "forward_session.h"
#include "proto/agent.h"
#include "proto/exec.h"
#include "proto/net.h"
#include "util/wipe.h"

namespace space::guest {
namespace {

class Session {
 public:
  Session(Fd fd, Context& ctx) : ch_(std::move(fd)), ctx_(ctx) {}

  void run() {
    // Not value-initialised: pages are touched only as data arrives (faults are costly on PVM).
    constexpr size_t kBufSize = 64 * 1024;
    auto buf = std::make_unique_for_overwrite<uint8_t[]>(kBufSize);
    for (;;) {
      ssize_t n = ::read(ch_.fd(), buf.get(), kBufSize);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // peer closed (a frame cut short by EOF is simply dropped)
      try {
        dec_.feed({buf.get(), static_cast<size_t>(n)});
        while (auto f = dec_.next())
          if (!on_frame(*f)) return;
      } catch (const proto::ProtoError& e) {
        refuse(std::string("malformed frame: ") + e.what());
        return;
      }
    }
  }

 private:
  // Handles one frame; false closes the connection.
  bool on_frame(const proto::Frame& f) {
    if (!greeted_) return on_hello(f);
    switch (f.type) {
      case proto::Type::Hello:
        return refuse("duplicate Hello");
      case proto::Type::Error:
        return false;  // the host gave up on this connection; it closes, so do we
      default:
        return on_request(f);
    }
  }

  bool on_hello(const proto::Frame& f) {
    if (f.type != proto::Type::Hello)
      return refuse("expected Hello, got frame type " + std::to_string(static_cast<int>(f.type)));
    auto hello = proto::Hello::decode(f.payload);
    if (hello.version != proto::kVersion)
      return refuse("protocol version " + std::to_string(hello.version) +
                    " is not supported (guest-init speaks " + std::to_string(proto::kVersion) +
                    ")");
    if (ctx_.pid1) {
      if (ctx_.gvisor)
        ctx_.host_sync.apply_hostname(hello, ctx_.console);  // RNG and clock are the host's
      else
        ctx_.host_sync.apply(hello, ctx_.console);
      if (hello.flags & proto::Hello::kImage)
        ctx_.image.ensure(ctx_.console, ctx_.host_sync.hostname(ctx_.hostname));
    }
    image_wanted_ = hello.flags & proto::Hello::kImage;
    if ((hello.flags & proto::Hello::kNetwork) &&
        (ctx_.pid1 || !ctx_.proxy_options.egress_unix.empty())) {
      std::string why = ctx_.proxy.ensure(ctx_.proxy_options);
      if (!why.empty()) ctx_.console.log("no network proxy: " + why);
    }
    proto::HelloReply reply;
    reply.agent = ctx_.agent;
    reply.hostname = ctx_.pid1 ? ctx_.host_sync.hostname(ctx_.hostname) : ctx_.hostname;
    reply.uptime_ms = uptime_ms();
    greeted_ = true;
    return ch_.send(proto::Type::HelloReply, reply.encode());
  }

  bool on_request(const proto::Frame& f) {
    switch (f.type) {
      case proto::Type::Poweroff:
        if (!f.payload.empty()) return refuse("Poweroff takes no payload");
        ch_.send(proto::Type::Ack);
        ctx_.console.log("poweroff requested by the host");
        if (ctx_.request_poweroff) ctx_.request_poweroff();
        return true;  // stay open: the host sees EOF when the VM ends
      case proto::Type::Exec: {
        int64_t start = monotonic_us();
        auto req = proto::ExecRequest::decode(f.payload);  // ProtoError: refused by run()
        if (image_wanted_ && ctx_.image.root_fd() < 0)
          return refuse(ctx_.pid1 ? ctx_.image.error() : "this guest-init serves no image");
        if (req.secret_env.empty()) {
          run_exec(ctx_, ch_.fd(), dec_, req, start);
          return false;  // an exec ends its connection
        }
        std::vector<std::string> secret_env;
        if (!fetch_secret_env(req, secret_env)) return false;
        run_exec(ctx_, ch_.fd(), dec_, req, start, &secret_env);  // wipes them once spawned
        for (auto& e : secret_env) wipe(e);
        return false;
      }
      case proto::Type::FilePut:
      case proto::Type::FileGet: {
        // ProtoError: refused by run().
        if (image_wanted_ && ctx_.image.root_fd() < 0)
          return refuse(ctx_.pid1 ? ctx_.image.error() : "this guest-init serves no image");
        Fd own_root;
        int root = image_wanted_ ? ctx_.image.root_fd() : -1;
        if (root < 0) {
          own_root = Fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
          if (!own_root) return refuse(std::string("open /: ") + std::strerror(errno));
          root = own_root.get();
        }
        if (f.type == proto::Type::FilePut)
          run_put(ctx_, ch_, dec_, proto::PutRequest::decode(f.payload), root);
        else
          run_get(ctx_, ch_, proto::GetRequest::decode(f.payload), root);
        return false;  // a copy ends its connection
      }
      case proto::Type::Forward:
        // ProtoError: refused by run(). The host sends nothing before the answer, so the
        // decoder holds no bytes that belong to the forwarded stream.
        run_forward(ctx_, ch_, proto::ForwardRequest::decode(f.payload));
        return false;  // the forwarded connection ends its connection
      default:
        return refuse("unsupported frame type " + std::to_string(static_cast<int>(f.type)));
    }
  }

  // Fetches the secrets of req.secret_env ("VAR=NAME") into `out` ("VAR=value"); on a denial or
  // an unreachable helper refuses the exec with an Error naming the secret and the reason.
  bool fetch_secret_env(const proto::ExecRequest& req, std::vector<std::string>& out) {
    std::vector<std::string> names;
    for (const auto& e : req.secret_env) names.push_back(e.substr(e.find('=') + 1));
    CredFetch got = fetch_secrets(names, ctx_.cred_unix);
    if (got.status != CredStatus::Ok) return refuse("--secret-env " + got.message);
    out.reserve(names.size());
    for (size_t i = 0; i < names.size(); i++) {
      const std::string& e = req.secret_env[i];
      std::string_view v = got.values[i].view();
      size_t var = e.find('=');
      if (v.find('\0') != std::string::npos) {
        for (auto& x : out) wipe(x);
        return refuse("--secret-env " + names[i] +
                      ": the value contains a NUL byte and cannot be an environment variable");
      }
      std::string kv;
      kv.reserve(var + 1 + v.size());
      kv.append(e, 0, var + 1).append(v);
      out.push_back(std::move(kv));
    }
    return true;  // `got` wipes its values as it goes
  }

  // Sends Error, logs why, and returns false (close).
  bool refuse(const std::string& why) {
    ctx_.console.log("connection refused: " + why);
    ch_.send_error(why);
    ::shutdown(ch_.fd(), SHUT_WR);
    return false;
  }

  Channel ch_;
  Context& ctx_;
  proto::FrameDecoder dec_;
  bool greeted_ = false;
  bool image_wanted_ = false;  // the Hello said the sandbox has an image
};

}  // namespace

void serve_connection(Fd conn, Context& ctx) noexcept {
  try {
    Session(std::move(conn), ctx).run();
  } catch (const std::exception& e) {
    ctx.console.log(std::string("connection failed: ") + e.what());
  } catch (...) {
    ctx.console.log("connection failed");
  }
}

}  // namespace space::guest

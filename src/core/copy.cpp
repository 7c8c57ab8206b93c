// copy_files: see copy.h. The host's half of the file conversation: one vsock connection per
// source, Hello and the request sent in one write, then entries one frame at a time with blocking
// I/O (a frame is at most proto::kMaxFileChunk of data, so memory stays bounded).
#include "core/copy.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include "agent/client.h"
#include "core/idle.h"
#include "core/image_use.h"
#include "core/sandbox.h"
#include "core/session.h"
#include "proto/agent.h"
#include "proto/files.h"
#include "store/archive_entries.h"
#include "store/paths.h"
#include "store/state.h"
#include "util/copy_target.h"
#include "util/error.h"
#include "util/process.h"
#include "util/socket.h"
#include "util/tree_walker.h"
#include "util/tree_writer.h"

namespace space::core {
namespace {

// The hint of a copy out refused past --max-size (raised where it is refused, copy.cpp or the
// tree writer).
constexpr const char* kMaxSizeHint = "raise it with --max-size (what this copy wrote was removed)";

constexpr int kConnectTimeoutMs = 30'000;
constexpr int kStallMs = 300'000;  // no frame moved for this long: the guest is stuck
// After the last frame of a copy in, the guest still writes what was in flight (socket and vsock
// buffers: up to thousands of small files, minutes on a PVM host) before it confirms.
constexpr int kConfirmMs = 1'800'000;

// A paused sandbox is resumed for the copy; this pauses it again, whatever happens.
class Repause {
 public:
  Repause(const store::Context& ctx, std::string id) : ctx_(ctx), id_(std::move(id)) {}
  ~Repause() {
    if (!active_) return;
    try {
      pause_sandbox(ctx_, id_);
    } catch (const std::exception&) {
      // It stays running; `space state` shows it. Nothing else to do from a destructor.
    }
  }
  Repause(const Repause&) = delete;
  Repause& operator=(const Repause&) = delete;
  void arm() { active_ = true; }

 private:
  const store::Context& ctx_;
  std::string id_;
  bool active_ = false;
};

// One copy's connection to guest-init.
class Conn {
 public:
  Conn(const store::Context& ctx, const std::string& id, proc::SignalGuard& sig)
      : id_(id), sig_(sig), use_(use_sandbox(ctx, id)), repause_(ctx, id) {
    store::SandboxPaths p = store::sandbox_paths(ctx.root, id);
    require_sandbox(p, id);
    store::Status s = store::observed_status(store::read_state(p.state));
    if (s == store::Status::Paused) {
      resume_sandbox(ctx, id);
      repause_.arm();
    } else if (s != store::Status::Running) {
      std::string status = store::status_name(s);
      if (s == store::Status::Checkpointed)
        fail("sandbox " + id + " is " + status + ", not running", "space resume " + id);
      fail("sandbox " + id + " is " + status + ", not running",
           "'space destroy " + id + "' removes it; 'space create' makes a new one");
    }
    if (auto image = attached_image(p)) {
      image_ = true;
      user_ = image->config.user;
    }
    auto dl = net::Deadline::after_ms(kConnectTimeoutMs);
    dl.cancel_on(sig_.fd());
    try {
      sock_ = agent::vsock_dial(p.vsock_sock, proto::kAgentPort, dl);
    } catch (const Error& e) {
      if (e.err() == ENOENT || e.err() == ECONNREFUSED)
        throw Error("sandbox " + id + " is not running (its VMM does not answer): " + e.what(),
                    e.err(), "'space state " + id + "' shows its status");
      throw Error("guest-init in sandbox " + id + " does not answer: " + e.what(), e.err(),
                  "see " + p.console_log);
    }
  }

  // Hello and the request in one write, then the HelloReply.
  void open(proto::Type type, const std::vector<uint8_t>& request) {
    auto bytes = proto::encode_frame(
        proto::Type::Hello, agent::make_hello(id_, image_ ? proto::Hello::kImage : 0).encode());
    auto req = proto::encode_frame(type, request);
    bytes.insert(bytes.end(), req.begin(), req.end());
    net::send_all(sock_.get(), {reinterpret_cast<const char*>(bytes.data()), bytes.size()}, dl());
    agent::read_hello_reply(sock_.get(), dl());
  }

  // Sends a frame; an Error the guest sent meanwhile (it gave up) is thrown instead.
  void send(proto::Type type, std::span<const uint8_t> payload = {}) {
    pollfd pfd{sock_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, 0) > 0) {
      auto f = agent::read_frame(sock_.get(), dl());
      if (!f) fail("guest-init closed the connection");
      throw_guest(*f);
    }
    try {
      agent::write_frame(sock_.get(), type, payload, dl());
    } catch (const Error& e) {
      if (e.err() != EPIPE && e.err() != ECONNRESET) throw;
      // The guest gave up while we wrote: its Error, if it sent one, says why.
      if (auto f = agent::read_frame(sock_.get(), dl())) throw_guest(*f);
      throw;
    }
  }

  // The next frame, within `stall_ms`; an Error frame is thrown, and so is the end of the
  // connection.
  proto::Frame recv(int stall_ms = kStallMs) {
    auto f = agent::read_frame(sock_.get(), dl(stall_ms));
    if (!f) fail("guest-init closed the connection in the middle of the copy");
    if (f->type == proto::Type::Error) throw_guest(*f);
    return std::move(*f);
  }

  // Tells the guest this side gives up (it removes what it created), best effort.
  void abort() noexcept {
    try {
      proto::ErrorMsg m{.message = "the host gave up on the copy"};
      agent::write_frame(sock_.get(), proto::Type::Error, m.encode(),
                         net::Deadline::after_ms(1000));
    } catch (...) {
    }
  }

  const std::string& user() const { return user_; }
  const std::string& id() const { return id_; }

 private:
  net::Deadline dl(int ms = kStallMs) const {
    auto d = net::Deadline::after_ms(ms);
    d.cancel_on(sig_.fd());
    return d;
  }
  [[noreturn]] void throw_guest(const proto::Frame& f) const {
    if (f.type != proto::Type::Error)
      fail("unexpected frame type " + std::to_string(static_cast<int>(f.type)) + " from the guest");
    std::string msg = proto::ErrorMsg::decode(f.payload).message;
    if (msg.starts_with("unsupported frame type"))
      fail("guest-init in sandbox " + id_ + " cannot copy files: " + msg,
           "its template predates space cp; rebuild it (space template build)");
    fail(msg);
  }

  std::string id_;
  proc::SignalGuard& sig_;
  store::ActivityHold use_;  // the sandbox is in use (and awake: core/idle.h) while we copy
  Repause repause_;
  Fd sock_;
  bool image_ = false;
  std::string user_;  // the image's User: the default owner of files copied in
};

// Counts data and reports progress.
struct Meter {
  const CopyOptions& o;
  CopyStats stats;
  void add(uint64_t n) {
    stats.bytes += n;
    if (o.progress) o.progress(stats.bytes);
  }
};

// Sends one entry (and a File's data read from `fd`).
void send_entry(Conn& c, Meter& m, const TreeEntry& e, int fd) {
  c.send(proto::Type::FileEntry, proto::encode_entry(e));
  m.stats.entries++;
  if (fd < 0) return;
  send_file_data(fd, e.size, proto::kMaxFileChunk, [&](const uint8_t* p, size_t n) {
    c.send(proto::Type::FileData, {p, n});
    m.add(n);
  });
}

// Sends the entries of the tar stream on `in`, data in order (gaps of sparse files as zeros).
void send_archive(Conn& c, Meter& m, int in) {
  std::vector<uint8_t> zeros;
  store::read_archive_entries(
      in, "the tar stream on stdin", [&](const TreeEntry& e, const store::ArchiveData& data) {
        c.send(proto::Type::FileEntry, proto::encode_entry(e));
        m.stats.entries++;
        if (e.kind != EntryKind::File) return;
        uint64_t at = 0;
        auto fill = [&](uint64_t to) {
          while (at < to) {
            size_t n = static_cast<size_t>(std::min<uint64_t>(to - at, proto::kMaxFileChunk));
            zeros.resize(std::max(zeros.size(), n));
            c.send(proto::Type::FileData, {zeros.data(), n});
            at += n;
            m.add(n);
          }
        };
        data([&](std::span<const uint8_t> b, uint64_t offset) {
          if (offset < at || offset > e.size || b.size() > e.size - offset)
            fail("the tar stream on stdin: " + e.name + ": data beyond its size");
          fill(offset);
          while (!b.empty()) {
            size_t n = std::min(b.size(), proto::kMaxFileChunk);
            c.send(proto::Type::FileData, b.first(n));
            b = b.subspan(n);
            at += n;
            m.add(n);
          }
        });
        fill(e.size);
      });
}

void put(const store::Context& ctx, const std::string& src, const CopyPath& to, bool many,
         const CopyOptions& o, Meter& m, proc::SignalGuard& sig) {
  Conn c(ctx, to.sandbox, sig);
  proto::PutRequest req;
  req.dest = many && !to.path.ends_with("/") ? to.path + "/" : to.path;
  req.user = c.user();
  if (o.archive) req.flags |= proto::PutRequest::kArchive;
  Fd top;
  if (src == "-") {
    req.flags |= proto::PutRequest::kStream | proto::PutRequest::kDir;
  } else {
    top = Fd(::open(src.c_str(), O_PATH | O_CLOEXEC | (o.follow_link ? 0 : O_NOFOLLOW)));
    if (!top) throw_errno(src);
    struct stat st;
    if (::fstat(top.get(), &st) != 0) throw_errno(src);
    SourceName sn = source_name(src);
    if (S_ISDIR(st.st_mode)) req.flags |= proto::PutRequest::kDir;
    if (sn.contents && S_ISDIR(st.st_mode)) req.flags |= proto::PutRequest::kContents;
    if (sn.contents && !S_ISDIR(st.st_mode)) fail(src + ": not a directory");
    req.name = sn.name;
  }
  c.open(proto::Type::FilePut, req.encode());
  auto ack = c.recv();
  if (ack.type != proto::Type::Ack) fail("the guest did not accept the copy");
  try {
    if (src == "-") {
      send_archive(c, m, o.stdin_fd);
    } else {
      WalkOptions wo;
      wo.follow_top = o.follow_link;
      wo.xattrs = o.archive;
      m.stats.skipped += walk_tree(top.get(), wo, [&](const TreeEntry& e, int fd) {
                           send_entry(c, m, e, fd);
                         }).skipped;
    }
    c.send(proto::Type::FileEnd);
  } catch (...) {
    c.abort();
    throw;
  }
  auto done = c.recv(kConfirmMs);
  if (done.type != proto::Type::FileDone) fail("the guest did not confirm the copy");
  m.stats.skipped += proto::CopyDone::decode(done.payload).skipped;
}

// How a tree from the guest is written on the host: with the caller's ownership unless archived,
// no devices, and set-id bits and xattrs only as the flags allow.
TreeWriteOptions host_write_options(const CopyOptions& o, const CopyTarget& target) {
  TreeWriteOptions wo;
  wo.top = target.top;
  wo.devices = false;
  wo.skip_devices = true;
  wo.keep_setid = o.archive && o.keep_privileges;
  wo.xattrs = o.archive;
  wo.privileged_xattrs = o.keep_privileges;
  if (!o.archive) {
    wo.owner_uid = ::geteuid();
    wo.owner_gid = ::getegid();
  }
  wo.max_bytes = o.max_bytes;  // refused before it is written
  wo.max_bytes_hint = kMaxSizeHint;
  return wo;
}

void get(const store::Context& ctx, const CopyPath& from, const std::string& dest,
         const CopyOptions& o, Meter& m, proc::SignalGuard& sig) {
  Conn c(ctx, from.sandbox, sig);
  proto::GetRequest req;
  req.src = from.path;
  if (o.follow_link) req.flags |= proto::GetRequest::kFollowLink;
  c.open(proto::Type::FileGet, req.encode());
  SourceName sn = source_name(from.path);
  const std::string origin = "sandbox " + from.sandbox + ":" + from.path;

  proto::Frame first = c.recv();
  if (first.type != proto::Type::FileEntry) fail(origin + ": the guest sent no tree");
  TreeEntry top;
  try {
    top = proto::decode_entry(first.payload);
  } catch (const proto::ProtoError& e) {
    fail(origin + ": the guest sent a malformed entry: " + e.what());
  }
  if (!top.name.empty()) fail(origin + ": the guest's tree does not start at its top");
  if (sn.contents && top.kind != EntryKind::Dir) fail(from.path + ": not a directory");

  CopyTarget target;  // outlives the writer, which borrows its directory
  std::unique_ptr<store::ArchiveWriter> tar;
  std::unique_ptr<TreeWriter> tree;
  if (dest == "-") {
    if (::isatty(o.stdout_fd) == 1)
      fail("refusing to write a tar stream to a terminal", "redirect stdout or pipe it to tar -x");
    tar = std::make_unique<store::ArchiveWriter>(o.stdout_fd, sn.contents ? "" : sn.name, "stdout");
  } else {
    CopySource cs{top.kind == EntryKind::Dir, sn.contents, false, sn.name};
    target = copy_target(AT_FDCWD, 0, dest, cs);
    tree = std::make_unique<TreeWriter>(target.dir.get(), host_write_options(o, target), origin);
  }
  try {
    proto::TreeReceiver rx(tar ? static_cast<TreeSink&>(*tar) : *tree);
    uint64_t seen = 0;
    for (proto::Frame f = std::move(first);; f = c.recv()) {
      if (rx.feed(f)) break;
      if (rx.bytes() == seen) continue;
      m.add(rx.bytes() - seen);
      seen = rx.bytes();
      if (o.max_bytes && seen > o.max_bytes)
        fail(origin + ": the copy exceeds its size limit of " + std::to_string(o.max_bytes) +
                 " bytes",
             kMaxSizeHint);
    }
    m.stats.entries = rx.entries();
    if (tar)
      tar->close();
    else
      tree->finish();
  } catch (const proto::ProtoError& e) {
    if (tree) tree->remove_created();
    fail(origin + ": the guest sent a malformed tree: " + e.what(),
         tar ? "discard the tar stream on stdout: it is incomplete" : "");
  } catch (...) {
    if (tree) tree->remove_created();
    throw;
  }
  if (tree) {
    m.stats.skipped += tree->stats().skipped;
    m.stats.setid_dropped = tree->stats().setid_dropped;
    m.stats.xattrs_dropped = tree->stats().xattrs_dropped;
  }
}

}  // namespace

CopyPath parse_copy_path(const std::string& arg) {
  if (arg == "-") return {true, "", ""};
  size_t colon = arg.find(':');
  if (colon != std::string::npos && colon > 0 && arg.find('/') > colon)
    return {false, arg.substr(0, colon), arg.substr(colon + 1)};
  return {false, "", arg};
}

CopyStats copy_files(const store::Context& ctx, const CopyOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.sources.empty()) fail("nothing to copy", "space cp SRC... ID:DEST or space cp ID:SRC DEST");
  CopyPath to = parse_copy_path(o.dest);
  std::vector<CopyPath> from;
  for (const auto& s : o.sources) from.push_back(parse_copy_path(s));
  const bool out = !from[0].sandbox.empty();
  for (const auto& f : from)
    if (!f.sandbox.empty() && from.size() > 1)
      fail("copy out of a sandbox takes one source", "run one space cp per source");
  if (out && !to.sandbox.empty())
    fail("both sides are in a sandbox", "copy to the host, then into the other sandbox");
  if (!out && to.sandbox.empty())
    fail("neither side is in a sandbox",
         "name one as ID:PATH (a host path with a ':' before any '/' is written ./a:b)");
  if (!out && to.stream) fail("'-' as the destination needs a sandbox source");
  for (const auto& f : from)
    if (f.stream && from.size() > 1) fail("'-' (a tar stream on stdin) must be the only source");
  for (const auto& f : out ? std::vector<CopyPath>{to} : from)
    if (!f.stream && f.path.empty()) fail("an empty path", "name a file or directory");
  if (out && from[0].path.empty()) fail("an empty path in the sandbox", "use ID:/ for its root");
  if (!out && to.path.empty()) fail("an empty destination in the sandbox", "use ID:/ for its root");

  proc::SignalGuard sig;
  Meter m{o, {}};
  try {
    if (out)
      get(ctx, from[0], to.stream ? "-" : to.path, o, m, sig);
    else
      for (const auto& s : o.sources) put(ctx, s, to, o.sources.size() > 1, o, m, sig);
  } catch (const net::Cancelled&) {
    fail("interrupted by " + proc::signal_name(sig.take()) +
         "; what the copy had created was removed");
  }
  m.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m.stats;
}

std::string privileges_warning(const CopyOptions& o, const CopyStats& s) {
  if (!o.archive || o.keep_privileges || (s.setid_dropped == 0 && s.xattrs_dropped == 0)) return "";
  auto count = [](uint64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return "space cp: dropped setuid/setgid bits of " + count(s.setid_dropped, "file", "files") +
         " and " + count(s.xattrs_dropped, "security xattr", "security xattrs") +
         "; --keep-privileges keeps them";
}

CopySpec parse_copy_spec(const std::string& spec) {
  size_t at = spec.rfind(":/");
  if (at == std::string::npos || at == 0)
    fail("--copy " + spec + ": expected HOST_PATH:GUEST_PATH with an absolute GUEST_PATH",
         "for example --copy ./src:/work");
  CopySpec c{spec.substr(0, at), spec.substr(at + 1)};
  struct stat st;
  if (::lstat(c.host.c_str(), &st) != 0) throw_errno("--copy " + spec + ": " + c.host);
  return c;
}

void copy_specs_into(const store::Context& ctx, const std::string& id,
                     const std::vector<CopySpec>& specs) {
  for (const auto& c : specs) {
    CopyOptions o;
    o.sources = {c.host};
    o.dest = id + ":" + c.guest;
    o.archive = c.archive;
    try {
      copy_files(ctx, o);
    } catch (Error& e) {
      e.add_context("--copy " + c.host + ":" + c.guest);
      throw;
    }
  }
}

}  // namespace space::core

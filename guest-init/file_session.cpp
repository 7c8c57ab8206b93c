// run_put / run_get: see file_session.h.
#include "file_session.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "exec_spawn.h"
#include "passwd.h"
#include "util/copy_target.h"
#include "util/error.h"
#include "util/open_resolved.h"
#include "util/tree_walker.h"
#include "util/tree_writer.h"

namespace space::guest {
namespace {

constexpr size_t kReadBuf = 256 * 1024;

// The next frame from `fd` (blocking), read through `buf` (kReadBuf bytes, allocated once per
// copy by the caller); nullopt when the host closed the connection.
std::optional<proto::Frame> next_frame(int fd, proto::FrameDecoder& dec, uint8_t* buf) {
  for (;;) {
    if (auto f = dec.next()) return f;
    ssize_t n = ::read(fd, buf, kReadBuf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    dec.feed({buf, static_cast<size_t>(n)});
  }
}

// Who owns what is copied in: `user` resolved in the root, or root.
std::pair<uid_t, gid_t> owner_of(const std::string& user, int root_fd) {
  if (user.empty()) return {0, 0};
  ResolvedUser u = resolve_user(user, read_small_file(root_fd, "etc/passwd"),
                                read_small_file(root_fd, "etc/group"));
  if (!u.error.empty()) fail("the owner of the copy: " + u.error);
  return {u.uid, u.gid};
}

void refuse(Context& ctx, Channel& ch, const std::string& why) {
  ctx.console.log("copy refused: " + why);
  ch.send_error(why);
  ::shutdown(ch.fd(), SHUT_WR);
}

}  // namespace

void run_put(Context& ctx, Channel& ch, proto::FrameDecoder& dec, const proto::PutRequest& req,
             int root_fd) noexcept {
  CopyTarget t;  // outlives the writer, which borrows its directory (also in the catch below)
  std::unique_ptr<TreeWriter> w;
  try {
    CopySource src;
    src.is_dir = req.flags & proto::PutRequest::kDir;
    src.contents = req.flags & proto::PutRequest::kContents;
    src.stream = req.flags & proto::PutRequest::kStream;
    src.name = req.name;
    t = copy_target(root_fd, RESOLVE_IN_ROOT, req.dest, src);
    TreeWriteOptions o;
    o.top = t.top;
    if (!(req.flags & proto::PutRequest::kArchive)) {
      auto [uid, gid] = owner_of(req.user, root_fd);
      o.owner_uid = uid;
      o.owner_gid = gid;
    }
    w = std::make_unique<TreeWriter>(t.dir.get(), o, req.dest);
    if (!ch.send(proto::Type::Ack)) return;
    proto::TreeReceiver rx(*w);
    auto buf = std::make_unique_for_overwrite<uint8_t[]>(kReadBuf);
    for (;;) {
      auto f = next_frame(ch.fd(), dec, buf.get());
      if (!f || f->type == proto::Type::Error) {  // the host gave up: undo
        w->remove_created();
        return;
      }
      if (rx.feed(*f)) break;
    }
    w->finish();
    proto::CopyDone done{
        .entries = w->stats().entries, .bytes = w->stats().bytes, .skipped = w->stats().skipped};
    ch.send(proto::Type::FileDone, done.encode());
  } catch (const std::exception& e) {
    if (w) w->remove_created();
    refuse(ctx, ch, e.what());
  }
}

void run_get(Context& ctx, Channel& ch, const proto::GetRequest& req, int root_fd) noexcept {
  try {
    int flags = O_PATH;
    if (!(req.flags & proto::GetRequest::kFollowLink)) flags |= O_NOFOLLOW;
    Fd top(open_resolved(root_fd, req.src, flags, RESOLVE_IN_ROOT));
    if (!top) {
      if (errno == ENOENT) fail(req.src + ": no such file or directory in the sandbox");
      throw_errno(req.src);
    }
    auto send = [&](proto::Type type, std::span<const uint8_t> payload) {
      if (!ch.send(type, payload)) throw Error("the host closed the connection");
    };
    WalkOptions wo;
    wo.follow_top = req.flags & proto::GetRequest::kFollowLink;
    walk_tree(top.get(), wo, [&](const TreeEntry& e, int fd) {
      send(proto::Type::FileEntry, proto::encode_entry(e));
      if (fd < 0) return;
      try {
        send_file_data(fd, e.size, proto::kMaxFileChunk, [&](const uint8_t* p, size_t n) {
          send(proto::Type::FileData, {p, n});
        });
      } catch (Error& err) {
        err.add_context(e.name.empty() ? req.src : req.src + "/" + e.name);
        throw;
      }
    });
    send(proto::Type::FileEnd, {});
  } catch (const std::exception& e) {
    refuse(ctx, ch, e.what());
  }
}

}  // namespace space::guest

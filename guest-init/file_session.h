// `space cp` in the guest: the file conversation of the agent protocol (proto/files.h), served on
// its connection's thread with blocking I/O, so a copy that waits on a slow host or a slow disk
// stalls nobody else. Paths are resolved in the exec root (the image's, for a sandbox with one)
// with openat2(RESOLVE_IN_ROOT); copying in, entries are written beneath the destination by a
// TreeWriter (util/tree_writer.h), which never follows a link the guest planted; copying out,
// the tree is read by walk_tree (util/tree_walker.h) and the host checks what it receives.
#pragma once
#include "channel.h"
#include "context.h"
#include "proto/agent.h"
#include "proto/files.h"

namespace space::guest {

// Copy in: checks the destination, answers Ack or Error, writes the tree the host sends, and
// answers FileDone or Error (having removed what it created). `root_fd` is the directory paths
// are resolved in. Never throws.
void run_put(Context& ctx, Channel& ch, proto::FrameDecoder& dec, const proto::PutRequest& req,
             int root_fd) noexcept;

// Copy out: sends the tree at req.src, then FileEnd, or Error at the first failure. Never
// throws.
void run_get(Context& ctx, Channel& ch, const proto::GetRequest& req, int root_fd) noexcept;

}  // namespace space::guest

// Asking a VMM for a snapshot of its paused guest (checkpoint, template build). A jailed VMM
// opens nothing by path, so it is handed the directory to write into and its own pagemap (for a
// memory diff) as descriptors. The directory is a fresh <dest>/.vm that belongs to the jail's uid
// while the VMM writes; once it has answered, the directory is taken back (root's again, so the
// VMM's descriptor of it is useless), its vmstate and memory are checked to be plain files and
// moved into <dest>, and it is removed. Nothing a compromised VMM leaves there (a symlink, another
// file) reaches <dest> or is ever followed.
#pragma once
#include <sys/types.h>

#include <string>

#include "proto/control.h"
#include "store/paths.h"

namespace space::launch {

// Pauses the VMM serving p.control_sock (pid `vmm_pid`, jail uid `uid`, 0 = unjailed) and has it
// write vmstate and memory into `dest` (an existing directory of ours). The VMM stays paused,
// also on failure. Throws with the VMM's message.
proto::control::SnapshotReply take_snapshot(const store::SandboxPaths& p, pid_t vmm_pid, uid_t uid,
                                            const std::string& dest, int timeout_ms);

}  // namespace space::launch

// Staging an OCI bundle's bind mounts: a microVM cannot bind-mount a host directory, so the
// content of each mount that is copied in (oci/spec.h mount_copied_in) is first gathered beneath
// one staging directory on the host, at its destination's path, and the whole stage is then
// copied into the sandbox's disk. The sources are volumes a container may have filled and the
// destinations come from the bundle, so both are hostile input handled as root: every write goes
// through a TreeWriter (util/tree_writer.h), beneath the stage's descriptor only and never through
// a symbolic link, and every read through the descriptor walk of util/tree_walker.h, which never
// follows a link inside a source, so a link swapped in meanwhile is copied as the link it is.
#pragma once
#include <string>

#include "oci/spec.h"

namespace space::oci {

struct StageStats {
  size_t mounts = 0;   // mounts staged
  size_t skipped = 0;  // device nodes, fifos and sockets left out (the guest has its own)
};

// Stages the copied-in mounts of `spec` beneath directory `stage`, which is created (mode 0700)
// and must not exist. A mount whose source is missing is skipped with a warning; one whose
// source is a symbolic link is refused (a bind mount would follow it; a copy made as root must
// not), and so is one whose destination leaves the stage. On any failure the stage is removed
// and the error names the mount. Returns what was staged; with no mount staged the stage is
// removed again.
StageStats stage_mounts(const Spec& spec, const std::string& stage);

}  // namespace space::oci

// The OCI runtime's command line: runc's grammar, for podman, CRI-O, containerd and anything
// else that drives runc. It is a separate grammar from space's own, chosen only explicitly, so
// no ordinary space command line can be taken for it: the binary runs as `space-oci` (a symlink
// or hard link of that name, argv[0]), or `space --oci ...` puts the rest in that grammar.
#pragma once
#include <string>

namespace space::cli {

// Whether this command line is the OCI runtime's: argv[0]'s base name is "space-oci", or the
// first argument is "--oci".
bool oci_invocation(int argc, const char* const* argv);
// Runs it. Errors print as "space-oci: error: ..." on stderr (and as a JSON line to --log, as
// runc writes them for conmon) and exit 1, as runc's do.
int run_oci(int argc, char** argv);

}  // namespace space::cli

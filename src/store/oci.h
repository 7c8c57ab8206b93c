// Reading container images in the two on-disk forms engines write: an OCI image layout
// (oci-layout, index.json, blobs/sha256/<hex>; what `podman save --format oci-archive` and
// `skopeo copy oci-archive:` pack) and a docker archive (manifest.json naming a config file and
// layer tarballs; `docker save`, `podman save`). Either gives an ImagePlan: the layers to apply,
// bottom first, and the config that applies to every exec (Env, Entrypoint, Cmd, WorkingDir,
// User). Every file these documents name is resolved beneath the image directory (digests are
// checked as sha256:<64 hex>, paths as names), and every blob is verified against its digest
// before use. A multi-platform index resolves to one platform (default linux/amd64).
#pragma once
#include <string>
#include <vector>

#include "util/field_list.h"
#include "util/json.h"

namespace space::store {

struct ImageConfig {
  std::vector<std::string> env;  // "KEY=value"
  std::vector<std::string> entrypoint, cmd;
  std::string working_dir;
  std::string user;
  // proto/fields.h: image.json's "config"
  SPACE_FIELDS(env, entrypoint, cmd, working_dir, user);
};

struct ImageLayer {
  std::string path;    // absolute path of the layer tarball (any compression libarchive reads)
  std::string digest;  // sha256:<hex> its file was verified against (docker archives: its
                       // diff_id, since docker saves layers uncompressed)
  std::string media_type;
};

struct ImagePlan {
  std::string kind;    // "oci" or "docker"
  std::string digest;  // sha256:<hex> of the manifest (oci) or of the config (docker)
  std::string platform;
  std::vector<ImageLayer> layers;  // bottom first
  ImageConfig config;
};

// True if `dir` holds an OCI image layout (an oci-layout file).
bool is_oci_layout(const std::string& dir);
// True if `dir` holds a docker archive's contents (a manifest.json file).
bool is_docker_archive(const std::string& dir);

// Reads the OCI image layout in `dir` for `platform` ("os/arch" or "os/arch/variant"); the
// index must name exactly one image for it (or one image in all). Verifies manifest, config and
// layer blobs. Throws space::Error naming the file and the fix.
ImagePlan read_oci_layout(const std::string& dir, const std::string& platform = "linux/amd64");
// Reads the docker archive unpacked in `dir`; it must hold exactly one image. Verifies the
// config against the digest its name carries when it has one.
ImagePlan read_docker_archive(const std::string& dir);

// The parts of an image config (the OCI/docker config JSON's "config" object) space applies.
ImageConfig parse_image_config(const json::Value& config_doc);

// "sha256:<hex>" checked and split: returns the hex part; throws for any other form.
std::string digest_hex(const std::string& digest);

}  // namespace space::store

// OCI image layouts and docker archives; see oci.h.
#include "store/oci.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

#include "store/extract.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/sha256.h"

namespace space::store {
namespace {

constexpr const char* kIndexTypes[] = {"application/vnd.oci.image.index.v1+json",
                                       "application/vnd.docker.distribution.manifest.list.v2+json"};
constexpr const char* kManifestTypes[] = {"application/vnd.oci.image.manifest.v1+json",
                                          "application/vnd.docker.distribution.manifest.v2+json"};
constexpr const char* kLayerTypes[] = {"application/vnd.oci.image.layer.v1.tar",
                                       "application/vnd.oci.image.layer.v1.tar+gzip",
                                       "application/vnd.oci.image.layer.v1.tar+zstd",
                                       "application/vnd.docker.image.rootfs.diff.tar.gzip",
                                       "application/vnd.docker.image.rootfs.diff.tar"};

template <size_t N>
bool one_of(const std::string& s, const char* const (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// `rel` (a name inside the image) resolved beneath `dir`: a regular file, not a link.
std::string file_in(const std::string& dir, const std::string& rel, const std::string& what) {
  std::vector<std::string> c;
  try {
    c = entry_components(rel);
  } catch (const Error& e) {
    fail(what + " '" + rel + "' " + e.what(), "the image is malformed or hostile");
  }
  if (c.empty()) fail(what + " has an empty name", "the image is malformed");
  std::string path = dir;
  for (const auto& part : c) path += "/" + part;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) throw_errno(what + " " + rel + " is missing");
  if (!S_ISREG(st.st_mode)) fail(what + " " + rel + " is not a regular file");
  return path;
}

void verify(const std::string& path, const std::string& hex, const std::string& what) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw_errno("open " + path);
  std::string got = sha256_fd(fd.get());
  if (got != hex)
    fail(what + " does not match its digest (sha256:" + hex + ", content sha256:" + got + ")",
         "the image is corrupt or was tampered with; export it again");
}

std::string blob(const std::string& dir, const std::string& digest, const std::string& what) {
  std::string hex = digest_hex(digest);
  std::string path = file_in(dir, "blobs/sha256/" + hex, what);
  verify(path, hex, what + " " + digest);
  return path;
}

json::Value load(const std::string& path, const std::string& what) {
  return json::load_file(path, what, [](json::Value v) { return v; });
}

const std::string& str(const json::Value& obj, std::string_view key, const std::string& what) {
  const json::Value* v = obj.is_object() ? obj.find(key) : nullptr;
  if (!v || !v->is_string())
    fail(what + ": \"" + std::string(key) + "\" is missing or not a string");
  return v->as_string();
}

std::vector<std::string> strings(const json::Value& obj, std::string_view key) {
  std::vector<std::string> out;
  const json::Value* v = obj.find(key);
  if (!v || v->is_null()) return out;
  if (!v->is_array()) fail("image config: \"" + std::string(key) + "\" is not an array");
  for (const auto& s : v->as_array()) {
    if (!s.is_string()) fail("image config: \"" + std::string(key) + "\" holds a non-string");
    out.push_back(s.as_string());
  }
  return out;
}

std::string platform_of(const json::Value& desc) {
  const json::Value* p = desc.find("platform");
  if (!p || !p->is_object()) return "";
  std::string s = str(*p, "os", "platform") + "/" + str(*p, "architecture", "platform");
  if (const json::Value* v = p->find("variant"); v && v->is_string() && !v->as_string().empty())
    s += "/" + v->as_string();
  return s;
}

bool platform_matches(const std::string& have, const std::string& want) {
  return have == want || (want.find('/', want.find('/') + 1) == std::string::npos &&
                          have.rfind(want + "/", 0) == 0);
}

// Every image manifest descriptor reachable from `index` (nested indexes flattened).
void collect(const std::string& dir, const json::Value& index, const std::string& what, int depth,
             std::vector<json::Value>& out) {
  if (depth > 4) fail(what + ": indexes nested too deeply");
  const json::Value* m = index.find("manifests");
  if (!m || !m->is_array()) fail(what + ": \"manifests\" is missing or not an array");
  for (const auto& d : m->as_array()) {
    const std::string& type = str(d, "mediaType", what);
    if (one_of(type, kIndexTypes))
      collect(dir, load(blob(dir, str(d, "digest", what), "index"), "image index"), what, depth + 1,
              out);
    else if (one_of(type, kManifestTypes))
      out.push_back(d);
    // Anything else (attestations, signatures) is not an image.
  }
}
}  // namespace

std::string digest_hex(const std::string& digest) {
  const std::string prefix = "sha256:";
  bool ok = digest.size() == prefix.size() + 64 && digest.rfind(prefix, 0) == 0 &&
            std::all_of(digest.begin() + 7, digest.end(),
                        [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (!ok) fail("unsupported digest '" + digest + "'", "space reads sha256 digests only");
  return digest.substr(prefix.size());
}

bool is_oci_layout(const std::string& dir) {
  struct stat st;
  return ::lstat((dir + "/oci-layout").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_docker_archive(const std::string& dir) {
  struct stat st;
  return ::lstat((dir + "/manifest.json").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

ImageConfig parse_image_config(const json::Value& doc) {
  ImageConfig c;
  if (!doc.is_object()) fail("image config is not a JSON object");
  const json::Value* cfg = doc.find("config");
  if (!cfg || cfg->is_null()) return c;
  if (!cfg->is_object()) fail("image config: \"config\" is not an object");
  c.env = strings(*cfg, "Env");
  c.entrypoint = strings(*cfg, "Entrypoint");
  c.cmd = strings(*cfg, "Cmd");
  c.working_dir = json::string_field_or(*cfg, "WorkingDir", "");
  c.user = json::string_field_or(*cfg, "User", "");
  return c;
}

ImagePlan read_oci_layout(const std::string& dir, const std::string& platform) {
  const std::string layout = file_in(dir, "oci-layout", "oci-layout");
  if (str(load(layout, "oci-layout"), "imageLayoutVersion", "oci-layout") != "1.0.0")
    fail("unsupported OCI image layout version", "space reads layout version 1.0.0");
  std::vector<json::Value> found;
  collect(dir, load(file_in(dir, "index.json", "index.json"), "image index"), "index.json", 0,
          found);
  std::vector<const json::Value*> match;
  std::string seen;
  for (const auto& d : found) {
    std::string p = platform_of(d);
    seen += (seen.empty() ? "" : ", ") + (p.empty() ? std::string("(no platform)") : p);
    if (platform_matches(p, platform) || (p.empty() && found.size() == 1)) match.push_back(&d);
  }
  if (match.size() != 1)
    fail("the image has " + std::to_string(match.size()) + " manifests for " + platform +
             (seen.empty() ? "" : " (it has: " + seen + ")"),
         match.empty() ? "choose one with --platform"
                       : "the image is ambiguous; re-export one image");
  ImagePlan plan;
  plan.kind = "oci";
  plan.platform = platform;
  plan.digest = str(*match[0], "digest", "index.json");
  json::Value manifest = load(blob(dir, plan.digest, "manifest"), "image manifest");
  const json::Value* cfg = manifest.find("config");
  if (!cfg || !cfg->is_object()) fail("image manifest: \"config\" is missing");
  plan.config = parse_image_config(
      load(blob(dir, str(*cfg, "digest", "manifest config"), "config"), "image config"));
  const json::Value* layers = manifest.find("layers");
  if (!layers || !layers->is_array()) fail("image manifest: \"layers\" is missing");
  for (const auto& l : layers->as_array()) {
    std::string type = str(l, "mediaType", "layer");
    if (!one_of(type, kLayerTypes))
      fail("unsupported layer media type " + type,
           "space applies tar layers (uncompressed, gzip or zstd); foreign layers are not "
           "distributable");
    std::string digest = str(l, "digest", "layer");
    plan.layers.push_back({blob(dir, digest, "layer"), digest, type});
  }
  return plan;
}

ImagePlan read_docker_archive(const std::string& dir) {
  json::Value manifest = load(file_in(dir, "manifest.json", "manifest.json"), "docker manifest");
  if (!manifest.is_array() || manifest.as_array().size() != 1)
    fail("manifest.json must describe exactly one image",
         "save one image per archive (docker save IMAGE)");
  const json::Value& m = manifest.as_array()[0];
  ImagePlan plan;
  plan.kind = "docker";
  plan.platform = "linux/amd64";
  const std::string& cname = str(m, "Config", "manifest.json");
  std::string cpath = file_in(dir, cname, "config");
  // The config's name carries its digest: "<hex>.json" (docker < 25) or "blobs/sha256/<hex>".
  std::string base = cname.substr(cname.rfind('/') + 1);
  if (base.size() > 5 && base.ends_with(".json")) base.resize(base.size() - 5);
  Fd cfd(::open(cpath.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!cfd) throw_errno("open " + cpath);
  std::string chex = sha256_fd(cfd.get());
  if (base.size() == 64 && base != chex)
    fail("config " + cname + " does not match its digest", "the archive is corrupt");
  plan.digest = "sha256:" + chex;
  json::Value config = load(cpath, "image config");
  plan.config = parse_image_config(config);
  // Layers: docker saves them uncompressed, so each one's sha256 is its diff_id in the config.
  const json::Value* rootfs = config.find("rootfs");
  const json::Value* ids = rootfs && rootfs->is_object() ? rootfs->find("diff_ids") : nullptr;
  const json::Value* layers = m.find("Layers");
  if (!layers || !layers->is_array()) fail("manifest.json: \"Layers\" is missing");
  if (!ids || !ids->is_array() || ids->as_array().size() != layers->as_array().size())
    fail("the config's rootfs.diff_ids do not match the manifest's layers",
         "the archive is corrupt");
  for (size_t i = 0; i < layers->as_array().size(); i++) {
    const json::Value& l = layers->as_array()[i];
    if (!l.is_string()) fail("manifest.json: a layer name is not a string");
    const json::Value& id = ids->as_array()[i];
    if (!id.is_string()) fail("config: a diff_id is not a string");
    std::string path = file_in(dir, l.as_string(), "layer");
    verify(path, digest_hex(id.as_string()), "layer " + l.as_string());
    plan.layers.push_back({path, id.as_string(), "application/vnd.docker.image.rootfs.diff.tar"});
  }
  return plan;
}

}  // namespace space::store

// Images in the store: metadata, list, inspect, rm; see image.h. Import is image_import.cpp.
#include "image/image.h"

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "image/staging.h"
#include "store/paths.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/size.h"

namespace space::image {
namespace {

json::Value strings_json(const std::vector<std::string>& v) {
  json::Value a = json::Value::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

std::vector<std::string> strings_of(const json::Value& obj, std::string_view key) {
  std::vector<std::string> out;
  const json::Value* v = obj.find(key);
  if (!v) return out;
  if (!v->is_array()) fail("\"" + std::string(key) + "\" is not an array");
  for (const auto& s : v->as_array()) {
    if (!s.is_string()) fail("\"" + std::string(key) + "\" holds a non-string");
    out.push_back(s.as_string());
  }
  return out;
}

std::string image_dir(const std::string& root, const std::string& name) {
  store::validate_id(name, "image name");
  return store::store_paths(root).images + "/" + name;
}

ImageInfo image_info(const std::string& name, const std::string& dir) {
  ImageInfo i;
  i.name = name;
  try {
    std::string path = dir + "/image.json";
    i.meta = json::load_file(path, "image metadata",
                             [&](const json::Value& v) { return parse_image_meta(v, path); });
  } catch (const Error& e) {
    i.problem = e.what();
  }
  i.used_bytes = allocated_bytes(dir);
  return i;
}

}  // namespace

json::Value image_meta_json(const ImageMeta& m) {
  json::Value v = json::Value::object();
  v.set("format", m.format);
  v.set("name", m.name);
  v.set("created", m.created);
  v.set("source", m.source);
  v.set("kind", m.kind);
  v.set("digest", m.digest);
  v.set("platform", m.platform);
  v.set("disk_bytes", m.disk_bytes);
  json::Value c = json::Value::object();
  c.set("env", strings_json(m.config.env));
  c.set("entrypoint", strings_json(m.config.entrypoint));
  c.set("cmd", strings_json(m.config.cmd));
  c.set("working_dir", m.config.working_dir);
  c.set("user", m.config.user);
  v.set("config", c);
  return v;
}

ImageMeta parse_image_meta(const json::Value& v, const std::string& source) {
  try {
    if (!v.is_object()) fail("not a JSON object");
    ImageMeta m;
    m.format = static_cast<uint32_t>(json::uint_field(v, "format", UINT32_MAX));
    if (m.format > kImageFormat)
      fail("format " + std::to_string(m.format) + " is newer than this space reads (" +
               std::to_string(kImageFormat) + ")",
           "upgrade space, or import the image again");
    m.name = json::string_field(v, "name");
    m.created = json::string_field(v, "created");
    m.source = json::string_field(v, "source");
    m.kind = json::string_field(v, "kind");
    m.digest = json::string_field(v, "digest");
    m.platform = json::string_field(v, "platform");
    m.disk_bytes = json::uint_field(v, "disk_bytes");
    const json::Value* c = v.find("config");
    if (!c || !c->is_object()) fail("\"config\" is missing or not an object");
    m.config.env = strings_of(*c, "env");
    m.config.entrypoint = strings_of(*c, "entrypoint");
    m.config.cmd = strings_of(*c, "cmd");
    m.config.working_dir = json::string_field(*c, "working_dir");
    m.config.user = json::string_field(*c, "user");
    return m;
  } catch (Error& e) {
    e.add_context(source);
    throw;
  }
}

std::vector<ImageInfo> images_in(const std::string& dir) {
  std::vector<ImageInfo> out;
  if (!fs::is_dir(dir)) return out;
  for (const auto& name : fs::list_dir(dir))
    if (!name.empty() && name[0] != '.') out.push_back(image_info(name, dir + "/" + name));
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

std::vector<ImageInfo> list_images(const store::Context& ctx) {
  return images_in(store::ensure_store(ctx, store::StoreUse::Existing).images);
}

std::optional<std::string> find_twin(const std::vector<ImageInfo>& images, const ImageMeta& m) {
  if (m.digest.empty()) return std::nullopt;
  for (const auto& i : images)
    if (i.meta && i.meta->digest == m.digest && i.meta->platform == m.platform &&
        i.meta->disk_bytes == m.disk_bytes)
      return i.name;
  return std::nullopt;
}

ImageInfo inspect_image(const store::Context& ctx, const std::string& name) {
  std::string dir = image_dir(ctx.root, name);
  store::ensure_store(ctx, store::StoreUse::Existing);
  if (!fs::is_dir(dir))
    throw Error(
        "image " + name + " does not exist", ENOENT,
        "'space image list' shows the images; 'space image import " + name + " SOURCE' makes it");
  return image_info(name, dir);
}

json::Value image_info_json(const ImageInfo& i) {
  json::Value v = i.meta ? image_meta_json(*i.meta) : json::Value::object();
  v.set("name", i.name);
  if (!i.problem.empty()) v.set("error", i.problem);
  v.set("used_bytes", i.used_bytes);
  return v;
}

void remove_image(const store::Context& ctx, const std::string& name) {
  std::string dir = image_dir(ctx.root, name);
  store::ensure_store(ctx, store::StoreUse::Existing);
  if (!fs::is_dir(dir))
    throw Error("image " + name + " does not exist", ENOENT, "'space image list' shows the images");
  try {
    store::remove_store_tree(dir);
  } catch (Error& e) {
    e.add_context("remove image " + name);
    throw;
  }
}

uint64_t parse_disk_size(const std::string& s) {
  uint64_t bytes = parse_size(s);
  if (bytes < (64ULL << 20)) fail("size " + s + " is below 64 MiB", "give at least 64M");
  return bytes;
}

}  // namespace space::image

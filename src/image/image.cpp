// Images in the store: metadata, list, inspect, rm; see image.h. Import is image_import.cpp.
#include "image/image.h"

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "image/staging.h"
#include "proto/fields.h"
#include "store/paths.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/size.h"

namespace space::image {
namespace {

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

void ImageMeta::check() const {
  if (format > kImageFormat)
    fail("format " + std::to_string(format) + " is newer than this space reads (" +
             std::to_string(kImageFormat) + ")",
         "upgrade space, or import the image again");
}

json::Value image_meta_json(const ImageMeta& m) {
  return proto::fields_json(m);
}

ImageMeta parse_image_meta(const json::Value& v, const std::string& source) {
  try {
    ImageMeta m;
    if (v.is_object()) {  // a newer format first: its other fields may differ
      m.format = static_cast<uint32_t>(json::uint_field(v, "format", UINT32_MAX));
      m.check();
    }
    proto::fields_from_json(v, m);
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
  std::string dir = store::image_dir(ctx.root, name);
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
  std::string dir = store::image_dir(ctx.root, name);
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

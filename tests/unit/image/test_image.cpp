// Unit tests for image/image: image.json round trip, disk sizes, and which stored image a new one
// shares its disk with (same digest, platform and size; never on an empty digest or an
// unreadable image.json), over plain directories (no btrfs needed).
#include <doctest/doctest.h>

#include <string>

#include "image/image.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

using namespace space;

namespace {
image::ImageMeta meta(const std::string& name, const std::string& digest,
                      const std::string& platform = "linux/amd64", uint64_t bytes = 4ULL << 30) {
  image::ImageMeta m;
  m.name = name;
  m.created = "2026-01-02T03:04:05Z";
  m.source = "/src/" + name;
  m.kind = "oci";
  m.digest = digest;
  m.platform = platform;
  m.disk_bytes = bytes;
  m.config.env = {"PATH=/bin"};
  m.config.cmd = {"sh"};
  return m;
}

void store_image(const std::string& images, const image::ImageMeta& m) {
  fs::mkdir_p(images + "/" + m.name);
  json::save_file(images + "/" + m.name + "/image.json", image::image_meta_json(m), 0644);
}
}  // namespace

TEST_CASE("image.json round trip") {
  auto m = meta("deb", "", "linux/amd64", 8ULL << 30);
  m.kind = "debian";
  m.source = "debian:bookworm";
  auto back = image::parse_image_meta(image::image_meta_json(m), "image.json");
  CHECK(back.kind == "debian");
  CHECK(back.source == "debian:bookworm");
  CHECK(back.disk_bytes == (8ULL << 30));
  CHECK(back.config.cmd == std::vector<std::string>{"sh"});
}

TEST_CASE("disk sizes") {
  CHECK(image::parse_disk_size("4G") == (4ULL << 30));
  CHECK(image::parse_disk_size("64M") == (64ULL << 20));
  CHECK_THROWS_AS(image::parse_disk_size("63M"), Error);
  CHECK_THROWS_AS(image::parse_disk_size("lots"), Error);
}

TEST_CASE("a twin has the same digest, platform and disk size") {
  test::TempDir d("image");
  const std::string images = d.path + "/images";
  store_image(images, meta("a", "sha256:aaaa"));
  store_image(images, meta("b", "sha256:bbbb"));
  store_image(images, meta("b-arm", "sha256:bbbb", "linux/arm64"));
  store_image(images, meta("b-8g", "sha256:bbbb", "linux/amd64", 8ULL << 30));
  store_image(images, meta("dir", ""));
  fs::mkdir_p(images + "/broken");
  fs::write_file_atomic(images + "/broken/image.json", "{not json");
  fs::mkdir_p(images + "/.c.tmp-12345678");  // a build in progress is not an image

  auto all = image::images_in(images);
  REQUIRE(all.size() == 6);
  CHECK(all.front().name == "a");
  CHECK(image::find_twin(all, meta("new", "sha256:bbbb")) == "b");
  CHECK(image::find_twin(all, meta("new", "sha256:bbbb", "linux/arm64")) == "b-arm");
  CHECK(image::find_twin(all, meta("new", "sha256:bbbb", "linux/amd64", 8ULL << 30)) == "b-8g");
  CHECK(!image::find_twin(all, meta("new", "sha256:bbbb", "linux/amd64", 2ULL << 30)));
  CHECK(!image::find_twin(all, meta("new", "sha256:cccc")));
  CHECK(!image::find_twin(all, meta("new", "")));  // a directory or a Debian build: no digest
  CHECK(image::find_twin(all, meta("a", "sha256:aaaa")) == "a");  // --force with the same content
  CHECK(image::images_in(d.path + "/none").empty());
}

// Unit tests for reading OCI image layouts and docker archives: layers in order, config fields,
// platform selection through nested indexes, and refusals (digest mismatch, unsupported media
// type, malformed digests, links in place of blobs, several images in one archive).
#include <doctest/doctest.h>
#include <unistd.h>

#include "store/oci.h"
#include "support/tar_writer.h"
#include "support/temp_dir.h"
#include "util/fs.h"
#include "util/sha256.h"

using namespace space;

namespace {
std::string hex_of(const std::string& s) {
  Sha256 h;
  h.update(s);
  return h.hex();
}

struct Layout {
  test::TempDir d{"oci"};
  Layout() {
    fs::mkdir_p(d.path + "/blobs/sha256");
    fs::write_file_atomic(d.path + "/oci-layout", R"({"imageLayoutVersion": "1.0.0"})");
  }
  std::string put(const std::string& content) {
    std::string hex = hex_of(content);
    fs::write_file_atomic(d.path + "/blobs/sha256/" + hex, content);
    return "sha256:" + hex;
  }
  std::string layer(const std::string& file_name) {
    std::string tmp = d.path + "/tmp.tar";
    test::write_tar(tmp, {{.name = file_name, .data = "data of " + file_name}});
    std::string digest = put(fs::read_file(tmp));
    ::unlink(tmp.c_str());
    return digest;
  }
  std::string manifest(const std::vector<std::string>& layers,
                       const std::string& type = "application/vnd.oci.image.layer.v1.tar") {
    std::string cfg = put(
        R"({"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/bin","A=1"],)"
        R"("Entrypoint":["/bin/sh","-c"],"Cmd":["echo hi"],"WorkingDir":"/work","User":"app"}})");
    std::string m =
        R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
        R"("config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" +
        cfg + R"(","size":1},"layers":[)";
    for (size_t i = 0; i < layers.size(); i++)
      m += (i ? "," : "") + std::string(R"({"mediaType":")") + type + R"(","digest":")" +
           layers[i] + R"(","size":1})";
    return put(m + "]}");
  }
  static std::string desc(const std::string& digest, const std::string& platform = "",
                          const std::string& type = "application/vnd.oci.image.manifest.v1+json") {
    std::string d = R"({"mediaType":")" + type + R"(","digest":")" + digest + R"(","size":1)";
    if (!platform.empty()) {
      auto slash = platform.find('/');
      d += R"(,"platform":{"os":")" + platform.substr(0, slash) + R"(","architecture":")" +
           platform.substr(slash + 1) + R"("})";
    }
    return d + "}";
  }
  void index(const std::vector<std::string>& descs) {
    std::string s = R"({"schemaVersion":2,"manifests":[)";
    for (size_t i = 0; i < descs.size(); i++) s += (i ? "," : "") + descs[i];
    fs::write_file_atomic(d.path + "/index.json", s + "]}");
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what() + std::string(" / ") + e.hint();
  }
  return "";
}
}  // namespace

TEST_CASE("oci: a single-manifest layout gives its layers bottom first and its config") {
  Layout l;
  std::string a = l.layer("a"), b = l.layer("b");
  std::string m = l.manifest({a, b});
  l.index({Layout::desc(m)});
  REQUIRE(store::is_oci_layout(l.d.path));
  auto plan = store::read_oci_layout(l.d.path);
  CHECK(plan.kind == "oci");
  CHECK(plan.digest == m);
  REQUIRE(plan.layers.size() == 2);
  CHECK(plan.layers[0].digest == a);
  CHECK(plan.layers[1].path == l.d.path + "/blobs/sha256/" + store::digest_hex(b));
  CHECK(plan.config.env == std::vector<std::string>{"PATH=/usr/bin", "A=1"});
  CHECK(plan.config.entrypoint == std::vector<std::string>{"/bin/sh", "-c"});
  CHECK(plan.config.cmd == std::vector<std::string>{"echo hi"});
  CHECK(plan.config.working_dir == "/work");
  CHECK(plan.config.user == "app");
}

TEST_CASE("oci: platforms are chosen through nested indexes; a missing one names the others") {
  Layout l;
  std::string amd = l.manifest({l.layer("amd")});
  std::string arm = l.manifest({l.layer("arm")});
  std::string inner =
      l.put(R"({"schemaVersion":2,"manifests":[)" + Layout::desc(amd, "linux/amd64") + "," +
            Layout::desc(arm, "linux/arm64") + "]}");
  l.index({Layout::desc(inner, "", "application/vnd.oci.image.index.v1+json")});
  CHECK(store::read_oci_layout(l.d.path).digest == amd);
  CHECK(store::read_oci_layout(l.d.path, "linux/arm64").digest == arm);
  auto err = error_of([&] { store::read_oci_layout(l.d.path, "linux/s390x"); });
  CHECK(err.find("linux/amd64, linux/arm64") != std::string::npos);
  CHECK(err.find("--platform") != std::string::npos);
}

TEST_CASE("oci: tampered blobs, foreign media types, bad digests and links are refused") {
  Layout l;
  std::string a = l.layer("a");
  l.index({Layout::desc(l.manifest({a}))});
  fs::write_file_atomic(l.d.path + "/blobs/sha256/" + store::digest_hex(a), "tampered");
  CHECK(error_of([&] { store::read_oci_layout(l.d.path); }).find("does not match its digest") !=
        std::string::npos);

  Layout f;
  f.index({Layout::desc(
      f.manifest({f.layer("x")}, "application/vnd.oci.image.layer.nondistributable.v1.tar"))});
  CHECK(error_of([&] {
          store::read_oci_layout(f.d.path);
        }).find("unsupported layer media type application/vnd.oci.image.layer.nondistributable") !=
        std::string::npos);

  Layout b;
  b.index({Layout::desc("sha256:../../../etc/passwd")});
  CHECK(error_of([&] { store::read_oci_layout(b.d.path); }).find("unsupported digest") !=
        std::string::npos);
  CHECK_THROWS_AS(store::digest_hex("sha512:" + std::string(64, 'a')), Error);
  CHECK_THROWS_AS(store::digest_hex("sha256:" + std::string(64, 'A')), Error);

  Layout s;
  std::string m = s.manifest({s.layer("y")});
  s.index({Layout::desc(m)});
  std::string path = s.d.path + "/blobs/sha256/" + store::digest_hex(m);
  fs::write_file_atomic(s.d.path + "/real", fs::read_file(path));
  ::unlink(path.c_str());
  REQUIRE(::symlink((s.d.path + "/real").c_str(), path.c_str()) == 0);
  CHECK(error_of([&] { store::read_oci_layout(s.d.path); }).find("not a regular file") !=
        std::string::npos);
}

TEST_CASE("oci: docker archives are verified against the config's diff_ids") {
  test::TempDir d("docker");
  fs::mkdir_p(d.path + "/abc");
  test::write_tar(d.path + "/abc/layer.tar", {{.name = "etc/os-release", .data = "ID=test\n"}});
  std::string layer_hex = hex_of(fs::read_file(d.path + "/abc/layer.tar"));
  std::string config =
      R"({"config":{"Cmd":["/bin/sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:)" +
      layer_hex + R"("]}})";
  std::string chex = hex_of(config);
  fs::write_file_atomic(d.path + "/" + chex + ".json", config);
  fs::write_file_atomic(
      d.path + "/manifest.json",
      R"([{"Config":")" + chex + R"(.json","RepoTags":["t:1"],"Layers":["abc/layer.tar"]}])");
  REQUIRE(store::is_docker_archive(d.path));
  auto plan = store::read_docker_archive(d.path);
  CHECK(plan.kind == "docker");
  CHECK(plan.digest == "sha256:" + chex);
  REQUIRE(plan.layers.size() == 1);
  CHECK(plan.layers[0].digest == "sha256:" + layer_hex);
  CHECK(plan.config.cmd == std::vector<std::string>{"/bin/sh"});

  fs::write_file_atomic(d.path + "/abc/layer.tar", "tampered");
  CHECK(error_of([&] { store::read_docker_archive(d.path); }).find("does not match") !=
        std::string::npos);
  fs::write_file_atomic(d.path + "/manifest.json", "[{},{}]");
  CHECK(error_of([&] { store::read_docker_archive(d.path); }).find("exactly one image") !=
        std::string::npos);
  fs::write_file_atomic(d.path + "/manifest.json", R"([{"Config":"../x.json","Layers":[]}])");
  CHECK(error_of([&] { store::read_docker_archive(d.path); }).find("'..'") != std::string::npos);
}

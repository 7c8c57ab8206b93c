// Sandbox path layout and id rules; see paths.h.
#include "store/paths.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "util/error.h"
#include "util/fs.h"

namespace space::store {

StorePaths store_paths(const std::string& root) {
  StorePaths sp;
  sp.root = fs::absolute(root);
  while (sp.root.size() > 1 && sp.root.back() == '/') sp.root.pop_back();
  std::string base = sp.root == "/" ? "" : sp.root;
  sp.dir = base + "/store";
  sp.image = base + "/store.img";
  sp.templates = sp.dir + "/templates";
  sp.sandboxes = sp.dir + "/sandboxes";
  sp.images = sp.dir + "/images";
  sp.pool = sp.dir + "/pool";
  return sp;
}

std::string sandboxes_dir(const std::string& root) {
  return store_paths(root).sandboxes;
}

std::string run_base() {
  const char* env = std::getenv("SPACE_RUN_DIR");
  std::string base = env && *env ? fs::absolute(env) : "/run/space";
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base;
}

SandboxPaths sandbox_paths(const std::string& root, const std::string& id) {
  std::string run_dir = sandbox_run_dir(id);  // validates the id
  return paths_in(sandboxes_dir(root) + "/" + id, run_dir);
}

std::string sandbox_run_dir(const std::string& id) {
  validate_id(id);
  return run_base() + "/" + id;
}

std::string sandbox_entry(const std::string& dir, const std::string& id, std::string_view suffix) {
  validate_id(id);
  return dir + "/" + id + std::string(suffix);
}

std::string template_dir(const std::string& root, const std::string& name) {
  validate_id(name, "template name");
  return store_paths(root).templates + "/" + name;
}

std::string image_dir(const std::string& root, const std::string& name) {
  validate_id(name, "image name");
  return store_paths(root).images + "/" + name;
}

std::string template_pool_dir(const std::string& root, const std::string& template_name) {
  validate_id(template_name, "template name");
  return store_paths(root).pool + "/" + template_name;
}

SandboxPaths pool_member_paths(const std::string& root, const std::string& template_name,
                               const std::string& member) {
  validate_id(member, "pool member");
  return paths_in(template_pool_dir(root, template_name) + "/" + member,
                  run_base() + "/.pool-" + member);
}

void remove_run_aliases(const std::string& id) {
  const std::string base = run_base();
  for (const auto& name : fs::list_dir(base)) {
    if (name.rfind(".pool-", 0) != 0) continue;
    const std::string path = base + "/" + name;
    char target[256];
    ssize_t n = ::readlink(path.c_str(), target, sizeof target);
    if (n <= 0 || std::string(target, size_t(n)) != id) continue;  // a member's own directory
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_errno("unlink " + path);
  }
}

SandboxPaths paths_in(const std::string& dir, const std::string& run_dir) {
  SandboxPaths p;
  p.dir = dir;
  p.state = p.dir + "/state.json";
  p.config = p.dir + "/config.json";
  p.rootfs = p.dir + "/rootfs.ext4";
  p.image_disk = p.dir + "/image.ext4";
  p.image_meta = p.dir + "/image.json";
  p.console_log = p.dir + "/console.log";
  p.vmm_log = p.dir + "/vmm.log";
  p.lock = p.dir + "/lock";
  p.activity = p.dir + "/activity";
  p.run_dir = run_dir;
  p.control_sock = p.run_dir + "/control.sock";
  p.vsock_sock = p.run_dir + "/vsock.sock";
  return p;
}

void validate_id(const std::string& id, const std::string& what) {
  auto lead = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  auto rest = [&](char c) { return lead(c) || c == '_' || c == '.' || c == '-'; };
  bool ok = !id.empty() && id.size() <= 64 && lead(id[0]);
  for (size_t i = 1; ok && i < id.size(); i++) ok = rest(id[i]);
  if (!ok) {
    std::string shown = id.size() > 80 ? id.substr(0, 80) + "..." : id;
    fail("invalid " + what + " \"" + shown + "\"",
         "use 1-64 characters: a lowercase letter or digit, then lowercase letters, digits, "
         "'_', '.' or '-'");
  }
}

std::string generate_id() {
  unsigned char b[6];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("getrandom");
    }
    got += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (unsigned char c : b) {
    id += hex[c >> 4];
    id += hex[c & 0xF];
  }
  return id;
}

}  // namespace space::store

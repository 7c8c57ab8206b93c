// A sandbox's network namespace for its connections; see netns.h.
#include "egress/netns.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

#include "store/paths.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"

namespace space::egress {
namespace {

// An open network namespace file; throws unless `path` is one.
Fd open_netns(const std::string& path) {
  if (path.empty() || path[0] != '/')
    fail("network namespace \"" + path + "\" is not an absolute path");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open network namespace " + path);
  int type = ::ioctl(fd.get(), NS_GET_NSTYPE);
  if (type < 0) throw_errno(path + " is not a namespace file");
  if (type != CLONE_NEWNET) fail(path + " is a namespace, but not a network namespace");
  return fd;
}

}  // namespace

std::string netns_file(const EgressPaths& p, const std::string& id) {
  return store::sandbox_entry(p.dir + "/netns", id);
}

void save_netns(const EgressPaths& p, const std::string& id, const std::string& path) {
  open_netns(path);
  make_egress_dirs(p);
  fs::mkdir_p(p.dir + "/netns", 0700);
  fs::write_file_atomic(netns_file(p, id), path + "\n", 0600);
}

std::optional<std::string> load_netns(const EgressPaths& p, const std::string& id) {
  std::string f = netns_file(p, id);
  if (!fs::exists(f)) return std::nullopt;
  std::string path = fs::read_file(f, 4096);
  while (!path.empty() && path.back() == '\n') path.pop_back();
  return path;
}

bool remove_netns(const EgressPaths& p, const std::string& id) {
  std::string f = netns_file(p, id);
  if (::unlink(f.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  throw_errno("remove " + f);
}

void enter_netns(const std::string& path) {
  Fd fd = open_netns(path);
  if (::setns(fd.get(), CLONE_NEWNET) != 0) throw_errno("enter network namespace " + path);
}

}  // namespace space::egress

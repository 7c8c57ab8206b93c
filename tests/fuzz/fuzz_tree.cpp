// libFuzzer harness for the receiving side of `space cp` and image layers: arbitrary bytes are
// read as agent frames (FrameDecoder) and fed through TreeReceiver into a TreeWriter rooted at a
// scratch directory that holds planted symbolic links (to its parent and to /), beside a canary.
// Whatever the stream, the writer may only create files beneath the root: after every input the
// canary must be intact and the scratch directory must hold nothing but the root and the canary,
// or the harness aborts. The first input byte picks the writer's options (top name, whiteouts,
// owner override), so each path through the writer is reached. ASan and UBSan catch the rest.
// ctest runs it for a fixed number of inputs from the seeds in tests/fuzz/corpus/tree.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "proto/agent.h"
#include "proto/files.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/tree_writer.h"

using namespace space;

namespace {

// The scratch directory: "canary" and "root", made once per process.
std::string scratch() {
  static const std::string* dir = new std::string([] {  // never destroyed: atexit still reads it
    char tmpl[] = "/tmp/space-fuzz-tree-XXXXXX";
    if (!::mkdtemp(tmpl)) std::abort();
    std::string d = tmpl;
    FILE* f = std::fopen((d + "/canary").c_str(), "w");
    if (!f) std::abort();
    std::fputs("canary", f);
    std::fclose(f);
    std::atexit([] {  // the scratch directory goes with the process
      try {
        fs::remove_tree(scratch());
      } catch (const Error&) {
      }
    });
    return d;
  }());
  return *dir;
}

void check_outside(const std::string& dir) {
  auto names = fs::list_dir(dir);
  if (names.size() != 2) {
    std::fprintf(stderr, "fuzz_tree: %zu entries beside the root\n", names.size());
    std::abort();
  }
  char buf[16] = {};
  FILE* f = std::fopen((dir + "/canary").c_str(), "r");
  if (!f || std::fread(buf, 1, sizeof buf - 1, f) != 6 || std::string(buf) != "canary") {
    std::fprintf(stderr, "fuzz_tree: the canary changed\n");
    std::abort();
  }
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string dir = scratch(), root = dir + "/root";
  try {
    fs::remove_tree(root);
  } catch (const Error&) {
  }
  if (::mkdir(root.c_str(), 0755) != 0) std::abort();
  if (::symlink("..", (root + "/up").c_str()) != 0) std::abort();  // planted by "the guest"
  if (::symlink("/", (root + "/abs").c_str()) != 0) std::abort();
  Fd rfd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  TreeWriteOptions o;
  o.top = (data[0] & 1) ? "t" : "";
  o.whiteouts = data[0] & 2;
  o.devices = false;
  o.skip_devices = true;
  o.keep_setid = data[0] & 4;
  if (data[0] & 8) o.owner_uid = o.owner_gid = 4321;
  o.max_bytes = (data[0] & 16) ? 4096 : 0;
  {
    TreeWriter w(rfd.get(), o, "fuzz");
    proto::TreeReceiver rx(w);
    try {
      proto::FrameDecoder dec;
      dec.feed({data + 1, size - 1});
      while (auto f = dec.next())
        if (rx.feed(*f)) {
          w.finish();
          break;
        }
    } catch (const proto::ProtoError&) {
      if (data[0] & 32) w.remove_created();
    } catch (const Error&) {
      if (data[0] & 32) w.remove_created();
    }
  }
  check_outside(dir);
  return 0;
}

// Children and threads from /proc; see process_tree.h.
#include "util/process_tree.h"

#include <string>

#include "util/error.h"
#include "util/fs.h"

namespace space::proc {

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out;
  try {
    for (const auto& t : fs::list_dir("/proc/" + std::to_string(pid) + "/task"))
      out.push_back(static_cast<pid_t>(std::stol(t)));
  } catch (const std::exception&) {  // gone, or a name that is no number
  }
  return out;
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  for (pid_t tid : threads_of(pid)) {
    std::string text;
    try {
      text = fs::read_file(
          "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/children", 1 << 16);
    } catch (const Error&) {
      continue;
    }
    size_t i = 0;
    while (i < text.size()) {
      size_t j = text.find(' ', i);
      if (j == std::string::npos) j = text.size();
      if (j > i) out.push_back(static_cast<pid_t>(std::stol(text.substr(i, j - i))));
      i = j + 1;
    }
  }
  return out;
}

}  // namespace space::proc

// The entry name rules of util/tree.h: what a stream of tree entries may call an entry, shared by
// every end that reads one (the protocol's decoder, TreeWriter, ArchiveWriter).
#include "util/tree.h"

#include <climits>

#include "util/error.h"

namespace space {

std::vector<std::string> entry_components(std::string_view name) {
  if (name.find('\0') != std::string_view::npos) fail("has a NUL byte in its name");
  if (!name.empty() && name.front() == '/') fail("has an absolute name");
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= name.size()) {
    size_t j = name.find('/', i);
    if (j == std::string_view::npos) j = name.size();
    std::string_view part = name.substr(i, j - i);
    if (part == "..") fail("has a '..' component");
    if (part.size() > NAME_MAX) fail("has a component longer than " + std::to_string(NAME_MAX));
    if (!part.empty() && part != ".") out.emplace_back(part);
    i = j + 1;
  }
  return out;
}

std::string join_components(const std::vector<std::string>& c, size_t n) {
  std::string s;
  for (size_t i = 0; i < c.size() && i < n; i++) s += (i ? "/" : "") + c[i];
  return s;
}

}  // namespace space

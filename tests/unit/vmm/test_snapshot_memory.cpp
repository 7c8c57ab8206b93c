// Unit tests for vmm/snapshot_memory: the sparse memory file (holes for zero pages, exact
// content, size checks), the pagemap that tells which pages of a private file mapping were
// written, the memory diff against a base file, and the zero-page test.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "memory/guest_memory.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/fs.h"
#include "vmm/snapshot_memory.h"

using namespace space;
using namespace space::memory;
using namespace space::vmm;
using namespace space::vmm::snapshot;

namespace {
// A memory file opened as the VMM opens it, then checked to be `size` bytes.
Fd open_memory(const std::string& path, uint64_t size) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  REQUIRE(fd);
  check_memory_file(fd.get(), path, size);
  return fd;
}
}  // namespace

TEST_CASE("memory file: sparse, exact, size-checked") {
  test::TempDir d("snap");
  const uint64_t size = 64 * 4096;
  memory::GuestMemory mem = memory::GuestMemory::anonymous(size);
  uint8_t one = 1;
  REQUIRE(mem.write(0, &one, 1));
  REQUIRE(mem.write(5 * 4096 + 4095, &one, 1));  // last byte of page 5
  for (uint64_t pg = 10; pg < 13; pg++) REQUIRE(mem.write(pg * 4096 + 100, &one, 1));
  REQUIRE(mem.write(size - 1, &one, 1));

  std::string p = d.path + "/memory";
  auto stats = write_memory_file(p, {mem.host_base(), mem.size()});
  CHECK(stats.size == size);
  CHECK(stats.data_bytes == 6 * 4096);
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == size);
  CHECK(static_cast<uint64_t>(st.st_blocks) * 512 < size / 2);  // holes where pages were zero

  Fd fd = open_memory(p, size);
  memory::GuestMemory back = memory::GuestMemory::from_file(fd.get(), size);
  CHECK(std::memcmp(back.host_base(), mem.host_base(), size) == 0);
  // A file of another size, or no regular file, is refused, naming the size the guest had.
  const std::string wrong_size = "not a regular file of " + std::to_string(size * 2) + " bytes";
  CHECK_THROWS_WITH_AS(check_memory_file(fd.get(), p, size * 2),
                       doctest::Contains(wrong_size.c_str()), Error);
  Fd dir_fd(::open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  CHECK_THROWS_AS(check_memory_file(dir_fd.get(), d.path, size), Error);
  // No temp files left behind.
  CHECK(fs::list_dir(d.path).size() == 1);
}

TEST_CASE("memory diff: pagemap tells written pages of a private file mapping") {
  test::TempDir d("snap");
  const uint64_t size = 16 * 4096;
  std::string base = d.path + "/base";
  {
    std::vector<uint8_t> bytes(size, 0x5a);
    fs::write_file_atomic(base, std::string(bytes.begin(), bytes.end()), 0600);
  }
  Fd fd = open_memory(base, size);
  memory::GuestMemory mem = memory::GuestMemory::from_file(fd.get(), size);
  volatile uint8_t sink = mem.host_base()[1 * 4096];  // read: stays a file page
  (void)sink;
  uint8_t two = 2;
  REQUIRE(mem.write(3 * 4096 + 7, &two, 1));  // written: anonymous now
  std::vector<uint8_t> zero(4096, 0);
  REQUIRE(mem.write(9 * 4096, zero.data(), zero.size()));  // written with zeros
  auto map = read_pagemap({mem.host_base(), mem.size()});
  REQUIRE(map.size() == 16);
  for (size_t i = 0; i < map.size(); i++) CHECK(page_written(map[i]) == (i == 3 || i == 9));

  // The diff (or, where the filesystem cannot reflink, the whole file) reads back as RAM does.
  bool diff = true;
  auto st = write_memory_diff(fs::file_at(d.path + "/memory"), {mem.host_base(), mem.size()},
                              memory_base_of(fd.get(), base), -1, &diff);
  CHECK(st.size == size);
  if (diff) CHECK(st.data_bytes == 4096);  // page 3; page 9 became a hole
  Fd back_fd = open_memory(d.path + "/memory", size);
  memory::GuestMemory back = memory::GuestMemory::from_file(back_fd.get(), size);
  CHECK(std::memcmp(back.host_base(), mem.host_base(), size) == 0);

  // Through a directory descriptor and a pagemap descriptor, as a jailed VMM writes it: the same.
  Fd dir(::open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  REQUIRE(dir);
  REQUIRE(pagemap);
  st = write_memory_diff({dir.get(), "memory3", "memory3"}, {mem.host_base(), mem.size()},
                         memory_base_of(fd.get(), base), pagemap.get(), &diff);
  Fd back3_fd = open_memory(d.path + "/memory3", size);
  memory::GuestMemory back3 = memory::GuestMemory::from_file(back3_fd.get(), size);
  CHECK(std::memcmp(back3.host_base(), mem.host_base(), size) == 0);
  if (diff) CHECK(st.data_bytes == 4096);

  // A base that is not open, or a pagemap that cannot be read, is no base: written in full.
  MemoryBase closed = memory_base_of(-1, base);
  write_memory_diff(fs::file_at(d.path + "/memory2"), {mem.host_base(), mem.size()}, closed, -1,
                    &diff);
  CHECK_FALSE(diff);
  write_memory_diff(fs::file_at(d.path + "/memory4"), {mem.host_base(), mem.size()},
                    memory_base_of(fd.get(), base), dir.get(), &diff);  // not a pagemap
  CHECK_FALSE(diff);
  Fd back2_fd = open_memory(d.path + "/memory2", size);
  memory::GuestMemory back2 = memory::GuestMemory::from_file(back2_fd.get(), size);
  CHECK(std::memcmp(back2.host_base(), mem.host_base(), size) == 0);
}

TEST_CASE("memory file: zero-page test") {
  std::vector<uint8_t> page(4096, 0);
  CHECK(page_is_zero(page.data()));
  page[4095] = 1;
  CHECK_FALSE(page_is_zero(page.data()));
  page[4095] = 0;
  page[3] = 1;
  CHECK_FALSE(page_is_zero(page.data()));
}

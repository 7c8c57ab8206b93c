// vmstate encoding and validation; see snapshot.h.
#include "vmm/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string_view>

#include "memory/guest_memory.h"
#include "util/crc32.h"
#include "util/error.h"
#include "util/fd.h"
#include "util/field_list.h"
#include "util/fs.h"

namespace space::vmm::snapshot {
namespace {

constexpr uint32_t kMaxSections = 1024;
constexpr size_t kMaxFileBytes = 64u << 20;

[[noreturn]] void bad(const std::string& origin, const std::string& what) {
  throw Error("snapshot " + origin + ": " + what, 0, rebuild_hint());
}

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  std::memcpy(b.data() + at, &v, 4);
}
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  std::memcpy(b.data() + at, &v, 8);
}

std::string vcpu_section(size_t i) {
  return "vcpu/" + std::to_string(i);
}
std::string device_section(const std::string& n) {
  return "device/" + n;
}

// Section `name` decoded as a T (its field list), which must take its body entirely.
template <class T>
T parse_section(const std::map<std::string, std::span<const uint8_t>>& sections,
                const std::string& name, const std::string& origin) {
  auto it = sections.find(name);
  if (it == sections.end()) bad(origin, "section '" + name + "' is missing");
  try {
    return proto::decode_fields<T>(it->second);
  } catch (const proto::ProtoError& e) {
    bad(origin, "section '" + name + "' is malformed: " + e.what());
  }
}

// A device's section: its Device::save() bytes, length-prefixed.
struct DeviceBody {
  std::vector<uint8_t> data;
  SPACE_FIELDS(data);
};

}  // namespace

void MachineInfo::check() const {
  if (vcpus < 1 || vcpus > kMaxVcpus)
    throw proto::ProtoError("bad vCPU count " + std::to_string(vcpus));
  if (memory_bytes == 0 || memory_bytes % 4096 != 0 ||
      memory_bytes > memory::GuestMemory::kMaxBytes)
    throw proto::ProtoError("bad memory size " + std::to_string(memory_bytes));
  for (size_t i = 0; i < devices.size(); i++) {
    if (devices[i].empty() || devices[i].size() > kMaxName)
      throw proto::ProtoError("bad device name");
    for (size_t j = 0; j < i; j++)
      if (devices[j] == devices[i])
        throw proto::ProtoError("device '" + devices[i] + "' listed twice");
  }
}

const char* rebuild_hint() {
  return "the snapshot is damaged or was written by another version of space; rebuild the template";
}

std::vector<uint8_t> encode(const Snapshot& s) {
  std::vector<std::pair<std::string, proto::Writer>> sections;
  auto add = [&sections](std::string name) -> proto::Writer& {
    return sections.emplace_back(std::move(name), proto::Writer{}).second;
  };
  proto::put_fields(add("machine"), s.machine);
  proto::put_fields(add("cpu"), s.cpu);
  for (size_t i = 0; i < s.vcpus.size(); i++) proto::put_fields(add(vcpu_section(i)), s.vcpus[i]);
  proto::put_fields(add("vm"), s.vm);
  for (const auto& d : s.devices) add(device_section(d.name)).bytes(d.data);

  proto::Writer p;
  p.u32(static_cast<uint32_t>(sections.size()));
  for (auto& [name, body] : sections) {
    p.str(name);
    p.bytes(body.buffer());
  }
  const auto& payload = p.buffer();
  std::vector<uint8_t> out(kHeaderSize + payload.size());
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_u32(out, 8, kFormatVersion);
  put_u32(out, 12, 0);
  put_u64(out, 16, payload.size());
  put_u32(out, 24, crc32(payload));
  std::memcpy(out.data() + kHeaderSize, payload.data(), payload.size());
  return out;
}

Snapshot decode(std::span<const uint8_t> image, const std::string& origin) {
  if (image.size() < kHeaderSize)
    bad(origin, "truncated (" + std::to_string(image.size()) + " bytes, shorter than the header)");
  if (std::memcmp(image.data(), kMagic, sizeof kMagic) != 0)
    bad(origin, "not a space snapshot (bad magic)");
  uint32_t version, flags, crc;
  uint64_t len;
  std::memcpy(&version, image.data() + 8, 4);
  std::memcpy(&flags, image.data() + 12, 4);
  std::memcpy(&len, image.data() + 16, 8);
  std::memcpy(&crc, image.data() + 24, 4);
  if (version != kFormatVersion)
    bad(origin, "format version " + std::to_string(version) + ", this space reads version " +
                    std::to_string(kFormatVersion));
  if (flags != 0) bad(origin, "unknown flags " + std::to_string(flags));
  auto payload = image.subspan(kHeaderSize);
  if (len > payload.size())
    bad(origin, "truncated (payload of " + std::to_string(payload.size()) + " bytes, header says " +
                    std::to_string(len) + ")");
  if (len < payload.size()) bad(origin, "trailing bytes after the payload");
  if (crc32(payload) != crc) bad(origin, "checksum mismatch (the file is corrupt)");

  std::map<std::string, std::span<const uint8_t>> sections;
  try {
    proto::Reader r(payload);
    uint32_t n = r.u32();
    if (n > kMaxSections)
      throw proto::ProtoError("more than " + std::to_string(kMaxSections) + " sections");
    for (uint32_t i = 0; i < n; i++) {
      std::string name = r.str();
      if (name.empty() || name.size() > MachineInfo::kMaxName)
        throw proto::ProtoError("bad section name");
      auto body = r.bytes();
      if (!sections.emplace(name, body).second)
        throw proto::ProtoError("section '" + name + "' appears twice");
    }
    r.finish();
  } catch (const proto::ProtoError& e) {
    bad(origin, std::string("malformed section table: ") + e.what());
  }

  Snapshot s;
  s.machine = parse_section<MachineInfo>(sections, "machine", origin);
  s.cpu = parse_section<x86::CpuFeatures>(sections, "cpu", origin);
  for (uint32_t i = 0; i < s.machine.vcpus; i++)
    s.vcpus.push_back(parse_section<x86::VcpuState>(sections, vcpu_section(i), origin));
  s.vm = parse_section<x86::VmState>(sections, "vm", origin);
  for (const auto& name : s.machine.devices)
    s.devices.push_back(
        {name, parse_section<DeviceBody>(sections, device_section(name), origin).data});
  size_t expected = 3 + s.vcpus.size() + s.devices.size();
  if (sections.size() != expected) {
    for (const auto& [name, body] : sections) {
      bool known = name == "machine" || name == "cpu" || name == "vm";
      for (size_t i = 0; i < s.vcpus.size() && !known; i++) known = name == vcpu_section(i);
      for (const auto& d : s.devices) known = known || name == device_section(d.name);
      if (!known) bad(origin, "unexpected section '" + name + "'");
    }
  }
  return s;
}

size_t write_vmstate(const std::string& path, const Snapshot& s) {
  return write_vmstate(fs::file_at(path), s);
}

size_t write_vmstate(const fs::FileAt& to, const Snapshot& s) {
  auto image = encode(s);
  fs::write_file_atomic_at(to, {reinterpret_cast<const char*>(image.data()), image.size()}, 0600);
  return image.size();
}

std::vector<uint8_t> read_vmstate_bytes(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    int e = errno;
    throw Error("snapshot " + path + ": " + std::strerror(e), e,
                e == ENOENT ? "the template has no saved state; rebuild it" : "");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("snapshot " + path + ": stat");
  if (!S_ISREG(st.st_mode)) bad(path, "not a regular file");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > kMaxFileBytes)
    bad(path, "implausibly large (" + std::to_string(st.st_size) + " bytes)");
  std::vector<uint8_t> image(static_cast<size_t>(st.st_size));
  size_t got = read_full(fd.get(), image.data(), image.size());
  if (got != image.size()) bad(path, "file shrank while being read");
  return image;
}

Snapshot read_vmstate(const std::string& path) {
  return decode(read_vmstate_bytes(path), path);
}

}  // namespace space::vmm::snapshot

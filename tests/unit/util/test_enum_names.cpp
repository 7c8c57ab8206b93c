// Unit tests for util/enum_names: a table's lookups both ways, the fallback for a value it does
// not list, and that they work at compile time; and the tables written with it (sandbox status,
// JSON kinds, seccomp roles, cgroup versions, host kinds, address classes, idle steps) name every
// value they had names for before the tables replaced their switches.
#include <doctest/doctest.h>

#include <string>

#include "core/idle.h"
#include "egress/policy.h"
#include "jail/cgroup.h"
#include "jail/seccomp.h"
#include "store/state.h"
#include "util/enum_names.h"
#include "util/json.h"
#include "vmm/host.h"

using namespace space;

namespace {
enum class Fruit { Apple, Pear, Plum };
constexpr EnumName<Fruit> kFruit[] = {{Fruit::Apple, "apple"}, {Fruit::Pear, "pear"}};
}  // namespace

TEST_CASE("enum_names: a table's name for a value, and its value for a name") {
  CHECK(std::string(name_in(kFruit, Fruit::Pear, "?")) == "pear");
  CHECK(std::string(name_in(kFruit, Fruit::Plum, "none")) == "none");  // not listed
  CHECK(value_in(kFruit, "apple") == Fruit::Apple);
  CHECK_FALSE(value_in(kFruit, "plum").has_value());
  CHECK_FALSE(value_in(kFruit, "Apple").has_value());  // exact, case and all
  CHECK_FALSE(value_in(kFruit, "").has_value());
  static_assert(value_in(kFruit, "pear") == Fruit::Pear);
  static_assert(std::string_view(name_in(kFruit, Fruit::Apple, "")) == "apple");
}

TEST_CASE("enum_names: the tables that use it round-trip and name what they named") {
  for (auto s : {store::Status::Creating, store::Status::Running, store::Status::Paused,
                 store::Status::Checkpointed, store::Status::Stopped})
    CHECK(store::parse_status(store::status_name(s)) == s);
  CHECK(std::string(store::status_name(store::Status::Checkpointed)) == "checkpointed");
  CHECK_FALSE(store::parse_status("running ").has_value());
  CHECK(std::string(json::kind_name(json::Kind::Object)) == "an object");
  CHECK(std::string(json::kind_name(json::Kind::Int)) == "an integer");
  CHECK(std::string(jail::role_name(jail::Role::Vcpu)) == "vcpu");
  CHECK(std::string(jail::version_name(jail::CgroupVersion::V2)) == "v2");
  CHECK(std::string(jail::version_name(jail::CgroupVersion::None)) == "none");
  CHECK(std::string(vmm::host_kind_name(vmm::HostKind::Pvm)) == "pvm");
  CHECK(std::string(egress::describe(egress::AddressClass::Metadata)) ==
        "a cloud metadata address");
  CHECK(std::string(egress::describe(egress::AddressClass::HostOwn)) ==
        "one of this host's own addresses");
  CHECK(std::string(core::idle_step_name(core::IdleStep::Checkpoint)) == "checkpoint");
  CHECK(std::string(core::idle_step_name(core::IdleStep::None)).empty());
}

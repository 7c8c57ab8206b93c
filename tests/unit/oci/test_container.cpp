// Unit tests for oci/container.h: the sandbox id of a container id (short ids kept, long ones
// shortened with a hash, bad ones refused) and the record's JSON round trip.
#include <doctest/doctest.h>

#include <string>

#include "oci/container.h"
#include "util/error.h"

using namespace space;

TEST_CASE("oci container: a long container id gets a short sandbox id") {
  CHECK(oci::sandbox_id_for("web-1") == "web-1");
  const std::string a(64, 'a');
  std::string b = a;
  b[63] = 'b';
  CHECK(oci::sandbox_id_for(a).size() == 21);
  CHECK(oci::sandbox_id_for(a).starts_with("aaaaaaaaaaaa-"));
  CHECK(oci::sandbox_id_for(a) != oci::sandbox_id_for(b));  // the same short id, told apart
  CHECK(oci::sandbox_id_for(a) == oci::sandbox_id_for(a));
  CHECK(oci::sandbox_id_for(std::string(32, 'c')) == std::string(32, 'c'));
  CHECK_THROWS_AS(oci::sandbox_id_for("Upper"), Error);
}

TEST_CASE("oci container: the record round-trips") {
  oci::ContainerRecord r;
  r.id = "abc";
  r.sandbox = "abc";
  r.bundle = "/b";
  r.rootfs = "/b/r";
  r.created = "2026-12-03T10:00:00Z";
  r.pid = 42;
  r.pid_start_time = 777;
  r.hostname = "h";
  r.annotations = {{"a", "1"}, {"b", "2"}};
  oci::ContainerRecord back = oci::parse_record(oci::record_json(r));
  CHECK(back.id == r.id);
  CHECK(back.sandbox == r.sandbox);
  CHECK(back.bundle == r.bundle);
  CHECK(back.rootfs == r.rootfs);
  CHECK(back.created == r.created);
  CHECK(back.pid == 42);
  CHECK(back.pid_start_time == 777);
  CHECK(back.hostname == "h");
  CHECK(back.annotations == r.annotations);
  CHECK_THROWS_AS(oci::parse_record(json::parse(R"({"id": "x"})")), Error);
}

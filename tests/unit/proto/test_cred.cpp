// Credential messages (src/proto/cred.h): round trips, names, sizes, and every malformed input
// the decoders must refuse with ProtoError.
#include <doctest/doctest.h>

#include "proto/agent.h"
#include "proto/cred.h"

using namespace space::proto;

TEST_CASE("secret names: letters, digits, _ . -, not led by . or -, at most 128") {
  CHECK(valid_secret_name("API_TOKEN"));
  CHECK(valid_secret_name("db.password-2"));
  CHECK(valid_secret_name(std::string(kMaxSecretName, 'a')));
  CHECK_FALSE(valid_secret_name(""));
  CHECK_FALSE(valid_secret_name(std::string(kMaxSecretName + 1, 'a')));
  CHECK_FALSE(valid_secret_name(".x"));
  CHECK_FALSE(valid_secret_name("-x"));
  CHECK_FALSE(valid_secret_name("a/b"));
  CHECK_FALSE(valid_secret_name("a b"));
  CHECK_FALSE(valid_secret_name(std::string("a\0b", 3)));
}

TEST_CASE("CredGet round-trips and refuses bad names, truncation and trailing bytes") {
  auto b = CredGet{.name = "TOKEN"}.encode();
  CHECK(CredGet::decode(b).name == "TOKEN");
  for (size_t n = 0; n < b.size(); n++) CHECK_THROWS_AS(CredGet::decode({b.data(), n}), ProtoError);
  auto longer = b;
  longer.push_back(0);
  CHECK_THROWS_AS(CredGet::decode(longer), ProtoError);
  CHECK_THROWS_AS(CredGet::decode(CredGet{.name = "../x"}.encode()), ProtoError);
  CHECK_THROWS_AS(CredGet::decode(CredGet{.name = ""}.encode()), ProtoError);
  // A second field (say, another sandbox's id) is trailing bytes: refused.
  Writer w;
  w.str("TOKEN");
  w.str("other-sandbox");
  CHECK_THROWS_AS(CredGet::decode(w.buffer()), ProtoError);
}

TEST_CASE("CredValue carries any bytes up to 64 KiB") {
  std::vector<uint8_t> v = {0, 1, 2, 255, '\n'};
  CHECK(CredValue::decode(CredValue{.value = v}.encode()).value == v);
  CHECK(CredValue::decode(CredValue{}.encode()).value.empty());
  std::vector<uint8_t> max(kMaxSecretSize, 'x');
  CHECK(CredValue::decode(CredValue{.value = max}.encode()).value.size() == kMaxSecretSize);
  max.push_back('x');
  CHECK_THROWS_AS(CredValue::decode(CredValue{.value = max}.encode()), ProtoError);
  Writer w;
  w.u32(0xffffffffu);  // claims 4 GiB
  CHECK_THROWS_AS(CredValue::decode(w.buffer()), ProtoError);
}

TEST_CASE("CredDenied round-trips and checks its code and message") {
  CredDenied d{.code = DenyCode::Expired, .message = "grant of TOKEN expired"};
  auto b = CredDenied::decode(d.encode());
  CHECK(b.code == DenyCode::Expired);
  CHECK(b.message == d.message);
  Writer w;
  w.u32(0);
  w.str("x");
  CHECK_THROWS_AS(CredDenied::decode(w.buffer()), ProtoError);
  Writer w2;
  w2.u32(99);
  w2.str("x");
  CHECK_THROWS_AS(CredDenied::decode(w2.buffer()), ProtoError);
  Writer w3;
  w3.u32(1);
  w3.str(std::string(kMaxDenyMessage + 1, 'm'));
  CHECK_THROWS_AS(CredDenied::decode(w3.buffer()), ProtoError);
  // The encoder truncates an over-long message instead of producing an undecodable frame.
  CredDenied big{.code = DenyCode::Internal, .message = std::string(5000, 'm')};
  CHECK(CredDenied::decode(big.encode()).message.size() == kMaxDenyMessage);
}

TEST_CASE("credential frames use their own types in the shared framing") {
  auto f = encode_frame(Type::CredGet, CredGet{.name = "A"}.encode());
  FrameDecoder dec;
  dec.feed(f);
  auto got = dec.next();
  REQUIRE(got);
  CHECK(got->type == Type::CredGet);
  CHECK(CredGet::decode(got->payload).name == "A");
}

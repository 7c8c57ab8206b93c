// core/forward: the [ADDR:]HOST_PORT:GUEST_PORT forms, and every malformed spec refused with the
// forms in the hint. (Carrying connections needs a VM: tests/integration/90_net.sh.)
#include <doctest/doctest.h>

#include "core/forward.h"
#include "util/error.h"

using namespace space;
using core::ForwardSpec;
using core::parse_forward_spec;

TEST_CASE("forward specs parse in every form") {
  CHECK(parse_forward_spec("8080:80") == ForwardSpec{"127.0.0.1", 8080, 80});
  CHECK(parse_forward_spec("0:80") == ForwardSpec{"127.0.0.1", 0, 80});
  CHECK(parse_forward_spec("127.0.0.2:9000:8000") == ForwardSpec{"127.0.0.2", 9000, 8000});
  CHECK(parse_forward_spec("0.0.0.0:1:65535") == ForwardSpec{"0.0.0.0", 1, 65535});
  CHECK(parse_forward_spec("localhost:5000:5000") == ForwardSpec{"127.0.0.1", 5000, 5000});
  CHECK(parse_forward_spec("[::1]:8080:80") == ForwardSpec{"::1", 8080, 80});
}

TEST_CASE("malformed forward specs are refused with the forms") {
  for (const char* bad :
       {"", "80", "a:80", "80:", ":80", "80:0", "80:65536", "65536:80", "1:2:3:4",
        "host.example:1:2", "[::1]80:1", "[nope]:1:2", "[::1]:1", "-1:80", "80:+1", "1.2.3:1:2"}) {
    CAPTURE(bad);
    try {
      parse_forward_spec(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).rfind(std::string("forward \"") + bad + "\"", 0) == 0);
      CHECK(e.hint().find("HOST_PORT:GUEST_PORT") != std::string::npos);
    }
  }
}

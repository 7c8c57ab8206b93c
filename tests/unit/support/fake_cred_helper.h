// FakeCredHelper: a stand-in for the credential helper on a Unix socket, for guest-init's
// --secret-env path: CredGet "K" gets the value "v-123", anything else a CredDenied "denied by
// test". Serves connections on a thread until destroyed; `requests` counts the CredGets.
#pragma once
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "proto/agent.h"
#include "proto/cred.h"
#include "support/temp_dir.h"
#include "util/fd.h"

namespace space::test {

struct FakeCredHelper {
  TempDir dir{"credhelper"};
  std::string path = dir.path + "/helper.sock";
  Fd listener;
  std::thread t;
  std::atomic<bool> stop{false};
  std::atomic<int> requests{0};
  FakeCredHelper() {
    listener.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listener.get(), 8) == 0);
    t = std::thread([this] {
      for (;;) {
        pollfd p{listener.get(), POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
          if (stop) return;
          continue;
        }
        Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        proto::FrameDecoder d;
        uint8_t buf[1024];
        ssize_t n;
        while ((n = ::read(c.get(), buf, sizeof buf)) > 0) {
          d.feed({buf, size_t(n)});
          while (auto f = d.next()) {
            requests++;
            auto g = proto::CredGet::decode(f->payload);
            std::vector<uint8_t> out;
            if (g.name == "K") {
              std::string v = "v-123";
              out = proto::encode_frame(proto::Type::CredValue,
                                        proto::CredValue{.value = {v.begin(), v.end()}}.encode());
            } else {
              out = proto::encode_frame(proto::Type::CredDenied,
                                        proto::CredDenied{.code = proto::DenyCode::NotGranted,
                                                          .message = "denied by test"}
                                            .encode());
            }
            write_all(c.get(), out.data(), out.size());
          }
        }
      }
    });
  }
  ~FakeCredHelper() {
    stop = true;
    t.join();
  }
};

}  // namespace space::test

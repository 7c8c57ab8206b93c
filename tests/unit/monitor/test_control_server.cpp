// Unit tests for monitor/control_server, served by an event loop on a thread: each request line
// reaches the handler with exactly the descriptors that came with it (three, none, two with a
// line sent in two parts), usable there and closed after it; the server made from a listener
// bound by someone else listens itself (so peer_pid names this process) and leaves its socket
// file, while the one made from a path removes its own; a request whose caller hung up before
// the server read it is dropped, not carried out.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "monitor/control_server.h"
#include "support/temp_dir.h"
#include "util/error.h"
#include "util/event_loop.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/socket.h"

using namespace space;

namespace {

// Runs `loop` on a thread for its lifetime; declare it after the server it serves.
struct LoopThread {
  EventLoop& loop;
  std::thread thread;
  explicit LoopThread(EventLoop& l) : loop(l), thread([this] { loop.run(20); }) {}
  ~LoopThread() {
    loop.stop();
    thread.join();
  }
};

// A handler that writes "x" through every descriptor it gets and answers
// "<line> <descriptor count>".
struct Recorder {
  std::mutex mu;
  std::vector<size_t> counts;
  std::vector<std::string> lines;
  monitor::ControlServer::Handler handler() {
    return [this](const std::string& line, std::vector<Fd>& fds) {
      for (auto& fd : fds)
        if (::write(fd.get(), "x", 1) != 1) return std::string("write failed\n");
      std::lock_guard<std::mutex> g(mu);
      counts.push_back(fds.size());
      lines.push_back(line);
      return line + " " + std::to_string(fds.size()) + "\n";
    };
  }
};

net::Deadline soon() {
  return net::Deadline::after_ms(2000);
}

// `n` duplicates of `fd`.
std::vector<Fd> dups(int fd, int n) {
  std::vector<Fd> out;
  for (int i = 0; i < n; i++) {
    out.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    REQUIRE(out.back());
  }
  return out;
}

std::vector<int> raw(const std::vector<Fd>& fds) {
  std::vector<int> out;
  for (auto& f : fds) out.push_back(f.get());
  return out;
}

}  // namespace

TEST_CASE("control server: the handler gets the descriptors sent with its line") {
  test::TempDir dir("ctl");
  std::string path = dir.path + "/control.sock";
  EventLoop loop;
  Recorder rec;
  monitor::ControlServer server(loop, path, rec.handler());
  LoopThread running(loop);
  Pipe p = Pipe::make();
  Fd c = net::unix_connect(path, soon());
  {
    std::vector<Fd> three = dups(p.write.get(), 3);
    net::send_with_fds(c.get(), "branch\n", raw(three), soon());
  }  // ours are closed; the server's copies keep the pipe open until it is done with them
  CHECK(net::read_line(c.get(), soon()) == "branch 3");
  net::send_all(c.get(), "pause\n", soon());
  CHECK(net::read_line(c.get(), soon()) == "pause 0");
  {
    // A line in two parts, the descriptors with the first.
    std::vector<Fd> two = dups(p.write.get(), 2);
    net::send_with_fds(c.get(), "chec", raw(two), soon());
    ::usleep(20 * 1000);
    net::send_all(c.get(), "kpoint\n", soon());
  }
  CHECK(net::read_line(c.get(), soon()) == "checkpoint 2");
  p.write.reset();
  // Five writes through the descriptors, then EOF: the server closed every one it got.
  set_nonblocking(p.read.get(), false);
  char buf[16] = {};
  CHECK(read_full(p.read.get(), buf, sizeof buf) == 5);
  CHECK(std::string(buf) == "xxxxx");
  std::lock_guard<std::mutex> g(rec.mu);
  CHECK(rec.counts == std::vector<size_t>{3, 0, 2});
}

TEST_CASE("control server: a path server removes its socket file, a listener server does not") {
  test::TempDir dir("ctl");
  std::string own = dir.path + "/own.sock", given = dir.path + "/given.sock";
  EventLoop loop;
  Recorder rec;
  {
    monitor::ControlServer server(loop, own, rec.handler());
    LoopThread running(loop);
    Fd c = net::unix_connect(own, soon());
    net::send_all(c.get(), "ping\n", soon());
    CHECK(net::read_line(c.get(), soon()) == "ping 0");
  }
  CHECK_FALSE(fs::exists(own));
  EventLoop loop2;
  {
    Fd bound = net::unix_bind(given);
    monitor::ControlServer server(loop2, std::move(bound), rec.handler());
    LoopThread running(loop2);
    Fd c = net::unix_connect(given, soon());
    CHECK(net::peer_pid(c.get()) == ::getpid());
    Pipe p = Pipe::make();
    {
      std::vector<Fd> three = dups(p.write.get(), 3);
      net::send_with_fds(c.get(), "restore\n", raw(three), soon());
    }
    CHECK(net::read_line(c.get(), soon()) == "restore 3");
  }
  CHECK(fs::exists(given));
  // A listener that cannot listen is refused.
  EventLoop loop3;
  CHECK_THROWS_AS(monitor::ControlServer(loop3, Fd(), rec.handler()), Error);
}

TEST_CASE("control server: a request whose caller hung up before it was read is not carried out") {
  // As when the VMM was stopped (SIGSTOP, a hung host) while a pause waited and timed out: once
  // the VMM runs again, the request is still in its socket, and its caller has gone.
  test::TempDir dir("ctl");
  std::string path = dir.path + "/control.sock";
  EventLoop loop;
  Recorder rec;
  monitor::ControlServer server(loop, path, rec.handler());
  {
    Fd gone = net::unix_connect(path, soon());
    net::send_all(gone.get(), "pause\n", soon());
  }  // closed before the loop ever ran
  Fd live = net::unix_connect(path, soon());
  net::send_all(live.get(), "ping\n", soon());
  // Both are in the backlog now: the loop's first passes accept them and read their lines.
  for (int i = 0; i < 10; i++) loop.run_once(20);
  CHECK(net::read_line(live.get(), soon()) == "ping 0");
  std::lock_guard<std::mutex> g(rec.mu);
  CHECK(rec.lines == std::vector<std::string>{"ping"});
}

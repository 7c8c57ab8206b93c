// VirtioVsock: virtio-vsock (device id 19; queues rx, tx, event; config: guest_cid) bridged to
// host Unix sockets with Firecracker's convention:
//   host->guest: clients connect to `uds_path`, write "CONNECT <port>\n", and once the guest
//     accepts read "OK <host port>\n" and then talk to the guest; if nobody listens they are
//     closed;
//   guest->host: a guest connection to host port P is bridged to a new connection to
//     "<uds_path>_P", or to the path of a VsockHostRoute given for P; if that fails the guest
//     gets RST.
// Threading: every host-side action happens on the EventLoop thread, under the transport's
// device mutex. A queue notification from a vCPU only kicks an eventfd; the loop thread then
// processes TX, the event queue and RX. Calls that arrive on other threads (activate, reset,
// reset_transport) never touch the EventLoop: they detach connections at once and leave their
// fds in dead_fds_ for the loop thread to unregister and close, because EventLoop::add/remove
// are only safe on the loop thread. Host sockets are non-blocking; a connection buffers at most
// the credit it advertised (kBufAlloc) and reads from its host socket only as much as the guest's
// credit allows, and only while the guest has RX buffers: the EPOLLIN interest is dropped
// otherwise and restored when the guest refills RX or returns credit.
// Snapshots keep only guest_cid (the transport keeps the queues); connections do not survive:
// after a restore the VMM calls reset_transport(), which drops them and tells the guest with a
// VIRTIO_VSOCK_EVENT_TRANSPORT_RESET event. Until the guest has handled that event (it refills
// and kicks the event queue once done) nothing is put on RX: a host CONNECT that reached the guest
// first would be established and then killed by the guest's own reset handling.
#pragma once
#include <atomic>
#include <deque>
#include <map>
#include <string>

#include "devices/virtio/backend.h"
#include "devices/virtio/vsock_conn.h"
#include "devices/virtio/vsock_packet.h"
#include "devices/virtio/vsock_route.h"
#include "proto/fields.h"
#include "util/acceptor.h"
#include "util/event_loop.h"
#include "util/fd.h"
#include "util/log.h"

namespace space::devices {

class VirtioVsock final : public VirtioBackend {
 public:
  static constexpr size_t kRxQueue = 0, kTxQueue = 1, kEventQueue = 2;
  static constexpr uint16_t kQueueSize = 256;
  static constexpr uint32_t kBufAlloc = 128 * 1024;  // per-connection guest->host buffer
  static constexpr size_t kMaxConnections = 1024;
  static constexpr size_t kMaxHandshakes = 64;   // host clients yet to send CONNECT
  static constexpr size_t kMaxQueuedRsts = 256;  // RSTs for packets to unknown ports
  static constexpr uint32_t kFirstEphemeralPort = 1u << 30;

  // Listens on `uds_path` (replacing a stale socket file there); the socket and every connection
  // are served by `loop`, which must outlive this object. Throws space::Error on failure.
  // `routes` maps guest->host ports to other sockets (vsock_route.h).
  VirtioVsock(EventLoop& loop, uint64_t guest_cid, std::string uds_path,
              std::map<uint32_t, VsockHostRoute> routes = {});
  // The same over `listener`, a socket already bound at `uds_path` (by a process that could;
  // a jailed VMM cannot), on which it calls listen(). `uds_path` may be relative to the working
  // directory: guest->host connections dial "<uds_path>_<port>". The destructor leaves the
  // socket file alone.
  VirtioVsock(EventLoop& loop, uint64_t guest_cid, Fd listener, std::string uds_path,
              std::map<uint32_t, VsockHostRoute> routes = {});
  // Binds a socket at `path` for the constructor above: a stale socket file there is replaced,
  // anything else refused; mode 0600 before anyone can connect.
  static Fd bind_listener(const std::string& path);
  // Unregisters every fd from the loop and unlinks uds_path. The loop must not be running (or
  // this runs on the loop thread). Construction, too, must precede the loop thread or run on it:
  // attach() registers the listener.
  ~VirtioVsock() override;

  // Drops every connection and host client, and queues VIRTIO_VSOCK_EVENT_TRANSPORT_RESET for
  // the guest. Call with the transport's device mutex held, after a snapshot restore.
  void reset_transport();
  // Open connections now (on the event loop's thread).
  size_t connection_count() const { return conns_.size(); }
  // Connections begun since construction: by host clients (exec, cp, forward and the VMM's own
  // Hello, all to guest-init) and by the guest (to the credential helper, the network broker).
  // Read from any thread.
  uint64_t host_connections() const { return host_connections_.load(); }
  uint64_t guest_connections() const { return guest_connections_.load(); }
  uint64_t guest_cid() const { return guest_cid_; }

  // What save_state() keeps: the guest's CID (connections are not kept).
  struct State {
    static constexpr uint32_t kVersion = 1;
    uint32_t version = kVersion;
    uint64_t guest_cid = 0;
    SPACE_FIELDS(version, guest_cid);
    void check() const;
  };
  const std::string& uds_path() const { return uds_path_; }

  uint32_t device_id() const override { return virtio::kIdVsock; }
  uint64_t device_features() const override { return 0; }  // stream only
  size_t num_queues() const override { return 3; }
  uint16_t queue_max_size(size_t) const override { return kQueueSize; }
  void read_config(uint64_t offset, std::span<uint8_t> data) override;
  void attach(VirtioTransport& transport) override;
  void activate() override;
  void notify(size_t index) override;
  void reset() override;
  std::vector<uint8_t> save_state() const override;
  void restore_state(std::span<const uint8_t> state) override;

 private:
  mutable log::Throttle warn_;  // what the guest provokes is rate-limited
  struct Handshake {
    Fd sock;
    std::string line;
  };
  using Conn = VsockConnection;

  // Loop-thread entry points (they take the device mutex).
  void on_kick();
  void on_listener();
  void on_handshake(uint64_t id);
  void on_conn_event(VsockKey key, uint64_t id, uint32_t events);

  // Queue processing (vsock.cpp).
  void process_tx();
  void handle_tx(const DescChain& chain);
  void handle_conn_packet(Conn& c, const vsock::Header& h, const DescChain& chain);
  void process_rx();
  uint32_t fill_rx(Conn& c, const DescChain& chain, bool& erase);
  uint32_t read_host(Conn& c, const DescChain& chain);
  void process_event();
  void queue_rst(const vsock::Header& from_guest);
  vsock::Header reply_header(const Conn& c, uint16_t op);

  // Connection bookkeeping (vsock_host.cpp).
  void connect_to_host(const vsock::Header& h);
  void start_host_initiated(Fd client, uint32_t guest_port);
  // Registers a new connection with the loop (no events yet); nullptr if that fails.
  Conn* add_conn(VsockKey key, Fd sock, Conn::State state);
  void schedule_rx(Conn& c);
  void update_epoll(Conn& c);
  bool flush_to_host(Conn& c);
  void send_to_host(Conn& c, const DescChain& chain, uint32_t len);
  void maybe_credit_update(Conn& c);
  void maybe_finish(Conn& c);
  void close_host(Conn& c);
  void abort_conn(Conn& c);
  void erase_conn(VsockKey key);
  // Forgets every connection and handshake now; registered fds wait in dead_fds_ (any thread).
  void detach_all();
  // Unregisters and closes dead_fds_ (loop thread only).
  void bury_dead();

  EventLoop& loop_;
  uint64_t guest_cid_;
  std::string uds_path_;
  bool owns_path_ = false;  // unlink uds_path_ on destruction
  std::map<uint32_t, VsockHostRoute> routes_;
  Fd listener_;
  Acceptor acceptor_;
  Fd kick_;  // eventfd: a vCPU noticed a queue notification
  bool attached_ = false;
  std::map<VsockKey, Conn> conns_;
  std::map<uint64_t, Handshake> handshakes_;
  std::vector<Fd> dead_fds_;  // still registered in the loop; closed by bury_dead()
  uint64_t next_conn_id_ = 1;
  uint64_t next_handshake_id_ = 0;
  uint32_t next_ephemeral_ = kFirstEphemeralPort;
  std::deque<VsockKey> rx_queue_;   // connections with something for the guest, in turn
  std::deque<vsock::Header> rsts_;  // RSTs for packets that match no connection
  bool event_pending_ = false;      // TRANSPORT_RESET owed to the guest
  bool reset_unacked_ = false;      // TRANSPORT_RESET delivered, guest not done with it yet
  bool event_kicked_ = false;       // the guest notified the event queue since the delivery
  std::atomic<uint64_t> host_connections_{0}, guest_connections_{0};
};

}  // namespace space::devices

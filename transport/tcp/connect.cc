#include "transport/tcp/connect.h"

#define ASIO_STANDALONE 1
#define ASIO_NO_DEPRECATED 1
#include <asio.hpp>

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::tcp {
namespace {

using asio::ip::tcp;

// Asio has no option for the congestion control: set it on the native handle.
asio::error_code set_congestion(int fd, const SocketOptions& so) {
  if (so.congestion.empty()) return {};
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, so.congestion.data(), so.congestion.size()) != 0)
    return asio::error_code(errno, asio::system_category());
  return {};
}


// The retransmission timeout's cap (TCP_RTO_MAX_MS, Linux 6.15+; 44 in
// linux/tcp.h, which Debian 12's headers predate). A kernel without it keeps
// its own cap, said once per process: the link works, only its recovery
// after an outage is TCP's own back-off.
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif
void set_rto_max(int fd, const SocketOptions& so, const std::string& who) {
  if (so.rto_max_ms == 0) return;
  const int v = static_cast<int>(so.rto_max_ms);
  if (setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &v, sizeof v) == 0) return;
  static std::once_flag said;
  const int e = errno;
  std::call_once(said, [&] {
    spdlog::info("{}: setsockopt(TCP_RTO_MAX_MS, {}) failed ({}; Linux 6.15 and later have it): "
                 "after an outage TCP's own back-off, up to 120 s, says when a link carries again",
                 who, v, strerror(e));
  });
}

// TcpOptions::keepalive_s: an idle connection whose peer is gone (its
// process died and its reset was lost, or its host rebooted) answers the
// first probe with a reset. Without it such a link waits forever.
asio::error_code set_keepalive(int fd, const SocketOptions& so) {
  if (so.keepalive_s == 0) return {};
  const int on = 1, idle = static_cast<int>(so.keepalive_s), every = 1, probes = kKeepaliveProbes;
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &every, sizeof every) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) != 0)
    return asio::error_code(errno, asio::system_category());
  return {};
}

bool stopped(const SocketOptions& so) { return so.stop && so.stop->load(std::memory_order_relaxed); }

std::string endpoint_text(const tcp::endpoint& e) {
  return fmt::format("{}:{}", e.address().to_string(), e.port());
}

}  // namespace

Status connect_with_retry(const std::string& host, uint16_t port, uint32_t timeout_ms,
                          const SocketOptions& so, const std::string& who, int* fd) {
  using Clock = std::chrono::steady_clock;
  asio::io_context io;
  tcp::resolver resolver(io);
  asio::error_code ec;
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec || endpoints.empty())
    return Status::Error(fmt::format("{}: cannot resolve {}: {}", who, host,
                                     ec ? ec.message() : "no address"));
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeout_ms);
  asio::error_code last;
  for (;;) {
    for (const auto& e : endpoints) {
      tcp::socket s(io);
      s.open(e.endpoint().protocol(), ec);
      if (ec) {
        last = ec;
        continue;
      }
      if ((ec = set_congestion(s.native_handle(), so)))
        return Status::Error(fmt::format("{}: setsockopt(TCP_CONGESTION, '{}') failed: {}", who,
                                         so.congestion, ec.message()));
      // Asynchronous, so that the deadline bounds each attempt too: a blocking
      // connect() to an address that drops SYNs waits the kernel's minutes.
      asio::error_code attempt = asio::error::timed_out;
      s.async_connect(e.endpoint(), [&attempt](asio::error_code r) {
        if (r != asio::error::operation_aborted) attempt = r;
      });
      io.restart();
      for (;;) {  // in slices, so that a stop is seen while an attempt waits
        const auto slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(20));
        if (io.run_until(slice) > 0 || io.stopped()) break;  // the attempt ended
        if (Clock::now() >= deadline || stopped(so)) {      // still connecting: give up
          s.cancel(ec);
          io.restart();
          io.run();
          break;
        }
      }
      if (stopped(so)) break;
      // An attempt cut short by the deadline keeps the error an earlier one
      // saw from the OS ("Connection refused" says more than "timed out").
      if (attempt != asio::error::timed_out || !last) last = attempt;
      if (attempt) continue;
      s.set_option(tcp::no_delay(true), ec);
      if (!ec) set_rto_max(s.native_handle(), so, who);
      if (!ec) ec = set_keepalive(s.native_handle(), so);
      if (!ec) s.non_blocking(false, ec);  // the async connect left the fd non-blocking
      if (ec)
        return Status::Error(fmt::format("{}: setting up the socket to {}:{} failed: {}", who, host,
                                         port, ec.message()));
      *fd = s.release();
      return {};
    }
    const auto now = Clock::now();
    if (now >= deadline || stopped(so)) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(20), deadline - now));
  }
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  if (stopped(so))
    return Status::Error(fmt::format("{}: stopped while connecting to {}:{} ({} ms); no frame was "
                                     "sent", who, host, port, waited));
  return Status::Error(fmt::format("{}: connect to {}:{} failed after {} ms: {}", who, host, port,
                                   waited, last.message()));
}

// ---------------------------------------------------------------- Acceptor

// Errors of accept(2) that say "not now" (out of descriptors or memory, a
// peer that gave up while queued): wait a little and accept again.
bool transient(const asio::error_code& ec) {
  return ec == asio::error::connection_aborted || ec == asio::error::no_descriptors ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
         ec == asio::error_code(ENFILE, asio::system_category()) ||
         ec == asio::error::interrupted;
}

struct Acceptor::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer backoff{io};  // after a transient accept error
  SocketOptions so;
  std::string who, address;
  uint16_t port = 0;
  bool leaving = false;  // accept() is returning: handlers arm nothing more (its thread only)

  std::thread away;                  // turn_away()'s accept() loop
  Handshake away_hs;

  std::mutex mu;                     // guards what follows
  bool shut = false;
  bool interrupt = false;            // stop_turning_away(): accept() returns, not for good
  int accepted = -1;
  Status fatal;                      // an accept error that will not go away
  std::vector<int> in_handshake;     // fds whose handshake is running
  std::vector<std::thread> threads;  // one per handshake; joined before accept() returns

  // Ends every handshake still running (their reads fail at once) and waits
  // for their threads: none may call the caller's handshake once accept returns.
  // With a grace, handshakes get that long to finish first: a turned-away
  // sender is then told why (it tries again on "connected already"), where
  // a cut-off handshake closed it unanswered, which ended a restarted load
  // generator's start (seen under ASan); only a peer that says nothing for
  // the whole grace is cut off.
  void end_handshakes(std::chrono::milliseconds grace = std::chrono::milliseconds(0)) {
    const auto until = std::chrono::steady_clock::now() + grace;
    std::vector<std::thread> ts;
    for (;;) {
      {
        std::lock_guard lk(mu);
        if (in_handshake.empty() || std::chrono::steady_clock::now() >= until) {
          for (int fd : in_handshake) ::shutdown(fd, SHUT_RDWR);
          ts.swap(threads);
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (auto& t : ts) t.join();
  }

  // Runs on a thread of its own: the caller's handshake under the deadline
  // set on fd, then keep the connection as the link or close it.
  void handshake(const Handshake& hs, int fd, const std::string& peer_addr) {
    std::string why;
    const Verdict v = hs(fd, peer_addr, &why);
    bool keep = false, late = false;
    {
      std::lock_guard lk(mu);
      in_handshake.erase(std::find(in_handshake.begin(), in_handshake.end(), fd));
      keep = v == Verdict::kAccept && accepted < 0 && !shut;
      late = v == Verdict::kAccept && !keep;
      if (keep) accepted = fd;
    }
    if (keep) {
      set_recv_timeout(fd, 0);
    } else {
      if (v == Verdict::kRefuse)
        spdlog::warn("{}: refused a connection from {} on {}:{}: {}{}", who, peer_addr, address,
                     port, why, away.joinable() ? "" : "; still waiting for the upstream");
      if (late)
        spdlog::warn("{}: closed a connection from {} on {}:{}: its handshake passed, but the "
                     "listener already has its upstream or is shutting down",
                     who, peer_addr, address, port);
      ::close(fd);
    }
    asio::post(io, [] {});  // wake accept()
  }

  void arm(const Handshake& hs) {
    acceptor.async_accept([this, &hs](asio::error_code ec, tcp::socket s) {
      // Taken from the backlog as accept() returns: turning away, it is
      // answered as the others were (end_handshakes lets it finish), not
      // closed unanswered; else (the link was kept) s closes.
      if (ec == asio::error::operation_aborted || (leaving && (ec || &hs != &away_hs))) return;
      if (ec) {
        if (transient(ec)) {
          spdlog::warn("{}: accept on {}:{} failed: {}; trying again", who, address, port,
                       ec.message());
          backoff.expires_after(std::chrono::milliseconds(100));
          backoff.async_wait([this, &hs](asio::error_code e) {
            if (!e && !leaving) arm(hs);
          });
        } else {
          std::lock_guard lk(mu);
          fatal = Status::Error(fmt::format("{}: accept on {}:{} failed: {}", who, address, port,
                                            ec.message()));
        }
        return;
      }
      asio::error_code ignore;
      s.set_option(tcp::no_delay(true), ignore);
      set_rto_max(s.native_handle(), so, who);
      if (asio::error_code k = set_keepalive(s.native_handle(), so))
        spdlog::warn("{}: keepalive not set on a connection accepted on {}:{}: {}", who, address, port,
                     k.message());
      s.non_blocking(false, ignore);
      const auto peer = s.remote_endpoint(ignore);
      const std::string peer_addr = ignore ? std::string("?") : endpoint_text(peer);
      const int fd = s.release();
      set_recv_timeout(fd, so.handshake_timeout_ms);
      {
        std::lock_guard lk(mu);
        in_handshake.push_back(fd);
        threads.emplace_back([this, &hs, fd, peer_addr] { handshake(hs, fd, peer_addr); });
      }
      if (!leaving) arm(hs);
    });
  }
};

namespace {
// A port in use that lies in this host's ephemeral range may be held by an
// outgoing connection, or by one's TIME-WAIT for a minute after it closed
// (its socket had no SO_REUSEADDR): the listener then fails now and then,
// for no reason the user can see. Says so, and what avoids it.
std::string ephemeral_hint(uint16_t port) {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  uint32_t lo = 0, hi = 0;
  if (!(f >> lo >> hi) || port < lo || port > hi) return "";
  return fmt::format(" (port {} is in this host's ephemeral range {}-{}, from which outgoing "
                     "connections take their ports: one may hold it, or its TIME-WAIT for a "
                     "minute; a base_port below {} avoids that)",
                     port, lo, hi, lo);
}
}  // namespace

Acceptor::Acceptor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Acceptor::~Acceptor() {
  stop_turning_away();
  shutdown();
  impl_->end_handshakes();
}

std::unique_ptr<Acceptor> Acceptor::bind(const std::string& address, uint16_t port,
                                         const SocketOptions& so, const std::string& who,
                                         Status* st) {
  // Handshake threads log; spdlog makes its registry on first use, behind a
  // static guard TSan cannot see through (libspdlog is not instrumented):
  // made here, before any of them starts.
  (void)spdlog::default_logger_raw();
  auto impl = std::make_unique<Impl>();
  impl->so = so;
  impl->who = who;
  impl->address = address;
  asio::error_code ec;
  tcp::resolver resolver(impl->io);
  const auto eps = resolver.resolve(address, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || eps.empty()) {
    *st = Status::Error(fmt::format("{}: cannot listen on {}:{}: {}", who, address, port,
                                    ec ? ec.message() : "no address"));
    return nullptr;
  }
  const tcp::endpoint ep = eps.begin()->endpoint();
  auto& a = impl->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) ec = set_congestion(a.native_handle(), so);  // before listen: accepted sockets inherit it
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(16, ec);
  if (ec) {
    *st = Status::Error(fmt::format("{}: cannot listen on {}:{}: {}{}", who, address, port, ec.message(),
                                    ec == asio::error::address_in_use ? ephemeral_hint(port) : ""));
    return nullptr;
  }
  impl->port = a.local_endpoint(ec).port();
  return std::unique_ptr<Acceptor>(new Acceptor(std::move(impl)));
}

uint16_t Acceptor::port() const { return impl_->port; }

int Acceptor::accept(const Handshake& hs, Status* st) {
  Impl& im = *impl_;
  {
    std::lock_guard lk(im.mu);
    im.accepted = -1;
  }
  im.leaving = false;
  im.io.restart();
  im.arm(hs);
  int fd = -1;
  Status why;
  for (;;) {
    {
      std::lock_guard lk(im.mu);
      if (im.accepted >= 0 || im.shut || im.interrupt || !im.fatal.ok()) {
        fd = std::exchange(im.accepted, -1);
        why = im.fatal;
        break;
      }
    }
    if (im.io.run_one() == 0) {  // nothing left to wait on: cannot happen while an accept is armed
      why = Status::Error(fmt::format("{}: listener on {}:{} stopped waiting", im.who, im.address,
                                      im.port));
      break;
    }
  }
  // Leave nothing armed that refers to hs: no accept, no backoff, no handshake.
  im.leaving = true;
  asio::error_code ignore;
  im.acceptor.cancel(ignore);
  im.backoff.cancel();
  im.io.poll();
  im.end_handshakes(&hs == &im.away_hs ? std::chrono::milliseconds(500) : std::chrono::milliseconds(0));
  std::lock_guard lk(im.mu);
  if (fd < 0) fd = std::exchange(im.accepted, -1);  // accepted while we were leaving
  if (im.accepted >= 0) {  // a second one won the race while we were leaving
    ::close(im.accepted);
    im.accepted = -1;
  }
  if (fd >= 0 && (im.shut || im.interrupt || !why.ok())) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) {
    *st = why.ok() ? Status::Error(fmt::format("{}: listener on {}:{} shut down", im.who,
                                               im.address, im.port))
                   : why;
    return -1;
  }
  *st = Status();
  return fd;
}

void Acceptor::shutdown() {
  Impl& im = *impl_;
  {
    std::lock_guard lk(im.mu);
    im.shut = true;
  }
  asio::post(im.io, [&im] {
    asio::error_code ignore;
    im.acceptor.cancel(ignore);
  });
}

void Acceptor::turn_away(Handshake refuse) {
  Impl& im = *impl_;
  if (im.away.joinable()) return;
  im.away_hs = std::move(refuse);
  im.away = std::thread([this] {
    Status st;
    const int fd = accept(impl_->away_hs, &st);  // refuses all: returns when told to
    if (fd >= 0) ::close(fd);
  });
}

void Acceptor::stop_turning_away() {
  Impl& im = *impl_;
  if (!im.away.joinable()) return;
  {
    std::lock_guard lk(im.mu);
    im.interrupt = true;
  }
  asio::post(im.io, [] {});  // wake its run_one()
  im.away.join();
  std::lock_guard lk(im.mu);
  im.interrupt = false;
}

void set_recv_timeout(int fd, uint32_t ms) {
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

void wait_acknowledged(int fd, uint32_t bound_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(bound_ms);
  for (;;) {
    int queued = 0;
    if (::ioctl(fd, SIOCOUTQ, &queued) != 0 || queued == 0) return;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return;
    // Reset, its error taken by a read before: what it had out still counts
    // in SIOCOUTQ, and nothing will acknowledge it.
    tcp_info ti{};
    len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_state == TCP_CLOSE) return;
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

namespace {
std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }
}  // namespace

Status send_all(int fd, const void* p, size_t n, const std::string& who) {
  auto* b = static_cast<const std::byte*>(p);
  while (n > 0) {
    ssize_t r = ::send(fd, b, n, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::Error(fmt::format("send failed on {}: {}", who, errno_text(errno)));
    }
    b += r;
    n -= r;
  }
  return {};
}

Status read_exact(int fd, void* p, size_t n, const std::string& who, const char* what) {
  auto* b = static_cast<std::byte*>(p);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, b + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return Status::Error(fmt::format("{}: timed out waiting for the {}", who, what));
      return Status::Error(fmt::format("recv failed on {} reading the {}: {}", who, what,
                                       errno_text(errno)));
    }
    if (r == 0)
      return Status::Error(fmt::format("{}: peer closed the connection during the {} ({} of {} bytes)",
                                       who, what, got, n));
    got += r;
  }
  return {};
}

namespace {
// Reads one handshake message (prefix + message) into buf.
Status read_handshake(int fd, std::byte* buf, uint32_t* len, const std::string& link,
                      const char* what) {
  Status st = read_exact(fd, buf, kHandshakePrefixBytes, link, what);
  if (!st) return st;
  st = decode_handshake_prefix(buf, len);
  if (!st) return Status::Error(fmt::format("{}: {}: {}", link, what, st.message()));
  return read_exact(fd, buf, *len, link, what);
}
}  // namespace

Verdict answer_hello(int fd, const LinkOptions& opts, const std::string& link,
                     std::string* sender, std::string* why) {
  alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
  uint32_t hlen = 0;
  HelloInfo hello;
  Status s = read_handshake(fd, buf, &hlen, link, "Hello");
  if (s) s = decode_hello(buf, hlen, &hello);
  std::string mismatch = s ? hello_mismatch(hello, expected_hello(opts)) : s.message();
  ReplyInfo reply;
  reply.receiver_name = opts.to;
  reply.accepted = mismatch.empty();
  if (reply.accepted) {
    reply.credits = opts.slots;
    reply.slot_bytes = opts.slot_bytes;
    reply.credit_batch = opts.effective_credit_batch();
  } else {
    reply.error = mismatch;
  }
  size_t n = 0;
  Status w = encode_reply(reply, buf, sizeof buf, &n);
  if (w) w = send_all(fd, buf, n, link);
  if (reply.accepted && !w) mismatch = w.message();
  if (!mismatch.empty()) {
    *why = mismatch;
    return Verdict::kRefuse;
  }
  *sender = hello.sender_name;
  return Verdict::kAccept;
}

void refuse_hello(int fd, const std::string& receiver, const std::string& link,
                  const std::string& reason, std::string* why) {
  alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
  uint32_t hlen = 0;
  Status s = read_handshake(fd, buf, &hlen, link, "Hello");
  *why = s ? reason : s.message();
  ReplyInfo reply;
  reply.receiver_name = receiver;
  reply.accepted = false;
  reply.error = reason;
  size_t n = 0;
  if (encode_reply(reply, buf, sizeof buf, &n)) (void)send_all(fd, buf, n, link);
}

Status ask_hello(int fd, const LinkOptions& opts, const std::string& link, ReplyInfo* reply,
                 bool* vanished) {
  if (vanished) *vanished = false;
  alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
  size_t n = 0;
  Status st = encode_hello(hello_from_options(opts), buf, sizeof buf, &n);
  if (!st) return st;
  st = send_all(fd, buf, n, link);
  if (!st) {
    if (vanished) *vanished = closed_by_peer(fd);
    return st;
  }
  set_recv_timeout(fd, opts.connect_timeout_ms);
  if (opts.stop) {  // a receiver that took the connection may never answer: see a stop meanwhile
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts.connect_timeout_ms);
    for (pollfd p{fd, POLLIN, 0}; ::poll(&p, 1, 20) == 0 && std::chrono::steady_clock::now() < deadline;)
      if (opts.stop->load(std::memory_order_relaxed))
        return Status::Error(fmt::format("{}: stopped while waiting for the HelloReply; no frame was sent",
                                         link));
  }
  uint32_t len = 0;
  st = read_handshake(fd, buf, &len, link, "HelloReply");
  if (!st) {
    if (vanished) *vanished = closed_by_peer(fd);
    return st;
  }
  Status s = decode_reply(buf, len, reply);
  if (!s) return Status::Error(fmt::format("{}: HelloReply: {}", link, s.message()));
  if (!reply->accepted)
    return Status::Error(fmt::format("{}: handshake rejected: {}", link, reply->error));
  if (reply->credits == 0 || reply->slot_bytes < kMinSlotBytes)
    return Status::Error(fmt::format("{}: HelloReply grants {} credits of {}-byte slots", link,
                                     reply->credits, reply->slot_bytes));
  set_recv_timeout(fd, 0);
  return {};
}

bool closed_by_peer(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && (err == ECONNRESET || err == EPIPE))
    return true;
  // A reset whose error a read already took leaves the socket closed; a
  // clean close reads as end of stream.
  tcp_info ti{};
  len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
      (ti.tcpi_state == TCP_CLOSE || ti.tcpi_state == TCP_CLOSE_WAIT))
    return true;
  char c;
  const ssize_t r = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE));
}

Status connect_again_while_vanished(uint32_t timeout_ms, const std::atomic<bool>* stop,
                                    const std::string& link, const ConnectAttempt& attempt) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  uint32_t left = timeout_ms;
  for (int again = 0;; ++again) {
    bool vanished = false;
    Status st = attempt(left, &vanished);
    if (st || !vanished) return st;
    const auto now = Clock::now();
    if (now >= deadline || (stop && stop->load(std::memory_order_relaxed))) return st;
    if (again == 0)
      spdlog::warn("{}; the receiver went away during the handshake: connecting again, for up to {} ms",
                   st.message(),
                   std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(20), deadline - now));
    left = static_cast<uint32_t>(std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
  }
}

}  // namespace sluice::tcp

// sluice-plainrelay: the plain-socket baseline.
//
// Four minimal processes in the shape of a sluice pipeline
// (source -> relay -> relay -> sink) that only read and write bytes over TCP:
// no events, no tuples, no pool, no credits. What they reach on a machine is
// the ceiling that sluice's data path is measured against in the same run.
//
//   1. sink --listen P3 [--json]             accepts one connection, counts bytes
//   2. relay --listen P2 --connect H:P3      accepts one, connects on, copies
//   3. relay --listen P1 --connect H:P2
//   4. source --connect H:P1 --duration S    writes whole chunks, then closes
//
// Start them downstream first; connect retries for --connect-timeout seconds,
// so the order is not critical. Blocking sockets, one thread per process: a
// relay reads as much as is available (up to --chunk) and writes all of it
// before it reads again. The sink reports when its upstream closes: bytes,
// seconds from the first byte to the end, and Gb/s.
//
// --congestion sets TCP_CONGESTION on every socket (listening, accepted and
// connected), so the baseline runs with the same choice as sluice's links.
//
// Latency mode (--message-bytes N on all four; experiments/latency.py): the
// same four processes move fixed-size messages instead of a byte stream.
//
//   1. sink --listen P3 --message-bytes N --json   reads whole messages, records
//      each one's one-way latency, prints messages, messages_per_s and
//      latency_us {p50, p99, max} when its upstream closes
//   2. relay --listen P2 --connect H:P3 --message-bytes N   reads exactly one
//      message, writes it, reads the next
//   3. relay --listen P1 --connect H:P2 --message-bytes N
//   4. source --connect H:P1 --message-bytes N --rate R --duration S   sends
//      R messages/s (0: as fast as it can) for S seconds, then closes
//
// --batch on all four: the source writes every message due at once (up to
// --chunk bytes), relays copy bytes as they come (as without latency mode),
// the sink reads what is there and takes every whole message in it. Plain
// sockets batching as sluice does when events queue up; without it each
// message costs a read and a write per hop, and four such processes on two
// cores top out well below 100,000 messages/s.
//
// A message (N >= 16 bytes; the rest is filler):
//
//  byte 0                  8                  16          N
//       +------------------+------------------+-----------+
//       | send time, ns    | sequence number  | filler    |
//       +------------------+------------------+-----------+
//
// The send time is CLOCK_MONOTONIC, read just before the write: all four
// processes run on one machine. The sink keeps latencies in sluice's own
// LatencyHistogram (fixed size, 1.6% buckets, nothing allocated per message),
// so both sides of a comparison compute percentiles the same way.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "node/metrics.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string errstr(int e) { return std::strerror(e); }

using sluice::Fd;

struct Options {
  std::string congestion;  // "" or "default": leave the system's choice
  size_t chunk = 32768;
  double connect_timeout_s = 10;
  int sndbuf = 0;  // 0: kernel autotuning
  int rcvbuf = 0;
};

void tune(int fd, const Options& o, const char* what) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    throw Fatal(std::string("setsockopt(TCP_NODELAY) on ") + what + ": " + errstr(errno));
  if (!o.congestion.empty() && o.congestion != "default") {
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o.congestion.data(),
                   static_cast<socklen_t>(o.congestion.size())) != 0)
      throw Fatal("setsockopt(TCP_CONGESTION, \"" + o.congestion + "\") on " + what + ": " +
                  errstr(errno) +
                  " (see /proc/sys/net/ipv4/tcp_available_congestion_control; "
                  "non-root also needs it in tcp_allowed_congestion_control)");
  }
  if (o.sndbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o.sndbuf, sizeof o.sndbuf) != 0)
    throw Fatal(std::string("setsockopt(SO_SNDBUF) on ") + what + ": " + errstr(errno));
  if (o.rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o.rcvbuf, sizeof o.rcvbuf) != 0)
    throw Fatal(std::string("setsockopt(SO_RCVBUF) on ") + what + ": " + errstr(errno));
}

// Splits "host:port"; the host may be empty ("" -> 127.0.0.1).
void split_endpoint(const std::string& ep, std::string* host, std::string* port) {
  auto colon = ep.rfind(':');
  if (colon == std::string::npos || colon + 1 == ep.size())
    throw Fatal("endpoint \"" + ep + "\" is not HOST:PORT");
  *host = ep.substr(0, colon);
  *port = ep.substr(colon + 1);
  if (host->empty()) *host = "127.0.0.1";
}

Fd listen_on(uint16_t port, const Options& o) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.get() < 0) throw Fatal("socket(): " + errstr(errno));
  int one = 1;
  setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // Options set on the listener are inherited by accepted sockets; they are set
  // again after accept() anyway so the choice does not depend on that.
  tune(s.get(), o, "listening socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(port);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    if (e == EADDRINUSE)
      throw Fatal("port " + std::to_string(port) + " is already in use (bind: " + errstr(e) + ")");
    throw Fatal("bind(port " + std::to_string(port) + "): " + errstr(e));
  }
  if (::listen(s.get(), 4) != 0) throw Fatal("listen(port " + std::to_string(port) + "): " + errstr(errno));
  return s;
}

Fd accept_one(const Fd& listener, uint16_t port, const Options& o) {
  for (;;) {
    int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      Fd c(fd);
      tune(c.get(), o, "accepted socket");
      return c;
    }
    if (errno == EINTR) continue;
    throw Fatal("accept(port " + std::to_string(port) + "): " + errstr(errno));
  }
}

// Connects, retrying refused/unreachable for connect_timeout_s so processes
// can start in any order.
Fd connect_to(const std::string& endpoint, const Options& o) {
  std::string host, port;
  split_endpoint(endpoint, &host, &port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    throw Fatal("cannot resolve " + endpoint + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);

  const auto deadline = Clock::now() + std::chrono::duration<double>(o.connect_timeout_s);
  int last = 0;
  for (;;) {
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      Fd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
      if (s.get() < 0) throw Fatal("socket(): " + errstr(errno));
      // Before connect(), so the handshake already uses the chosen congestion control.
      tune(s.get(), o, "connecting socket");
      if (::connect(s.get(), ai->ai_addr, ai->ai_addrlen) == 0) return s;
      last = errno;
      if (last != ECONNREFUSED && last != ENETUNREACH && last != EHOSTUNREACH && last != ETIMEDOUT &&
          last != EINTR)
        throw Fatal("connect to " + endpoint + ": " + errstr(last));
    }
    if (Clock::now() >= deadline)
      throw Fatal("connect to " + endpoint + ": " + errstr(last) + " (kept retrying for " +
                  std::to_string(static_cast<int>(o.connect_timeout_s)) + " s)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Writes all n bytes; false if the peer went away.
bool write_all(int fd, const char* p, size_t n, const char* what) {
  while (n) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      std::fprintf(stderr, "sluice-plainrelay: %s: peer closed (%s)\n", what, errstr(errno).c_str());
      return false;
    }
    throw Fatal(std::string("send to ") + what + ": " + errstr(errno));
  }
  return true;
}

// --epoll: wait as sluice's receive stage waits, in epoll_wait on the
// socket, then read without blocking; otherwise block in recv. The
// difference is what a wake-up through epoll costs (latency.py's
// plain-epoll baseline).
bool g_epoll = false;

void wait_readable(int fd) {
  static thread_local int ep = -1, added = -1;
  if (ep < 0) ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw Fatal(std::string("epoll_create1: ") + errstr(errno));
  epoll_event ev{};
  if (added != fd) {  // one socket in the set at a time
    if (added >= 0) epoll_ctl(ep, EPOLL_CTL_DEL, added, nullptr);
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0 && errno != EEXIST)
      throw Fatal(std::string("epoll_ctl: ") + errstr(errno));
    added = fd;
  }
  while (epoll_wait(ep, &ev, 1, -1) < 0 && errno == EINTR) {
  }
}

// Reads up to n bytes: >0 bytes read, 0 at end of stream.
size_t read_some(int fd, char* p, size_t n, const char* what) {
  for (;;) {
    if (g_epoll) wait_readable(fd);
    ssize_t r = ::recv(fd, p, n, g_epoll ? MSG_DONTWAIT : 0);
    if (r < 0 && g_epoll && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (r >= 0) return static_cast<size_t>(r);
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return 0;
    throw Fatal(std::string("recv from ") + what + ": " + errstr(errno));
  }
}

// Reads exactly n bytes: true with all of them, false at end of stream
// before the first; end of stream inside them is an error (a torn message).
bool read_exact(int fd, char* p, size_t n, const char* what) {
  size_t got = 0;
  while (got < n) {
    size_t r = read_some(fd, p + got, n - got, what);
    if (r == 0) {
      if (got == 0) return false;
      throw Fatal(std::string("stream from ") + what + " ended inside a message (" + std::to_string(got) +
                  " of " + std::to_string(n) + " bytes)");
    }
    got += r;
  }
  return true;
}

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void sleep_until_ns(uint64_t t) {
  timespec ts{static_cast<time_t>(t / 1000000000ull), static_cast<long>(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Latency mode's source. Pacing as sluice's load generator paces `rate`
// (loadgen/generator.cc, Generator::allowed_now): message i is due at
// t0 + i / rate, an absolute schedule, so sleeping late never accumulates as
// drift; when it is behind, every message already due goes out back to back
// (the generator hands all due events out at once), none is skipped; each
// is stamped when it is sent, not when it was due (the generator stamps the
// events it makes with the time it makes them). The generator sleeps toward
// the deadline with a relative sleep; this sleeps with clock_nanosleep
// (TIMER_ABSTIME) on the deadline itself: the same schedule.
//
// One message per write; with `batch`, all the messages due (up to --chunk
// bytes of them, as many as it can at rate 0) in one write, as sluice's send
// stage gathers the events the generator hands out together.
int run_source_latency(const std::string& connect, double duration_s, double rate, size_t message_bytes,
                       bool batch, const Options& o) {
  Fd s = connect_to(connect, o);
  const size_t per_write = batch ? std::max<size_t>(1, o.chunk / message_bytes) : 1;
  std::vector<char> buf(per_write * message_bytes);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(i * 131 + 7);
  const uint64_t t0 = mono_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(duration_s * 1e9);
  auto due_ns = [&](uint64_t i) { return t0 + static_cast<uint64_t>(static_cast<double>(i) * 1e9 / rate); };
  uint64_t seq = 0;
  for (;;) {
    uint64_t now = mono_ns();
    size_t n = per_write;
    if (rate > 0) {
      if (due_ns(seq) >= end) break;
      if (due_ns(seq) > now) {
        sleep_until_ns(due_ns(seq));
        now = mono_ns();
      }
      // Messages due by now (and before the end), this one included.
      size_t due = 1;
      while (due < per_write && due_ns(seq + due) <= now && due_ns(seq + due) < end) ++due;
      n = due;
    }
    if (now >= end) break;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t q = seq + i;
      std::memcpy(buf.data() + i * message_bytes, &now, 8);
      std::memcpy(buf.data() + i * message_bytes + 8, &q, 8);
    }
    if (!write_all(s.get(), buf.data(), n * message_bytes, connect.c_str())) return 1;
    seq += n;
  }
  ::shutdown(s.get(), SHUT_WR);
  char sink[256];
  while (read_some(s.get(), sink, sizeof sink, connect.c_str()) > 0) {
  }
  double secs = static_cast<double>(mono_ns() - t0) / 1e9;
  std::fprintf(stderr, "sluice-plainrelay source: sent %" PRIu64 " messages of %zu bytes in %.3f s\n", seq,
               message_bytes, secs);
  return 0;
}

// Latency mode's relay: one message in, the same message out, nothing held.
// (With --batch a relay copies bytes as they come: run_relay.)
int run_relay_latency(uint16_t listen_port, const std::string& connect, size_t message_bytes,
                      const Options& o) {
  Fd l = listen_on(listen_port, o);
  Fd down = connect_to(connect, o);
  Fd up = accept_one(l, listen_port, o);
  l.reset();
  std::vector<char> msg(message_bytes);
  uint64_t moved = 0;
  while (read_exact(up.get(), msg.data(), msg.size(), "upstream")) {
    if (!write_all(down.get(), msg.data(), msg.size(), connect.c_str())) return 1;
    ++moved;
  }
  ::shutdown(down.get(), SHUT_WR);
  char tmp[256];
  while (read_some(down.get(), tmp, sizeof tmp, connect.c_str()) > 0) {
  }
  std::fprintf(stderr, "sluice-plainrelay relay :%u: moved %" PRIu64 " messages\n", listen_port, moved);
  return 0;
}

// Latency mode's sink: whole messages, one latency each (arrival - send
// time); a sequence number other than the next expected counts as out of
// order. One message per read; with `batch`, what is there (up to --chunk
// bytes), every whole message in it arriving at the time of that read.
int run_sink_latency(uint16_t listen_port, bool json, size_t message_bytes, bool batch, const Options& o) {
  Fd l = listen_on(listen_port, o);
  Fd up = accept_one(l, listen_port, o);
  l.reset();
  std::vector<char> buf(batch ? std::max(o.chunk, message_bytes) : message_bytes);
  sluice::LatencyHistogram lat;
  uint64_t messages = 0, out_of_order = 0;
  uint64_t first = 0;
  size_t have = 0;  // bytes of a message not yet whole, at the front of buf
  for (;;) {
    if (batch) {
      const size_t r = read_some(up.get(), buf.data() + have, buf.size() - have, "upstream");
      if (r == 0) {
        if (have)
          throw Fatal("stream from upstream ended inside a message (" + std::to_string(have) + " of " +
                      std::to_string(message_bytes) + " bytes)");
        break;
      }
      have += r;
    } else {
      if (!read_exact(up.get(), buf.data(), message_bytes, "upstream")) break;
      have = message_bytes;
    }
    const uint64_t now = mono_ns();
    size_t at = 0;
    for (; have - at >= message_bytes; at += message_bytes) {
      uint64_t sent, seq;
      std::memcpy(&sent, buf.data() + at, 8);
      std::memcpy(&seq, buf.data() + at + 8, 8);
      lat.record(now > sent ? now - sent : 0);
      if (seq != messages) ++out_of_order;
      if (messages++ == 0) first = now;
    }
    std::memmove(buf.data(), buf.data() + at, have - at);
    have -= at;
  }
  const uint64_t last = mono_ns();
  const double secs = messages ? static_cast<double>(last - first) / 1e9 : 0.0;
  const double per_s = secs > 0 ? static_cast<double>(messages) / secs : 0.0;
  const double p50 = static_cast<double>(lat.percentile(50)) / 1e3;
  const double p99 = static_cast<double>(lat.percentile(99)) / 1e3;
  const double mx = static_cast<double>(lat.max()) / 1e3;
  if (json)
    std::printf("{\"messages\":%" PRIu64 ",\"message_bytes\":%zu,\"out_of_order\":%" PRIu64
                ",\"seconds\":%.6f,\"messages_per_s\":%.1f,"
                "\"latency_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f}}\n",
                messages, message_bytes, out_of_order, secs, per_s, p50, p99, mx);
  else
    std::printf("sink: %" PRIu64 " messages of %zu bytes in %.3f s = %.0f/s, latency p50 %.1f us, p99 %.1f us, "
                "max %.1f us, %" PRIu64 " out of order\n",
                messages, message_bytes, secs, per_s, p50, p99, mx, out_of_order);
  std::fflush(stdout);
  return messages && out_of_order == 0 ? 0 : 1;
}

int run_source(const std::string& connect, uint64_t max_bytes, double duration_s, const Options& o) {
  Fd s = connect_to(connect, o);
  std::vector<char> chunk(o.chunk);
  // Non-zero, varying content so nothing along the way can shortcut zero pages.
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 131 + 7);
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(duration_s > 0 ? duration_s : 1e9);
  uint64_t sent = 0;
  uint64_t chunks = 0;
  for (;;) {
    if (max_bytes && sent >= max_bytes) break;
    // Checking the clock every 16 chunks keeps it off the per-write cost.
    if ((chunks & 15) == 0 && duration_s > 0 && Clock::now() >= end) break;
    size_t n = o.chunk;
    if (max_bytes && max_bytes - sent < n) n = static_cast<size_t>(max_bytes - sent);
    if (!write_all(s.get(), chunk.data(), n, connect.c_str())) return 1;
    sent += n;
    ++chunks;
  }
  ::shutdown(s.get(), SHUT_WR);
  // Wait for the downstream to close so the bytes are really gone before we exit.
  char sink[256];
  while (read_some(s.get(), sink, sizeof sink, connect.c_str()) > 0) {
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::fprintf(stderr, "sluice-plainrelay source: sent %" PRIu64 " bytes in %.3f s\n", sent, secs);
  return 0;
}

int run_relay(uint16_t listen_port, const std::string& connect, const Options& o) {
  Fd l = listen_on(listen_port, o);
  // Connect downstream first, so a source connecting here finds a full path.
  Fd down = connect_to(connect, o);
  Fd up = accept_one(l, listen_port, o);
  l.reset();
  std::vector<char> buf(o.chunk);
  uint64_t moved = 0;
  for (;;) {
    size_t n = read_some(up.get(), buf.data(), buf.size(), "upstream");
    if (n == 0) break;
    if (!write_all(down.get(), buf.data(), n, connect.c_str())) return 1;
    moved += n;
  }
  ::shutdown(down.get(), SHUT_WR);
  char tmp[256];
  while (read_some(down.get(), tmp, sizeof tmp, connect.c_str()) > 0) {
  }
  std::fprintf(stderr, "sluice-plainrelay relay :%u: moved %" PRIu64 " bytes\n", listen_port, moved);
  return 0;
}

int run_sink(uint16_t listen_port, bool json, const Options& o) {
  Fd l = listen_on(listen_port, o);
  Fd up = accept_one(l, listen_port, o);
  l.reset();
  std::vector<char> buf(o.chunk);
  uint64_t got = 0;
  Clock::time_point first{}, last{};
  for (;;) {
    size_t n = read_some(up.get(), buf.data(), buf.size(), "upstream");
    if (n == 0) break;
    // Timed from the first byte: connection set-up is not throughput.
    if (got == 0) first = Clock::now();
    got += n;
  }
  last = Clock::now();
  double secs = got ? std::chrono::duration<double>(last - first).count() : 0.0;
  double gbps = secs > 0 ? static_cast<double>(got) * 8 / secs / 1e9 : 0.0;
  if (json)
    std::printf("{\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"gbps\":%.4f}\n", got, secs, gbps);
  else
    std::printf("sink: %" PRIu64 " bytes in %.3f s = %.3f Gb/s\n", got, secs, gbps);
  std::fflush(stdout);
  return got ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sluice-plainrelay: plain TCP source -> relay -> relay -> sink baseline"};
  app.require_subcommand(1);
  Options o;
  auto add_common = [&](CLI::App* c) {
    c->add_option("--chunk", o.chunk, "bytes per write (source) / largest read (relay, sink)")
        ->check(CLI::Range(size_t{1}, size_t{1} << 30));
    c->add_option("--congestion", o.congestion,
                  "TCP_CONGESTION on every socket (reno, bbr, cubic, ...; 'default' = leave it)");
    c->add_option("--connect-timeout", o.connect_timeout_s, "seconds to keep retrying a refused connect");
    c->add_option("--sndbuf", o.sndbuf, "SO_SNDBUF (0: kernel autotuning)");
    c->add_option("--rcvbuf", o.rcvbuf, "SO_RCVBUF (0: kernel autotuning)");
  };

  std::string connect;
  uint16_t listen_port = 0;
  uint64_t bytes = 0;
  double duration = 0;
  bool json = false;
  size_t message_bytes = 0;  // > 0: latency mode
  double rate = 0;
  bool batch = false;
  auto add_message = [&](CLI::App* c) {
    c->add_option("--message-bytes", message_bytes,
                  "latency mode: fixed-size messages of this many bytes (>= 16), one read and one write each; "
                  "the same on all four processes")
        ->check(CLI::Range(size_t{16}, size_t{1} << 24));
    c->add_flag("--epoll", g_epoll,
                "wait for each read in epoll_wait, then read without blocking (as sluice's receive "
                "stage does), instead of blocking in recv");
    c->add_flag("--batch", batch,
                "latency mode: read and write what is there, up to --chunk bytes (the source: every message "
                "due in one write), instead of one message at a time");
  };

  auto* src = app.add_subcommand("source", "write chunks to --connect for --duration s or --bytes");
  src->add_option("--connect", connect, "HOST:PORT of the first relay (or the sink)")->required();
  src->add_option("--bytes", bytes, "stop after this many bytes (0: no limit)");
  src->add_option("--duration", duration, "stop after this many seconds (0: no limit)");
  src->add_option("--rate", rate, "latency mode: messages per second (0: as fast as it can)")
      ->check(CLI::NonNegativeNumber);
  add_message(src);
  add_common(src);

  auto* rel = app.add_subcommand("relay", "accept one connection on --listen, copy it to --connect");
  rel->add_option("--listen", listen_port, "port to listen on")->required();
  rel->add_option("--connect", connect, "HOST:PORT downstream")->required();
  add_message(rel);
  add_common(rel);

  auto* snk = app.add_subcommand("sink", "accept one connection, count bytes, report at end");
  snk->add_option("--listen", listen_port, "port to listen on")->required();
  snk->add_flag("--json", json,
                "print {\"bytes\",\"seconds\",\"gbps\"} on stdout (latency mode: {\"messages\", "
                "\"messages_per_s\", \"latency_us\", ...})");
  add_message(snk);
  add_common(snk);

  CLI11_PARSE(app, argc, argv);

  try {
    if (message_bytes) {
      if (*src) {
        if (bytes) throw Fatal("--bytes is not for latency mode (--message-bytes): give --duration");
        return run_source_latency(connect, duration > 0 ? duration : 5, rate, message_bytes, batch, o);
      }
      if (*rel) return batch ? run_relay(listen_port, connect, o) : run_relay_latency(listen_port, connect, message_bytes, o);
      if (*snk) return run_sink_latency(listen_port, json, message_bytes, batch, o);
    }
    if (rate > 0 || batch) throw Fatal("--rate and --batch are for latency mode: give --message-bytes too");
    if (*src) {
      if (bytes == 0 && duration <= 0) duration = 5;
      return run_source(connect, bytes, duration, o);
    }
    if (*rel) return run_relay(listen_port, connect, o);
    if (*snk) return run_sink(listen_port, json, o);
  } catch (const Fatal& e) {
    std::fprintf(stderr, "sluice-plainrelay %s: error: %s\n", app.get_subcommands().front()->get_name().c_str(),
                 e.what());
    return 2;
  }
  return 1;
}

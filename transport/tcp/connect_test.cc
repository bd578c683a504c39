// Connection handling: retry until the listener is up, a port in use named
// at bind, strangers refused while the real peer gets in, shutdown.
#include "transport/tcp/connect.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#ifndef TCP_RTO_MAX_MS  // linux/tcp.h from 6.15; Debian 12's headers predate it
#define TCP_RTO_MAX_MS 44
#endif

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

namespace sluice::tcp {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Waits, without a deadline, until `n` reaches `want`: tests order events by
// what happened, never by how long something took.
void wait_for(const std::atomic<int>& n, int want) {
  while (n.load() < want) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// What the carrier is promised of every fd it gets: blocking, TCP_NODELAY,
// reads without a timeout.
void expect_link_socket(int fd) {
  EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  ASSERT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0);
  timeval tv{1, 1};
  len = sizeof tv;
  ASSERT_EQ(::getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len), 0);
  EXPECT_EQ(tv.tv_sec, 0);
  EXPECT_EQ(tv.tv_usec, 0);
}

// The handshake of these tests: one byte, 'Y' is the real peer.
Verdict one_byte(int fd, const std::string&, std::string* why) {
  char c = 0;
  if (::recv(fd, &c, 1, 0) != 1) {
    *why = "said nothing";
    return Verdict::kRefuse;
  }
  if (c != 'Y') {
    *why = "a stranger";
    return Verdict::kRefuse;
  }
  return Verdict::kAccept;
}

TEST(Connect, RetriesUntilTheListenerIsUp) {
  // Find a free port, then listen on it only after the connect has started.
  Status st;
  uint16_t port;
  {
    auto probe = Acceptor::bind("127.0.0.1", 0, {}, "probe", &st);
    ASSERT_TRUE(probe) << st.message();
    port = probe->port();
  }
  std::unique_ptr<Acceptor> late;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Status s;
    late = Acceptor::bind("127.0.0.1", port, {}, "late", &s);
    EXPECT_TRUE(late) << s.message();
  });
  int fd = -1;
  st = connect_with_retry("127.0.0.1", port, 10000, {}, "link a -> b", &fd);
  t.join();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_GE(fd, 0);
  expect_link_socket(fd);
  ::close(fd);
}

// Both ends of a link made with `so`: *fd connected, *got accepted (after
// one byte that one_byte accepts).
void connected(const SocketOptions& so, int* fd, int* got) {
  Status st;
  auto a = Acceptor::bind("127.0.0.1", 0, so, "node-b", &st);
  ASSERT_TRUE(a) << st.message();
  Status ast;
  std::thread t([&] { *got = a->accept(one_byte, &ast); });
  st = connect_with_retry("127.0.0.1", a->port(), 10000, so, "link a -> b", fd);
  if (st.ok()) EXPECT_EQ(::send(*fd, "Y", 1, 0), 1);
  else a->shutdown();
  t.join();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_GE(*got, 0) << ast.message();
}

// tcp_rto_max_ms: both ends of a link cap TCP's retransmission back-off
// (TCP_RTO_MAX_MS), so a wire that was down carries again soon after it is
// back; 0 leaves the system's cap. A kernel before 6.15 has no such option:
// the link still connects, and the value is not checked.
TEST(Connect, BothEndsCapTheRetransmissionTimeout) {
  auto rto_max = [](int fd) {
    int v = -1;
    socklen_t len = sizeof v;
    return ::getsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &v, &len) == 0 ? v : -1;
  };
  for (uint32_t cap : {1500u, 0u}) {
    SocketOptions so;
    so.rto_max_ms = cap;
    int fd = -1, got = -1;
    ASSERT_NO_FATAL_FAILURE(connected(so, &fd, &got));
    const int system = rto_max(got);
    if (system < 0) {
      std::printf("this kernel has no TCP_RTO_MAX_MS (Linux 6.15+): values not checked\n");
    } else if (cap) {
      EXPECT_EQ(rto_max(fd), static_cast<int>(cap));
      EXPECT_EQ(rto_max(got), static_cast<int>(cap));
    } else {
      EXPECT_GT(rto_max(fd), 1500);  // the system's, 120 s by default
      EXPECT_GT(rto_max(got), 1500);
    }
    ::close(fd);
    ::close(got);
  }
}

// tcp_keepalive_s: both ends of a link probe an idle peer. Its process died
// and its reset never came (lost in a cut, or its host rebooted): made here
// by closing the accepted end in TCP_REPAIR mode, which sends nothing. With
// keepalive the connecting end hears the peer's kernel reset the connection
// at the first probe; without it, it waits on as if the peer were there.
TEST(Connect, AnIdlePeerThatVanishedUnseenIsFoundByTheKeepalive) {
  for (uint32_t keepalive : {1u, 0u}) {
    SocketOptions so;
    so.keepalive_s = keepalive;
    int fd = -1, got = -1;
    ASSERT_NO_FATAL_FAILURE(connected(so, &fd, &got));
    for (int end : {fd, got}) {
      int on = -1, idle = -1;
      socklen_t len = sizeof on;
      ASSERT_EQ(::getsockopt(end, SOL_SOCKET, SO_KEEPALIVE, &on, &len), 0);
      EXPECT_EQ(on != 0, keepalive != 0);
      len = sizeof idle;
      if (keepalive) {
        ASSERT_EQ(::getsockopt(end, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &len), 0);
        EXPECT_EQ(idle, static_cast<int>(keepalive));
      }
    }
    const int repair = 1;
    if (::setsockopt(got, IPPROTO_TCP, TCP_REPAIR, &repair, sizeof repair) != 0) {
      ::close(fd);
      ::close(got);
      GTEST_SKIP() << "TCP_REPAIR needs CAP_NET_ADMIN: " << std::strerror(errno);
    }
    ::close(got);  // in repair mode: no FIN, no reset
    pollfd p{fd, POLLIN, 0};
    const auto t0 = std::chrono::steady_clock::now();
    const int r = ::poll(&p, 1, keepalive ? 6000 : 2500);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (keepalive) {
      ASSERT_EQ(r, 1) << "no reset after " << waited << " s";
      char c;
      EXPECT_EQ(::recv(fd, &c, 1, MSG_DONTWAIT), -1);
      EXPECT_EQ(errno, ECONNRESET) << std::strerror(errno);
      EXPECT_LT(waited, 4.0);
    } else {
      EXPECT_EQ(r, 0) << "without keepalive the vanished peer is not heard of";
    }
    ::close(fd);
  }
}

// A finished receiver waits for its last bytes to be acknowledged before it
// closes (wait_acknowledged), but not for a peer that reset the connection:
// a sender killed after its END answers the last credits with a reset, and
// the error it left was taken by a read already. Nothing will acknowledge
// those bytes; a node waited out kSettleMs (3 s) for them at its exit.
TEST(Connect, AFinishedReceiverDoesNotWaitOnAPeerThatReset) {
  int fd = -1, got = -1;
  ASSERT_NO_FATAL_FAILURE(connected({}, &fd, &got));
  ::close(fd);  // the sender's end goes (FIN); what comes after is reset
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(::send(got, "credits!", 8, MSG_NOSIGNAL), 8);  // answered by a reset
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int queued = -1;
  ASSERT_EQ(::ioctl(got, SIOCOUTQ, &queued), 0);
  EXPECT_GT(queued, 0) << "the reset bytes still count as sent and not acknowledged";
  int err = 0;
  socklen_t len = sizeof err;
  ASSERT_EQ(::getsockopt(got, SOL_SOCKET, SO_ERROR, &err, &len), 0);  // taken, as a read takes it
  EXPECT_NE(err, 0) << "no reset came";
  ::shutdown(got, SHUT_WR);
  const auto t0 = std::chrono::steady_clock::now();
  wait_acknowledged(got, kSettleMs);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(waited, 0.5);
  ::close(got);
}

TEST(Connect, NobodyListeningFailsNamingTheAddress) {
  Status st;
  uint16_t port;
  {
    auto probe = Acceptor::bind("127.0.0.1", 0, {}, "probe", &st);
    ASSERT_TRUE(probe);
    port = probe->port();
  }
  int fd = -1;
  st = connect_with_retry("127.0.0.1", port, 100, {}, "link a -> b", &fd);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("link a -> b: connect to 127.0.0.1:" + std::to_string(port), 0), 0u)
      << st.message();
  EXPECT_HAS(st.message(), "Connection refused");
}

// A socket listening on loopback (an ephemeral port, in *a) with `backlog`,
// that nothing accepts from: the kernel alone answers. -1 if it failed.
int raw_listener(int backlog, sockaddr_in* a) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  *a = sockaddr_in{};
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof *a;
  if (bind(fd, reinterpret_cast<sockaddr*>(a), sizeof *a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(a), &len) != 0 || listen(fd, backlog) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A stop ends the retries at once, and an attempt that waits too: a
// listener whose accept queue is full drops the SYNs (Linux), so a connect
// to it waits out its deadline unless something cuts it short.
TEST(Connect, AStopEndsTheRetriesAndAWaitingAttempt) {
  sockaddr_in a{};
  const int lfd = raw_listener(0, &a);
  ASSERT_GE(lfd, 0);
  const uint16_t port = ntohs(a.sin_port);
  std::vector<int> fillers;  // the queue holds one; a few more to be sure
  for (int i = 0; i < 3; ++i) {
    int f = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void)!connect(f, reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(f);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int fd = -1;
  Status st = connect_with_retry("127.0.0.1", port, 300, {}, "probe", &fd);
  ASSERT_FALSE(st.ok()) << "the full queue took a connection: this test's premise is gone";
  EXPECT_HAS(st.message(), "timed out");

  std::atomic<bool> stop{false};
  SocketOptions so;
  so.stop = &stop;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.store(true);
  });
  st = connect_with_retry("127.0.0.1", port, 10000, so, "link a -> b", &fd);
  stopper.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "link a -> b: stopped while connecting to 127.0.0.1:" + std::to_string(port));
  EXPECT_LT(took, 2.0);  // against its 10 s deadline

  // Already set: no connection comes back, even from a listener that
  // would take it.
  close(lfd);
  for (int f : fillers) close(f);
  auto l = Acceptor::bind("127.0.0.1", 0, {}, "node-b", &st);
  ASSERT_TRUE(l);
  fd = -1;
  st = connect_with_retry("127.0.0.1", l->port(), 10000, so, "link a -> b", &fd);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(fd, -1);
  EXPECT_HAS(st.message(), "no frame was sent");
}

// A receiver that took the connection but never answers the Hello (a node
// past its last link, still running) holds a sender for connect_timeout_ms;
// a stop ends the wait at once.
TEST(Connect, AStopEndsTheWaitForAHelloReply) {
  sockaddr_in a{};
  const int lfd = raw_listener(4, &a);  // the kernel takes the connection; nobody answers
  ASSERT_GE(lfd, 0);
  std::atomic<bool> stop{false};
  LinkOptions o;
  o.from = "a";
  o.to = "b";
  o.port = ntohs(a.sin_port);
  o.connect_timeout_ms = 10000;
  o.stop = &stop;
  int fd = -1;
  Status st = connect_with_retry("127.0.0.1", o.port, 1000, {}, "link a -> b", &fd);
  ASSERT_TRUE(st.ok()) << st.message();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.store(true);
  });
  const auto t0 = std::chrono::steady_clock::now();
  ReplyInfo reply;
  st = ask_hello(fd, o, "link a -> b", &reply);
  stopper.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "link a -> b: stopped while waiting for the HelloReply");
  EXPECT_LT(took, 2.0);  // against connect_timeout_ms' 10 s
  ::close(fd);
  ::close(lfd);
}

TEST(Connect, UnknownHostIsNamed) {
  int fd = -1;
  Status st = connect_with_retry("no-such-host.invalid", 1, 100, {}, "link a -> b", &fd);
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "cannot resolve no-such-host.invalid");
}

TEST(Acceptor, APortInUseFailsAtBind) {
  Status st;
  auto a = Acceptor::bind("127.0.0.1", 0, {}, "node-a", &st);
  ASSERT_TRUE(a);
  auto b = Acceptor::bind("127.0.0.1", a->port(), {}, "node-b", &st);
  EXPECT_FALSE(b);
  EXPECT_HAS(st.message(), "node-b: cannot listen on 127.0.0.1:" + std::to_string(a->port()));
  EXPECT_HAS(st.message(), "in use");
}

// Port 0 is given from the ephemeral range: a port there in use may be an
// outgoing connection's, and the error says so. Below the range it does not.
TEST(Acceptor, APortInUseInTheEphemeralRangeSaysWhatAvoidsIt) {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  uint32_t lo = 0, hi = 0;
  if (!(f >> lo >> hi)) GTEST_SKIP() << "no ip_local_port_range here";
  Status st;
  auto a = Acceptor::bind("127.0.0.1", 0, {}, "node-a", &st);
  ASSERT_TRUE(a);
  ASSERT_GE(a->port(), lo);
  EXPECT_FALSE(Acceptor::bind("127.0.0.1", a->port(), {}, "node-b", &st));
  EXPECT_HAS(st.message(), "in this host's ephemeral range " + std::to_string(lo) + "-" + std::to_string(hi));
  EXPECT_HAS(st.message(), "a base_port below " + std::to_string(lo));
  if (lo <= 1024) GTEST_SKIP() << "no unprivileged port below the range";
  std::unique_ptr<Acceptor> below;
  for (uint32_t p = lo - 1; !below && p > 1024 && p + 500 > lo; --p)
    below = Acceptor::bind("127.0.0.1", static_cast<uint16_t>(p), {}, "node-a", &st);
  ASSERT_TRUE(below) << "no free port below " << lo;
  EXPECT_FALSE(Acceptor::bind("127.0.0.1", below->port(), {}, "node-b", &st));
  EXPECT_HAS(st.message(), "in use");
  EXPECT_EQ(st.message().find("ephemeral"), std::string::npos) << st.message();
}

TEST(Acceptor, StrangersAreRefusedAndTheRealPeerGetsInWhileASilentOneWaits) {
  Status st;
  SocketOptions so;
  so.handshake_timeout_ms = 20000;  // a silent stranger would hold a serial accept 20 s
  auto a = Acceptor::bind("127.0.0.1", 0, so, "node-a", &st);
  ASSERT_TRUE(a);
  std::atomic<int> refused{0}, refused_when_accepted{-1};
  Handshake hs = [&](int fd, const std::string& peer, std::string* why) {
    Verdict v = one_byte(fd, peer, why);
    if (v == Verdict::kRefuse) refused.fetch_add(1);
    else refused_when_accepted = refused.load();
    return v;
  };
  int got = -1;
  Status ast;
  std::thread t([&] { got = a->accept(hs, &ast); });
  int silent = raw_connect(a->port());  // connects and says nothing
  int garbage = raw_connect(a->port());
  ASSERT_EQ(::send(garbage, "G", 1, 0), 1);
  wait_for(refused, 1);  // the garbage one is out; the silent one connected before it
  int real = raw_connect(a->port());
  ASSERT_EQ(::send(real, "Y", 1, 0), 1);
  t.join();
  ASSERT_GE(got, 0) << ast.message();
  // Accepted while the silent stranger was still inside its 20 s deadline:
  // only the garbage one had been refused by then, by what it said. (Leaving
  // accept() then ends the silent one's handshake too.)
  EXPECT_EQ(refused_when_accepted.load(), 1);
  EXPECT_EQ(refused.load(), 2);
  expect_link_socket(got);
  // The accepted fd is the real peer's: what it sends arrives.
  ASSERT_EQ(::send(real, "Z", 1, 0), 1);
  char c = 0;
  EXPECT_EQ(::recv(got, &c, 1, 0), 1);
  EXPECT_EQ(c, 'Z');
  for (int fd : {silent, garbage, real, got}) ::close(fd);
}

TEST(Acceptor, AcceptsAgainAfterReturning) {
  // Each accept() leaves nothing armed behind it (its handshake is gone once it
  // returns); the next one takes the next peer, strangers still refused.
  Status st;
  auto a = Acceptor::bind("127.0.0.1", 0, {}, "node-a", &st);
  ASSERT_TRUE(a);
  std::atomic<int> refused{0};
  for (int round = 0; round < 3; ++round) {
    Handshake hs = [&](int fd, const std::string& peer, std::string* why) {
      Verdict v = one_byte(fd, peer, why);
      if (v == Verdict::kRefuse) refused.fetch_add(1);
      return v;
    };
    int got = -1;
    Status ast;
    std::thread t([&] { got = a->accept(hs, &ast); });
    int stranger = raw_connect(a->port());
    ASSERT_EQ(::send(stranger, "S", 1, 0), 1);
    wait_for(refused, round + 1);
    int real = raw_connect(a->port());
    ASSERT_EQ(::send(real, "Y", 1, 0), 1);
    t.join();
    ASSERT_GE(got, 0) << ast.message();
    ASSERT_EQ(::send(real, "Z", 1, 0), 1);
    char c = 0;
    EXPECT_EQ(::recv(got, &c, 1, 0), 1);
    EXPECT_EQ(c, 'Z');
    for (int fd : {stranger, real, got}) ::close(fd);
  }
  EXPECT_EQ(refused.load(), 3);
}

TEST(Acceptor, ShutdownUnblocksAccept) {
  Status st;
  auto a = Acceptor::bind("127.0.0.1", 0, {}, "node-a", &st);
  ASSERT_TRUE(a);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    a->shutdown();
  });
  int fd = a->accept([](int, const std::string&, std::string*) { return Verdict::kAccept; }, &st);
  t.join();
  EXPECT_EQ(fd, -1);
  EXPECT_HAS(st.message(), "shut down");
  // Shutdown is for good: a later accept returns at once.
  fd = a->accept([](int, const std::string&, std::string*) { return Verdict::kAccept; }, &st);
  EXPECT_EQ(fd, -1);
  EXPECT_HAS(st.message(), "shut down");
}

}  // namespace
}  // namespace sluice::tcp

// A node with two instances: one upstream link shakes hands properly and then
// sends a frame with a bad magic; the other carries a real stream. The bad
// link is closed with an error naming its peer; the other link delivers every
// tuple to the sink.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "graph/config.h"
#include "loadgen/generator.h"
#include "node/node.h"
#include "runtime/process.h"
#include "transport/handshake.h"
#include "transport/link.h"
#include "transport/test_util.h"

namespace sluice {
namespace {

// guarantee: none: these links are driven by hand, and a test that is
// about acks turns them on itself.
Deployment two_instances(uint16_t port) {
  Deployment d;
  std::string yaml = "preset: tcp-opt\nguarantee: none\ntuple_bytes: 64\nevent_bytes: 2048\ntuples: 20000\n"
                     "instances: 2\nprogress_s: 0\nconnect_timeout_ms: 5000\nbase_port: " +
                     std::to_string(port) +
                     "\nprocesses:\n  - {name: loadgen, role: loadgen}\n"
                     "  - {name: node-a, role: node}\n  - {name: sink, role: sink}\n";
  Status st = parse_deployment(yaml, "links_test", {}, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

int connect_to(uint16_t port) {
  for (int i = 0; i < 200; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return -1;
}

// A raw upstream: shakes hands as a sender with options `o` does (its acks
// included), then sends frames by hand and reads the credit messages that
// come back.
class RawSender {
 public:
  ~RawSender() {
    if (fd_ >= 0) close(fd_);
  }
  // True once the receiver on `port` accepted the Hello.
  bool connect(const LinkOptions& o, uint16_t port) {
    fd_ = connect_to(port);
    if (fd_ < 0) return false;
    std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
    size_t len = 0;
    uint32_t body = 0;
    ReplyInfo r;
    return encode_hello(hello_from_options(o), buf, sizeof buf, &len).ok() && put(buf, len) &&
           get(buf, kHandshakePrefixBytes) && decode_handshake_prefix(buf, &body).ok() &&
           get(buf, body) && decode_reply(buf, body, &r).ok() && r.accepted;
  }
  // A frame, header and payload; `then`: another written with it, at once.
  void frame(FrameKind kind, const std::byte* p, uint32_t bytes, uint32_t events,
             const std::vector<std::byte>& then = {}) {
    std::vector<std::byte> w(sizeof(FrameHeader) + bytes);
    const FrameHeader h{kFrameMagic, static_cast<uint16_t>(kind), 0, bytes, events};
    std::memcpy(w.data(), &h, sizeof h);
    std::memcpy(w.data() + sizeof h, p, bytes);
    w.insert(w.end(), then.begin(), then.end());
    put(w.data(), w.size());
  }
  // Reads credit messages until `frames` are acknowledged (true), or until
  // the receiver closes (false when `frames` is not reached), at most 10 s.
  bool read_acks(uint64_t frames) {
    for (int i = 0; i < 1000 && acked_ < frames; ++i) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      CreditFrame c;
      if (!get(&c, sizeof c)) return false;
      acked_ = std::max(acked_, c.acked);
    }
    return acked_ >= frames;
  }
  uint64_t acked() const { return acked_; }

 private:
  bool put(const void* p, size_t n) { return write(fd_, p, n) == static_cast<ssize_t>(n); }
  bool get(void* p, size_t n) {
    for (size_t got = 0; got < n;) {
      const ssize_t r = read(fd_, static_cast<char*>(p) + got, n - got);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
  uint64_t acked_ = 0;
};

// A load generator and a sink, 20,000 tuples; `more`: YAML lines to add.
Deployment two_processes(uint16_t port, const std::string& more) {
  Deployment d;
  const std::string yaml = "preset: tcp-opt\nguarantee: none\ntuple_bytes: 64\nevent_bytes: 2048\ntuples: 20000\n"
                           "progress_s: 0\n" + more + "base_port: " + std::to_string(port) +
                           "\nprocesses:\n  - {name: loadgen, role: loadgen}\n  - {name: sink, role: sink}\n";
  Status st = parse_deployment(yaml, "links_test", {}, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

// A connection to link 0 of instance 0 that shook hands as its sender does,
// then holds the link without a frame (a sender's previous run, as its
// receiver sees it). -1 if it could not.
int shake_hands(const Deployment& d) {
  int fd = connect_to(d.link_port(0, 0));
  if (fd < 0) return -1;
  std::byte buf[4096];
  size_t len = 0;
  if (!encode_hello(hello_from_options(d.link_options(0, 0)), buf, sizeof buf, &len).ok() ||
      write(fd, buf, len) != ssize_t(len) || read(fd, buf, sizeof buf) <= 0) {  // accepted
    close(fd);
    return -1;
  }
  return fd;
}

// Runs process `index` of `d` with a stop set after 300 ms: how long it
// took, and its status.
double stopped_after_300ms(const Deployment& d, size_t index, Status* st) {
  std::atomic<bool> stop{false};
  ProcessSummary sum;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] { *st = run_process(d, index, &stop, &sum); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop.store(true);
  t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(Links, ABadFrameOnOneLinkLeavesTheOtherServing) {
  const uint16_t port = 29000;
  Deployment d = two_instances(port);
  ProcessSummary node_sum, sink_sum;
  Status node_st, sink_st;
  // Two processes in one test binary share spdlog's registry, which is made on
  // first use. Make it here, before the threads: libspdlog is not built for
  // ThreadSanitizer, which then cannot see the guard of that first use and
  // reports the two threads' first log lines as a race (seen in CI).
  spdlog::default_logger();
  std::thread sink([&] { sink_st = run_process(d, 2, nullptr, &sink_sum); });
  std::thread node([&] { node_st = run_process(d, 1, nullptr, &node_sum); });

  // Link 0: a proper handshake, then garbage where a frame header belongs.
  const int fd = shake_hands(d);
  ASSERT_GE(fd, 0);
  FrameHeader bad{0xBADF00D, uint16_t(FrameKind::kEvents), 0, 64, 1};
  ASSERT_EQ(write(fd, &bad, sizeof bad), ssize_t(sizeof bad));

  // Link 1: a real generator and sender, as the load generator would run it.
  auto gen = std::make_unique<Generator>(d, 1);
  TransportContext ctx;
  auto dest = std::make_unique<NetDestination>(std::vector<LinkOptions>{d.link_options(0, 1)},
                                               Split::kStream, gen->pool(), ctx);
  InstanceConfig ic;
  ic.index = 1;
  Instance lg(ic, std::move(gen), std::move(dest), OperatorChain(), [] {});
  lg.start();
  lg.join();
  EXPECT_TRUE(lg.status().ok()) << lg.status().message();

  node.join();
  close(fd);
  sink.join();

  EXPECT_FALSE(node_st.ok());
  EXPECT_NE(node_st.message().find("magic"), std::string::npos) << node_st.message();
  EXPECT_NE(node_st.message().find("loadgen"), std::string::npos) << node_st.message();
  // Instance 1 went through the node and reached the sink whole.
  EXPECT_EQ(sink_sum.tuples_in, 20000u) << sink_st.message();
  EXPECT_EQ(sink_sum.lost, 0u);
  EXPECT_EQ(sink_sum.corrupt, 0u);
  // The sink's link 0 was cut short without END, and it says so.
  EXPECT_FALSE(sink_st.ok());
}

// With acks, a sender that starts while its receiver still holds the link
// of the sender's previous run (a process killed and restarted: the receiver
// first drains that link) is refused as busy; it tries again, and once the
// old link is gone it connects and delivers everything.
TEST(Links, ARestartedSenderWaitsWhileItsReceiverHoldsItsPreviousLink) {
  const Deployment d = two_processes(29100, "acks: on\nconnect_timeout_ms: 5000\n");
  spdlog::default_logger();  // before the threads (see above)
  ProcessSummary sink_sum;
  Status sink_st;
  std::thread sink([&] { sink_st = run_process(d, 1, nullptr, &sink_sum); });
  const int fd = shake_hands(d);  // the previous run
  ASSERT_GE(fd, 0);

  // The new run starts meanwhile; the old one dies 300 ms later.
  ProcessSummary lg_sum;
  Status lg_st;
  std::thread lg([&] { lg_st = run_process(d, 0, nullptr, &lg_sum); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  close(fd);
  lg.join();
  sink.join();
  EXPECT_TRUE(lg_st.ok()) << lg_st.message();
  EXPECT_TRUE(sink_st.ok()) << sink_st.message();
  EXPECT_EQ(sink_sum.tuples_in, 20000u);
  EXPECT_EQ(sink_sum.lost, 0u);
}

// A load generator asked to stop while its receiver refuses it as busy (one
// restarted after its END, whose node had its stream already) gives up at
// once: it sent nothing. Trying again for reconnect_timeout_ms, it held its
// supervisor's stop for the grace and was killed (5 s of a run for nothing).
// Another started after the old link is gone delivers everything.
TEST(Links, ASenderStoppedWhileItsReceiverRefusesItAsBusyGivesUpAtOnce) {
  const Deployment d =
      two_processes(29160, "acks: on\nconnect_timeout_ms: 5000\nreconnect_timeout_ms: 10000\n");
  spdlog::default_logger();  // before the threads (see above)
  ProcessSummary sink_sum;
  Status sink_st;
  std::thread sink([&] { sink_st = run_process(d, 1, nullptr, &sink_sum); });
  const int fd = shake_hands(d);  // the previous run's link, held
  ASSERT_GE(fd, 0);

  Status lg_st;
  const double took = stopped_after_300ms(d, 0, &lg_st);
  EXPECT_FALSE(lg_st.ok());
  // (Between tries, or in one: the stop cuts that short too.)
  EXPECT_NE(lg_st.message().find("stopped while"), std::string::npos) << lg_st.message();
  EXPECT_NE(lg_st.message().find("no frame was sent"), std::string::npos) << lg_st.message();
  EXPECT_LT(took, 3.0);  // against reconnect_timeout_ms' 10 s

  close(fd);
  ProcessSummary lg2_sum;
  Status lg2_st;
  std::thread lg2([&] { lg2_st = run_process(d, 0, nullptr, &lg2_sum); });
  lg2.join();
  sink.join();
  EXPECT_TRUE(lg2_st.ok()) << lg2_st.message();
  EXPECT_TRUE(sink_st.ok()) << sink_st.message();
  EXPECT_EQ(sink_sum.tuples_in, 20000u);
  EXPECT_EQ(sink_sum.lost, 0u);
}

// A process asked to stop before its downstream is up gives up connecting at
// once, not after connect_timeout_ms.
TEST(Links, ASenderStoppedBeforeItsReceiverIsUpGivesUpAtOnce) {
  const Deployment d = two_processes(29170, "connect_timeout_ms: 10000\n");
  spdlog::default_logger();
  Status lg_st;
  const double took = stopped_after_300ms(d, 0, &lg_st);
  EXPECT_FALSE(lg_st.ok());
  EXPECT_NE(lg_st.message().find("stopped while connecting to 127.0.0.1:" +
                                 std::to_string(d.link_port(0, 0))),
            std::string::npos)
      << lg_st.message();
  EXPECT_NE(lg_st.message().find("no frame was sent"), std::string::npos) << lg_st.message();
  EXPECT_LT(took, 3.0);  // against connect_timeout_ms' 10 s
}

// With acks, a node's receive stage asleep on its link, and a slot it handed
// out released by another thread (the send stage, as an acknowledgement from
// downstream comes): the frame is acknowledged upstream at once, so the
// upstream drops its copy. One slot back is enough to wake the stage for
// it (its wake threshold is what it has out, when that is under a credit
// batch), though no frame comes and no credit batch is complete.
TEST(Links, ASlotReleasedWhileTheReceiveStageSleepsIsAcknowledgedAtOnce) {
  LinkOptions o = testing::loopback_options(Encoding::kSg);
  o.port = 29140;
  o.acks = true;
  o.slots = 8;
  o.slot_bytes = 4096;
  TransportContext rx_ctx, tx_ctx;
  Status st;
  auto src = NetSource::make({o}, rx_ctx, &st);
  ASSERT_TRUE(src) << st.message();

  SlotPool tx_pool(4, o.slot_bytes);
  std::atomic<bool> sent{false}, dropped{false}, finish{false};
  Status tx_st;
  std::thread upstream([&] {
    auto tx = make_sender(o, tx_pool, tx_ctx, &tx_st);
    if (!tx) return;
    const uint32_t slot = tx_pool.try_acquire();
    const size_t bytes = testing::write_event(tx_pool.slot(slot), 0, 0, 0, 4, o.tuple_bytes);
    Descriptor d{slot, 0, static_cast<uint32_t>(bytes), 1, 4, 0};
    tx_st = tx->send({&d, 1});
    sent = true;
    // Idle, as a send stage is: reads what comes back until its copy is dropped.
    while (tx_st && !finish) {
      if (tx->busy()) tx_st = tx->progress();
      if (!tx->busy()) dropped = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::byte eos[64];
    const size_t n = testing::write_end(eos, 0, 4, 1);
    if (tx_st) tx_st = tx->end(eos, static_cast<uint32_t>(n));
    if (tx_st) tx_st = tx->close();
  });

  ASSERT_TRUE(src->start().ok());
  Descriptor got[8];
  size_t n = 0;
  while (n == 0) ASSERT_TRUE(src->next(got, &n).ok());
  ASSERT_EQ(n, 1u);
  ASSERT_EQ(got[0].tuples, 4u);
  EXPECT_FALSE(dropped.load());  // held: it was not acknowledged yet

  // The stage goes back to sleep on its link; the slot comes back meanwhile.
  std::atomic<size_t> end_n{0};
  Descriptor end[8];
  Status next_st;
  std::thread stage([&] {
    size_t k = 0;
    while (k == 0 && next_st.ok()) next_st = src->next(end, &k);
    end_n = k;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(end_n.load(), 0u);  // still asleep: nothing more came
  ASSERT_TRUE(src->pool().release(got[0].slot).ok());
  for (int i = 0; i < 2000 && !dropped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(dropped.load()) << "the upstream still holds its copy 2 s after the slot came back";
  EXPECT_EQ(end_n.load(), 0u);  // and the stage had nothing to hand out

  // END: the stage hands it out; its slot back, the link finishes.
  finish = true;
  stage.join();
  ASSERT_TRUE(next_st.ok()) << next_st.message();
  ASSERT_EQ(end_n.load(), 1u);
  EXPECT_TRUE(end[0].flags & kDescEnd);
  ASSERT_TRUE(src->pool().release(end[0].slot).ok());
  size_t k = 1;
  while (k != 0) ASSERT_TRUE(src->next(end, &k).ok());
  upstream.join();
  EXPECT_TRUE(tx_st.ok()) << tx_st.message();
}

// A node that keeps no copies (AckLedger): its sender claims a frame and
// lets the slot go; the slot coming back does not acknowledge the frame,
// the claim's acknowledgement does, and it wakes the sleeping receive stage
// to send it upstream. Asked to, the stage breaks its link: the upstream
// sends the frame again, and the descriptor handed out before is stale.
TEST(Links, AClaimedFrameIsAcknowledgedUpstreamWhenItsClaimIsAndSentAgainWhenAsked) {
  LinkOptions o = testing::loopback_options(Encoding::kSg);
  o.port = 29150;
  o.acks = true;
  o.slots = 8;
  o.slot_bytes = 4096;
  o.reconnect_timeout_ms = 8000;
  TransportContext rx_ctx, tx_ctx;
  Status st;
  auto src = NetSource::make({o}, rx_ctx, &st);
  ASSERT_TRUE(src) << st.message();
  src->claim_frames();

  SlotPool tx_pool(4, o.slot_bytes);
  std::atomic<bool> dropped{false}, finish{false};
  Status tx_st;
  std::thread upstream([&] {
    auto tx = make_sender(o, tx_pool, tx_ctx, &tx_st);
    if (!tx) return;
    for (uint64_t e = 0; e < 2 && tx_st; ++e) {
      const uint32_t slot = tx_pool.try_acquire();
      const size_t bytes = testing::write_event(tx_pool.slot(slot), 0, e, e, 4, o.tuple_bytes);
      Descriptor d{slot, 0, static_cast<uint32_t>(bytes), 1, 4, 0};
      tx_st = tx->send({&d, 1});
    }
    while (tx_st && !finish) {
      if (tx->busy()) tx_st = tx->progress();
      dropped = tx_pool.free_slots() == 4;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::byte eos[64];
    const size_t n = testing::write_end(eos, 0, 8, 2);
    if (tx_st) tx_st = tx->end(eos, static_cast<uint32_t>(n));
    if (tx_st) tx_st = tx->close();
  });

  ASSERT_TRUE(src->start().ok());
  std::vector<Descriptor> got;
  while (got.size() < 2) {
    Descriptor d[8];
    size_t n = 0;
    ASSERT_TRUE(src->next(d, &n).ok());
    got.insert(got.end(), d, d + n);
  }
  ASSERT_EQ(got.size(), 2u);
  AckLedger::Claim c[2];
  for (int i = 0; i < 2; ++i) ASSERT_EQ(src->claim(got[i].slot, &c[i]), AckLedger::Take::kClaimed);
  EXPECT_EQ(c[0].frame, 0u);
  EXPECT_EQ(c[1].frame, 1u);

  // The stage sleeps; both slots come back (sent), nothing is acknowledged.
  std::atomic<size_t> stage_n{0};
  std::atomic<bool> stage_done{false};
  Descriptor more[8];
  Status next_st;
  std::thread stage([&] {
    size_t k = 0;
    while (k == 0 && next_st.ok()) next_st = src->next(more, &k);
    stage_n = k;
    stage_done = true;
  });
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(src->pool().release(got[i].slot).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(dropped.load()) << "a slot that came back acknowledged a claimed frame";
  // The first claim is acknowledged downstream: the stage wakes for it.
  src->ack(c[0]);
  src->acked();
  for (int i = 0; i < 2000 && tx_pool.free_slots() != 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(tx_pool.free_slots(), 3u) << "the upstream still holds the first frame's copy";
  EXPECT_FALSE(stage_done.load());

  // The downstream broke with the second unacknowledged: the stage breaks
  // its link, the upstream connects again and sends it again.
  EXPECT_FALSE(src->stale(got[1].slot));
  src->replay_upstream();
  EXPECT_TRUE(src->stale(got[1].slot));
  stage.join();
  ASSERT_TRUE(next_st.ok()) << next_st.message();
  ASSERT_EQ(stage_n.load(), 1u);
  EXPECT_FALSE(src->stale(more[0].slot));
  EventHeader h;
  std::memcpy(&h, src->pool().slot(more[0].slot) + more[0].offset, sizeof h);
  EXPECT_EQ(h.event_seq, 1u);
  ASSERT_EQ(src->claim(more[0].slot, &c[1]), AckLedger::Take::kClaimed);
  EXPECT_EQ(c[1].frame, 0u);  // the new connection's first
  ASSERT_TRUE(src->pool().release(more[0].slot).ok());
  src->ack(c[1]);
  src->acked();

  // END: handed out, its slot back, and the link finishes.
  finish = true;
  size_t k = 0;
  Descriptor end[8];
  while (k == 0) ASSERT_TRUE(src->next(end, &k).ok());
  ASSERT_EQ(k, 1u);
  EXPECT_TRUE(end[0].flags & kDescEnd);
  ASSERT_TRUE(src->pool().release(end[0].slot).ok());
  while (k != 0) ASSERT_TRUE(src->next(end, &k).ok());
  upstream.join();
  EXPECT_TRUE(tx_st.ok()) << tx_st.message();
  EXPECT_EQ(tx_pool.free_slots(), 4u);
}

// With acks, a frame whose event fails the receiver's checks is a protocol
// error, not a broken connection: connecting again would send the same frame
// again. The receive stage ends with the error, naming the link and the
// frame, and closes the link; what it acknowledged before stays
// acknowledged. (It took it for a break and waited for the upstream to
// connect again, and for ever: the failed frame was counted as handed out,
// and a broken link is taken again only once every frame out came back.)
TEST(Links, WithAcksABadEventEndsTheStageWithTheErrorAtOnce) {
  LinkOptions o = testing::loopback_options(Encoding::kSg);
  o.port = 29180;
  o.acks = true;
  o.slots = 8;
  o.slot_bytes = 4096;
  TransportContext ctx;
  Status st;
  auto src = NetSource::make({o}, ctx, &st);
  ASSERT_TRUE(src) << st.message();
  RawSender up;
  std::thread accepting([&] { st = src->start(); });
  const bool accepted = up.connect(o, o.port);
  accepting.join();
  ASSERT_TRUE(accepted);
  ASSERT_TRUE(st.ok()) << st.message();

  // The stage, as a node runs it: every slot handed out comes back at once.
  Status stage_st;
  std::atomic<uint64_t> events{0};
  std::atomic<bool> stage_done{false};
  std::thread stage([&] {
    for (;;) {
      Descriptor d[8];
      size_t n = 0;
      stage_st = src->next(d, &n);
      if (!stage_st.ok() || n == 0) break;
      for (size_t i = 0; i < n; ++i) {
        events += d[i].events;
        (void)src->pool().release(d[i].slot);
      }
    }
    stage_done = true;
  });
  std::byte ev[4096];
  const uint32_t good = static_cast<uint32_t>(testing::write_event(ev, 0, 0, 0, 4, o.tuple_bytes));
  up.frame(FrameKind::kEvents, ev, good, 1);
  EXPECT_TRUE(up.read_acks(1)) << "frame 0 was never acknowledged";
  const uint32_t bad = static_cast<uint32_t>(testing::write_event(ev, 0, 4, 1, 4, o.tuple_bytes));
  const uint32_t wrong = 0x0BADBAD0;
  std::memcpy(ev, &wrong, sizeof wrong);  // the event's magic
  up.frame(FrameKind::kEvents, ev, bad, 1);

  for (int i = 0; i < 500 && !stage_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool waited_on = !stage_done;
  if (waited_on) src->shutdown();  // (so that the test ends)
  stage.join();
  EXPECT_FALSE(waited_on) << "the stage still ran 5 s after a bad event with acks";
  EXPECT_FALSE(stage_st.ok());
  EXPECT_TRUE(stage_st.protocol_error()) << stage_st.message();
  EXPECT_NE(stage_st.message().find("link loadgen -> node-a (127.0.0.1:29180)"), std::string::npos)
      << stage_st.message();
  EXPECT_NE(stage_st.message().find("frame 1: event 0 at byte 0: bad event magic 0x0badbad0"),
            std::string::npos)
      << stage_st.message();
  EXPECT_EQ(events.load(), 1u);  // the good one went on
  EXPECT_FALSE(up.read_acks(2)) << "the bad frame was acknowledged";
  EXPECT_EQ(up.acked(), 1u);
}

// With acks, a frame after END is a protocol error as it is without them
// (rule X3): the sink's stream ends with that error, naming the link and the
// frame, and the process says so in its status (its exit code). It took it
// for a broken link, said it waited for the upstream to connect again, and
// ended ok. END, with something behind it, is never acknowledged.
TEST(Links, WithAcksAFrameAfterEndFailsTheSink) {
  const Deployment d = two_processes(29190, "acks: on\n");
  spdlog::default_logger();  // before the threads (see above)
  ProcessSummary sink_sum;
  Status sink_st;
  std::thread sink([&] { sink_st = run_process(d, 1, nullptr, &sink_sum); });
  RawSender up;
  const LinkOptions o = d.link_options(0, 0);
  ASSERT_TRUE(up.connect(o, d.link_port(0, 0)));
  std::byte ev[4096];
  const uint32_t n = static_cast<uint32_t>(testing::write_event(ev, 0, 0, 0, 4, o.tuple_bytes));
  up.frame(FrameKind::kEvents, ev, n, 1);
  std::byte end[64];
  const uint32_t end_bytes = static_cast<uint32_t>(testing::write_end(end, 0, 4, 1));
  std::vector<std::byte> after(sizeof(FrameHeader) + n);
  const FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kEvents), 0, n, 1};
  std::memcpy(after.data(), &h, sizeof h);
  std::memcpy(after.data() + sizeof h, ev, n);
  up.frame(FrameKind::kEnd, end, end_bytes, 0, after);  // END and a frame behind it, in one write
  EXPECT_FALSE(up.read_acks(2)) << "END was acknowledged with a frame behind it";
  sink.join();
  EXPECT_FALSE(sink_st.ok());
  EXPECT_NE(sink_st.message().find("came after END, as frame 2: nothing may follow END"),
            std::string::npos)
      << sink_st.message();
  EXPECT_NE(sink_st.message().find("link loadgen -> sink"), std::string::npos) << sink_st.message();
  EXPECT_EQ(sink_sum.tuples_in, 4u);  // what came before END was counted
}

}  // namespace
}  // namespace sluice

// Acknowledgements and replay (LinkOptions::acks), on every carrier: a
// sender keeps what it sent until its receiver acknowledges it, an
// acknowledgement short of a credit batch waits at most ack_delay_ms, and a
// link that breaks is connected again and replays what was not acknowledged
// (kept in its slot, or by its header where a Remaker makes it again).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/carrier_cases.h"
#include "transport/link.h"
#include "transport/test_util.h"
#include "transport/transport.h"

namespace sluice {
namespace {

using testing::CarrierCase;
using testing::kCarriers;
using testing::loopback_options;
using testing::write_end;
using testing::write_event;

class Replay : public ::testing::TestWithParam<CarrierCase> {
 protected:
  static constexpr uint32_t kTuple = 128, kRxSlots = 8, kTxSlots = 32;

  void SetUp() override {
    ro_ = loopback_options(Encoding::kSg);
    GetParam().setup(ro_);
    if (ro_.tcp.async_send) GTEST_SKIP() << "acks are refused with async_send (make_sender says so)";
    ro_.tcp.poll_timeout_us = 200;
    ro_.tuple_bytes = kTuple;
    ro_.slot_bytes = 4096;
    ro_.slots = kRxSlots;
    ro_.credit_batch = 1;
    ro_.acks = true;
    ro_.reconnect_timeout_ms = 8000;
    tune(ro_);
    rx_pool_ = std::make_unique<SlotPool>(kRxSlots, 4096);
    std::vector<uint32_t> all(kRxSlots);
    ASSERT_EQ(rx_pool_->try_acquire_n(all.data(), all.size()), all.size());
    Status st;
    listener_ = make_listener(ro_, *rx_pool_, 0, ctx_, &st);
    ASSERT_TRUE(listener_) << st.message();
    tx_pool_ = std::make_unique<SlotPool>(kTxSlots, 1024);
  }

  // One one-tuple event of event_seq e in a fresh slot of the sender's pool.
  Descriptor event(uint64_t e) {
    const uint32_t slot = tx_pool_->try_acquire();
    EXPECT_NE(slot, kNoSlot);
    const size_t n = write_event(tx_pool_->slot(slot), 0, e, e, 1, kTuple);
    return Descriptor{slot, 0, static_cast<uint32_t>(n), 1, 1, 0};
  }

  // Polls `rx` until `want` frames arrived or END; appends their event_seqs.
  // Slots stay held (in `held`) unless give is set.
  void receive(Receiver& rx, size_t want, std::vector<uint64_t>* seqs, std::vector<uint32_t>* held,
               bool* ended) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    size_t got_frames = 0;
    while (got_frames < want && !*ended && std::chrono::steady_clock::now() < until) {
      Descriptor d[8];
      size_t n = 0;
      Status st = rx.poll(d, &n);
      ASSERT_TRUE(st.ok()) << st.message();
      for (size_t i = 0; i < n; ++i) {
        ++got_frames;
        if (d[i].flags & kDescEnd) {
          *ended = true;
        } else {
          for (uint32_t off = 0; off < d[i].bytes;) {
            EventHeader h;
            std::memcpy(&h, rx_pool_->slot(d[i].slot) + off, sizeof h);
            seqs->push_back(h.event_seq);
            off += static_cast<uint32_t>(h.wire_bytes());
          }
        }
        held->push_back(d[i].slot);
      }
      if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // A fixture's own options, before the listener is made from them.
  virtual void tune(LinkOptions&) {}

  // Until the sender's pool is whole again (every copy acknowledged and
  // dropped), at most 10 s.
  void wait_for_acknowledged_copies() {
    for (int i = 0; i < 10000 && tx_pool_->free_slots() != kTxSlots; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // What the ack-delay tests start from (start_idle_run): an idle_sender's
  // link accepted, its frames received and their slots held.
  struct IdleRun {
    std::atomic<bool> done{false};
    std::string sender_error;
    std::thread sender;
    std::unique_ptr<Receiver> rx;
    std::vector<uint64_t> seqs;
    std::vector<uint32_t> held;
  };
  void start_idle_run(uint64_t events, IdleRun* run);

  // Lets the idle_sender end: takes its END, gives every slot back, joins it.
  void end_idle_run(IdleRun* run) {
    std::vector<uint32_t> held;
    bool ended = false;
    run->done = true;
    receive(*run->rx, 1, &run->seqs, &held, &ended);
    EXPECT_TRUE(ended);
    for (uint32_t s : held) ASSERT_TRUE(run->rx->give_back(s).ok());
    run->sender.join();
  }

  // What break_and_replay saw.
  struct BreakRun {
    std::string sender_error;
    ReplayStats rs;
    std::vector<uint64_t> first, second;  // event_seqs on the first connection, then the second
    size_t free_while_unacked = 0;        // the sender's free slots, its six sent, none acknowledged
    size_t compared = 0;                  // events of the second connection checked byte for byte
  };
  // A sender (given `remaker`, if any) sends six events; its receiver gives
  // three back (acknowledged), then dies holding three. The sender connects
  // again, replays, sends four more and ends. Every event the new receiver
  // gets is checked against the bytes write_event makes for its event_seq.
  void break_and_replay(Remaker* remaker, BreakRun* run);

  LinkOptions ro_;
  TransportContext ctx_;
  std::unique_ptr<SlotPool> rx_pool_, tx_pool_;
  std::unique_ptr<Listener> listener_;
};

// Credits in batches of 4 of the 8 slots, so two frames are short of one,
// and an acknowledgement delay of 40 ms (0 for the second fixture).
class AckDelay : public Replay {
 protected:
  void tune(LinkOptions& o) override {
    o.credit_batch = 4;
    o.ack_delay_ms = 40;
  }
};
class NoAckDelay : public Replay {
 protected:
  void tune(LinkOptions& o) override { o.credit_batch = 4; }
};

TEST_P(Replay, SentSlotsAreHeldUntilAcknowledged) {
  LinkOptions so = ro_;
  so.port = listener_->port();
  std::atomic<bool> gave_back{false}, looked{false};
  size_t free_while_unacked = 0;
  std::string sender_error;
  std::thread sender([&] {
    Status st;
    auto tx = make_sender(so, *tx_pool_, ctx_, &st);
    if (!tx) {
      sender_error = st.message();
      return;
    }
    for (uint64_t e = 0; e < 4 && st; ++e) {
      Descriptor d = event(e);
      st = tx->send({&d, 1});
    }
    // The carrier has written them (driven as a send stage drives it while
    // idle); the receiver holds them: not safe yet.
    auto idle = [&] {
      if (st && tx->busy()) st = tx->progress();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    for (int i = 0; i < 100; ++i) idle();
    free_while_unacked = tx_pool_->free_slots();
    looked = true;
    while (st && !gave_back) idle();
    std::byte eos[64];
    const size_t n = write_end(eos, 0, 4, 4);
    if (st) st = tx->end(eos, static_cast<uint32_t>(n));
    if (st) st = tx->close();
    if (!st) sender_error = st.message();
  });
  Status st;
  auto rx = listener_->accept(&st);
  ASSERT_TRUE(rx) << st.message();
  std::vector<uint64_t> seqs;
  std::vector<uint32_t> held;
  bool ended = false;
  receive(*rx, 4, &seqs, &held, &ended);
  // The sender looks at its pool while we hold all four (however slowly
  // a loaded machine runs its 100 idle rounds).
  for (int i = 0; i < 10000 && !looked; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(looked);
  EXPECT_EQ(rx->acked(), 0u);
  for (uint32_t s : held) ASSERT_TRUE(rx->give_back(s).ok());
  EXPECT_EQ(rx->acked(), 4u);
  gave_back = true;
  held.clear();
  receive(*rx, 1, &seqs, &held, &ended);
  EXPECT_TRUE(ended);
  for (uint32_t s : held) ASSERT_TRUE(rx->give_back(s).ok());
  sender.join();
  EXPECT_EQ(sender_error, "");
  EXPECT_EQ(free_while_unacked, kTxSlots - 4u);
  // Acknowledged, every slot came back to the sender's pool.
  EXPECT_EQ(tx_pool_->free_slots(), kTxSlots);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1, 2, 3}));
}

// A sender of `events` one-tuple events that then idles as a send stage
// does (reading credit messages) until `done`, and ends and closes; its
// error, if any, in *error.
std::thread idle_sender(const LinkOptions& ro, uint16_t port, SlotPool& pool, TransportContext& ctx,
                        uint64_t events, std::function<Descriptor(uint64_t)> event,
                        std::atomic<bool>* done, std::string* error) {
  return std::thread([=, &pool, &ctx] {
    LinkOptions so = ro;
    so.port = port;
    Status st;
    auto tx = make_sender(so, pool, ctx, &st);
    if (!tx) {
      *error = st.message();
      return;
    }
    for (uint64_t e = 0; e < events && st; ++e) {
      Descriptor d = event(e);
      st = tx->send({&d, 1});
    }
    while (st && !*done) {
      if (tx->busy()) st = tx->progress();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::byte eos[64];
    const size_t n = write_end(eos, 0, events, events);
    if (st) st = tx->end(eos, static_cast<uint32_t>(n));
    if (st) st = tx->close();
    if (!st) *error = st.message();
  });
}

// ack_delay_ms: an acknowledgement short of a credit batch is held, not
// sent, until the receiver's owner has slept that long owing it; then it
// goes and the sender drops its copies. With 0 it is due at once.
void Replay::start_idle_run(uint64_t events, IdleRun* run) {
  run->sender = idle_sender(ro_, listener_->port(), *tx_pool_, ctx_, events,
                            [this](uint64_t e) { return event(e); }, &run->done, &run->sender_error);
  Status st;
  run->rx = listener_->accept(&st);
  ASSERT_TRUE(run->rx) << st.message();
  bool ended = false;
  receive(*run->rx, events, &run->seqs, &run->held, &ended);
}

TEST_P(AckDelay, AnAcknowledgementShortOfABatchWaitsItsDelayThenGoes) {
  IdleRun run;
  start_idle_run(2, &run);
  ASSERT_FALSE(HasFatalFailure());
  Receiver* rx = run.rx.get();
  EXPECT_EQ(rx->ack_due_ms(), -1) << "nothing came back: nothing owed";
  for (uint32_t s : run.held) ASSERT_TRUE(rx->give_back(s).ok());
  run.held.clear();
  EXPECT_EQ(rx->acked(), 2u);
  // Owed, short of a batch: held for up to the delay, counted from now.
  const auto t0 = std::chrono::steady_clock::now();
  const int first = rx->ack_due_ms();
  EXPECT_GT(first, 0);
  EXPECT_LE(first, 40);
  // Nothing went: the sender still holds both copies.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(tx_pool_->free_slots(), kTxSlots - 2u);
  int due = first;
  while (due > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(due));
    due = rx->ack_due_ms();
  }
  EXPECT_EQ(due, 0);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(40));
  ASSERT_TRUE(rx->flush_credits().ok());
  EXPECT_EQ(rx->ack_due_ms(), -1) << "sent: nothing owed";
  // The sender hears it and drops its copies.
  wait_for_acknowledged_copies();
  EXPECT_EQ(tx_pool_->free_slots(), kTxSlots);
  end_idle_run(&run);
  EXPECT_EQ(run.sender_error, "");
  EXPECT_EQ(run.seqs, (std::vector<uint64_t>{0, 1}));
}

TEST_P(NoAckDelay, AnOwedAcknowledgementIsDueAtOnce) {
  IdleRun run;
  start_idle_run(1, &run);
  ASSERT_FALSE(HasFatalFailure());
  Receiver* rx = run.rx.get();
  for (uint32_t s : run.held) ASSERT_TRUE(rx->give_back(s).ok());
  run.held.clear();
  EXPECT_EQ(rx->ack_due_ms(), 0);
  ASSERT_TRUE(rx->flush_credits().ok());
  wait_for_acknowledged_copies();
  EXPECT_EQ(tx_pool_->free_slots(), kTxSlots);
  end_idle_run(&run);
  EXPECT_EQ(run.sender_error, "");
}

// Once a link has its upstream, a second sender (or any stranger) on its
// port is answered at once, refused with the reason, and closed: not left in
// the backlog until its own timeout. Turned off, the port accepts again.
TEST_P(Replay, AStrangerOnAConnectedLinkIsAnsweredAndClosed) {
  LinkOptions so = ro_;
  so.port = listener_->port();
  std::unique_ptr<Sender> tx;
  Status sst;
  std::thread first([&] { tx = make_sender(so, *tx_pool_, ctx_, &sst); });
  Status st;
  auto rx = listener_->accept(&st);
  first.join();
  ASSERT_TRUE(rx) << st.message();
  ASSERT_TRUE(tx) << sst.message();
  listener_->turn_away(true);
  LinkOptions stranger = so;
  stranger.acks = false;
  stranger.connect_timeout_ms = 5000;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status s2;
    auto tx2 = make_sender(stranger, *tx_pool_, ctx_, &s2);
    EXPECT_FALSE(tx2);
    EXPECT_NE(s2.message().find("is connected to its upstream already"), std::string::npos)
        << s2.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2500));
  }
  listener_->turn_away(false);
  tx->abort();
}


void Replay::break_and_replay(Remaker* remaker, BreakRun* run) {
  LinkOptions so = ro_;
  so.port = listener_->port();
  std::atomic<bool> broken{false}, looked{false};
  SlotPool& pool = *tx_pool_;
  std::thread sender([&] {
    Status st;
    auto tx = make_sender(so, pool, ctx_, &st);
    if (!tx) {
      run->sender_error = st.message();
      return;
    }
    if (remaker) tx->set_remaker(remaker);
    uint64_t e = 0;
    for (; e < 6 && st; ++e) {
      Descriptor d = event(e);
      st = tx->send({&d, 1});
    }
    // Sent: a carrier that completes later is driven until it has.
    for (int i = 0; i < 5000 && st && tx->carrier_busy(); ++i) {
      st = tx->progress();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    run->free_while_unacked = pool.free_slots();
    looked = true;
    while (!broken) {
      if (st && tx->busy()) st = tx->progress();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (; e < 10 && st; ++e) {
      Descriptor d = event(e);
      st = tx->send({&d, 1});
    }
    std::byte eos[64];
    const size_t n = write_end(eos, 0, 10, 10);
    if (st) st = tx->end(eos, static_cast<uint32_t>(n));
    if (st) st = tx->close();
    if (!st) run->sender_error = st.message();
    run->rs = tx->replay_stats();
  });
  Status st;
  auto rx = listener_->accept(&st);
  ASSERT_TRUE(rx) << st.message();
  std::vector<uint32_t> held;
  bool ended = false;
  receive(*rx, 6, &run->first, &held, &ended);
  ASSERT_EQ(run->first.size(), 6u);
  for (int i = 0; i < 10000 && !looked; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(rx->acked(), 0u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(rx->give_back(held[i]).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  rx.reset();
  broken = true;
  // Its slots are free again (the old connection is gone with them).
  auto rx2 = listener_->accept(&st);
  ASSERT_TRUE(rx2) << st.message();
  std::byte want[1024];
  while (!ended) {
    std::vector<uint32_t> h;
    const size_t before = run->second.size();
    receive(*rx2, 1, &run->second, &h, &ended);
    ASSERT_FALSE(h.empty()) << "nothing more arrived";
    // One event a frame, in the order of their slots (END, if there, last).
    for (size_t k = before; k < run->second.size(); ++k) {
      const uint64_t seq = run->second[k];
      const size_t n = write_event(want, 0, seq, seq, 1, kTuple);
      EXPECT_EQ(std::memcmp(rx_pool_->slot(h[k - before]), want, n), 0) << "event " << seq << " differs";
      ++run->compared;
    }
    for (uint32_t s : h) ASSERT_TRUE(rx2->give_back(s).ok());
  }
  sender.join();
  EXPECT_EQ(run->sender_error, "");
  // At least once: everything not acknowledged (3..5) came again, in order,
  // and nothing was lost; what was acknowledged may come again only if the
  // acknowledgement had not reached the sender.
  ASSERT_FALSE(run->second.empty());
  EXPECT_LE(run->second.front(), 3u);
  for (size_t i = 0; i < run->second.size(); ++i) EXPECT_EQ(run->second[i], run->second.front() + i);
  EXPECT_EQ(run->second.back(), 9u);
  EXPECT_GT(run->compared, 0u);
  EXPECT_EQ(run->rs.reconnects, 1u);
  EXPECT_GE(run->rs.replayed_events, 3u);
  EXPECT_EQ(pool.free_slots(), kTxSlots);
}

TEST_P(Replay, ABrokenLinkIsConnectedAgainAndReplaysWhatWasNotAcknowledged) {
  // libfabric shm maps the peer's region into the process: with both ends
  // in one process, the receiver's end dying unmaps the region the sender
  // still writes (a crash inside fi_sendmsg). Across processes the sender's
  // mapping stays; tests/faults covers shm with a real process killed.
  if (ro_.transport == "fabric" && ro_.msg.fabric_provider == "shm")
    GTEST_SKIP() << "one-process artifact of shm's shared region; covered across processes";
  BreakRun run;
  break_and_replay(nullptr, &run);
  EXPECT_EQ(run.free_while_unacked, kTxSlots - 6u) << "each sent event keeps its slot";
  EXPECT_EQ(run.rs.remade_events, 0u);
}

// A Remaker (transport/link.h) that makes the test's events again: an
// event's bytes are a function of its event_seq (write_event), as a load
// generator's are of its header.
class TestRemaker final : public Remaker {
 public:
  explicit TestRemaker(SlotPool& pool) : pool_(pool) {}
  uint32_t room() const override { return static_cast<uint32_t>(pool_.reserved()); }
  Status remake(const EventHeader& h, uint32_t* slot) override {
    *slot = pool_.try_acquire_reserved();
    if (*slot != kNoSlot) write_event(pool_.slot(*slot), 0, h.event_seq, h.event_seq, 1, 128);
    return {};
  }

 private:
  SlotPool& pool_;
};

TEST_P(Replay, AnEventKeptByHeaderIsFreedWhenSentAndMadeAgainForAReplay) {
  if (ro_.transport == "fabric" && ro_.msg.fabric_provider == "shm")
    GTEST_SKIP() << "one-process artifact of shm's shared region; covered across processes";
  // Two reserve slots: a frame keeps at most two events by header.
  constexpr uint32_t kReserve = 2;
  tx_pool_ = std::make_unique<SlotPool>(kTxSlots, 1024, kReserve);
  TestRemaker remaker(*tx_pool_);
  BreakRun run;
  break_and_replay(&remaker, &run);
  EXPECT_EQ(run.free_while_unacked, kTxSlots) << "sent, not acknowledged, and every slot free";
  EXPECT_GE(run.rs.remade_events, 3u) << "the unacknowledged events were made again";
  EXPECT_EQ(run.rs.remade_events, run.rs.replayed_events);
  // Nothing leaked: the reserve is whole too.
  uint32_t reserve_free = 0;
  while (tx_pool_->try_acquire_reserved() != kNoSlot) ++reserve_free;
  EXPECT_EQ(reserve_free, kReserve);
}

// Claims (AckLedger, a node that keeps no copies): a frame claimed before
// its slot came back is acknowledged only when its claim is, though its
// slot and credit go back at once; one credit stays back while a frame is
// unacknowledged, for the acknowledgement to ride on; and the link
// finishes only once every frame was acknowledged.
class Claims : public Replay {
 protected:
  void tune(LinkOptions& o) override { o.adaptive_credits = false; }
};

TEST_P(Claims, AClaimedFrameIsAcknowledgedWhenItsClaimIsNotWhenItsSlotComesBack) {
  IdleRun run;
  start_idle_run(4, &run);
  ASSERT_TRUE(run.rx);
  Receiver& rx = *run.rx;
  rx.use_claims();  // before any claim or give-back
  bool ended = false;
  ASSERT_EQ(run.held.size(), 4u);
  std::vector<uint64_t> frames;
  for (uint32_t s : run.held) frames.push_back(rx.claim(s));
  EXPECT_EQ(frames, (std::vector<uint64_t>{0, 1, 2, 3}));
  for (uint32_t s : run.held) ASSERT_TRUE(rx.give_back(s).ok());
  // Slots back, credits out but one, nothing acknowledged.
  EXPECT_EQ(rx.outstanding(), 0u);
  EXPECT_EQ(rx.acked(), 0u);
  EXPECT_EQ(rx.stats().granted, kRxSlots + 3u);
  ASSERT_TRUE(rx.flush_credits().ok());
  // Out of order: the prefix waits for frame 0.
  rx.ack_claimed(1);
  ASSERT_TRUE(rx.collect_acks().ok());
  EXPECT_EQ(rx.acked(), 0u);
  rx.ack_claimed(0);
  ASSERT_TRUE(rx.collect_acks().ok());
  EXPECT_EQ(rx.acked(), 2u);
  ASSERT_TRUE(rx.flush_credits().ok());  // goes: two frames stay unacknowledged, a credit with them
  EXPECT_EQ(rx.stats().granted, kRxSlots + 3u);
  rx.ack_claimed(2);
  rx.ack_claimed(3);
  ASSERT_TRUE(rx.collect_acks().ok());
  EXPECT_EQ(rx.acked(), 4u);
  ASSERT_TRUE(rx.flush_credits().ok());  // all acknowledged: the credit kept back rides with it
  EXPECT_EQ(rx.stats().granted, kRxSlots + 4u);
  wait_for_acknowledged_copies();
  EXPECT_EQ(tx_pool_->free_slots(), kTxSlots) << "the sender dropped its copies";
  // END: its slot back, and the link finishes (every frame acknowledged).
  std::vector<uint32_t> held;
  run.done = true;
  receive(rx, 1, &run.seqs, &held, &ended);
  EXPECT_TRUE(ended);
  for (uint32_t s : held) ASSERT_TRUE(rx.give_back(s).ok());
  EXPECT_TRUE(rx.finished());
  run.sender.join();
  EXPECT_EQ(run.sender_error, "");
}

// A claimed frame unacknowledged holds the finish back after END's slot
// came back; its acknowledgement then finishes the link and frees the
// sender's close.
TEST_P(Claims, TheLinkFinishesOnlyOnceEveryClaimIsAcknowledged) {
  IdleRun run;
  start_idle_run(2, &run);
  ASSERT_TRUE(run.rx);
  Receiver& rx = *run.rx;
  rx.use_claims();
  bool ended = false;
  run.done = true;
  receive(rx, 1, &run.seqs, &run.held, &ended);
  ASSERT_TRUE(ended);
  ASSERT_EQ(run.held.size(), 3u);
  const uint64_t f = rx.claim(run.held[1]);  // the second event's frame
  for (uint32_t s : run.held) ASSERT_TRUE(rx.give_back(s).ok());
  EXPECT_FALSE(rx.finished());
  EXPECT_EQ(rx.acked(), 1u);
  rx.ack_claimed(f);
  ASSERT_TRUE(rx.collect_acks().ok());
  EXPECT_TRUE(rx.finished());
  EXPECT_EQ(rx.acked(), 3u);
  run.sender.join();
  EXPECT_EQ(run.sender_error, "");
  EXPECT_EQ(tx_pool_->free_slots(), kTxSlots);
}

INSTANTIATE_TEST_SUITE_P(Carriers, Replay, ::testing::ValuesIn(kCarriers),
                         [](const auto& i) { return std::string(i.param.name); });
INSTANTIATE_TEST_SUITE_P(Carriers, AckDelay, ::testing::ValuesIn(kCarriers),
                         [](const auto& i) { return std::string(i.param.name); });
INSTANTIATE_TEST_SUITE_P(Carriers, NoAckDelay, ::testing::ValuesIn(kCarriers),
                         [](const auto& i) { return std::string(i.param.name); });
INSTANTIATE_TEST_SUITE_P(Carriers, Claims, ::testing::ValuesIn(kCarriers),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace sluice

// A node's operator snapshots with its stages running, without a network:
// a source that replays as a restarted upstream would, a sink whose send
// stage falls behind, and a sink restarted after END from its last
// snapshot (node/snapshot.cc).
#include "node/node.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "graph/operator.h"
#include "loadgen/generator.h"
#include "node/metrics.h"
#include "sink/verifier.h"
#include "transport/event.h"

namespace sluice {
namespace {

// 20,000 tuples of 16 bytes in 256-byte events, on two streams, from a
// generator of few slots (it waits for the sink often).
Deployment two_streams() {
  Deployment d;
  d.tuple_bytes = 16;
  d.event_bytes = 256;
  d.tuples = 20000;
  d.streams = 2;
  d.loadgen_slots = 8;
  d.ring_slots = 4;
  return d;
}

// A generator's events copied into a pool of its own (with a reserve), that
// sends some of them twice as an upstream's replay would: every 7th
// descriptor again whole after it, every 11th glued before the next one in
// a single slot (a frame that holds seen and new events, as a restarted
// upstream's sender may pack them), and every 13th, where it and the next
// are one event each of different streams, glued after the next one and
// before the one after (a stream's seen event after another stream's new
// one and before its own next, as a restarted Kafka source replays one
// partition further back than the others).
class ReplayingSource final : public Source {
 public:
  ReplayingSource(const Deployment& d, size_t reserved)
      : gen_(d, 0), pool_(16 + reserved, 3 * gen_.pool().slot_bytes(), reserved) {}
  Status next(std::span<Descriptor> out, size_t* n) override {
    *n = 0;
    const uint32_t mine = pool_.acquire(Wait::kBlock);
    if (mine == kNoSlot) return Status::Error("stopped");
    std::byte* dst = pool_.slot(mine);
    ++count_;
    if (count_ % 7 == 0 && !last_.empty()) {  // the previous one again, whole
      std::memcpy(dst, last_.data(), last_.size());
      out[0] = {mine, 0, uint32_t(last_.size()), last_events_, last_tuples_, 0};
      *n = 1;
      sent_twice_ += last_tuples_;
      last_.clear();
      return {};
    }
    size_t got = 0;
    if (pending_) {
      out[0] = *pending_;
      pending_.reset();
      got = 1;
    } else if (Status st = gen_.next(out.subspan(0, 1), &got); !st || got == 0) {
      (void)pool_.release(mine);
      return st;
    }
    Descriptor g = out[0];
    uint32_t off = 0, events = 0, tuples = 0;
    if (count_ % 13 == 0 && !last_.empty() && !(g.flags & kDescEnd) && g.events == 1 && last_events_ == 1 &&
        stream_of(gen_.pool().slot(g.slot) + g.offset) != stream_of(last_.data())) {  // new + seen in one
      std::memcpy(dst, gen_.pool().slot(g.slot) + g.offset, g.bytes);
      std::memcpy(dst + g.bytes, last_.data(), last_.size());
      (void)gen_.pool().release(g.slot);
      uint32_t bytes = uint32_t(g.bytes + last_.size()), ev = 2, tu = g.tuples + last_tuples_;
      sent_twice_ += last_tuples_;
      ++seen_after_new_;
      last_.assign(dst, dst + g.bytes);
      last_tuples_ = g.tuples;
      // And the generator's next event after them when it is one event of
      // the seen one's stream, not END: the gap it leaves is closed.
      size_t got2 = 0;
      if (gen_.next(out.subspan(0, 1), &got2).ok() && got2 == 1) {
        const Descriptor g2 = out[0];
        if (!(g2.flags & kDescEnd) && g2.events == 1 && bytes + g2.bytes <= pool_.slot_bytes()) {
          std::memcpy(dst + bytes, gen_.pool().slot(g2.slot) + g2.offset, g2.bytes);
          last_.assign(dst + bytes, dst + bytes + g2.bytes);
          last_tuples_ = g2.tuples;
          bytes += g2.bytes;
          ++ev;
          tu += g2.tuples;
          ++gaps_;
          (void)gen_.pool().release(g2.slot);
        } else {
          pending_ = g2;  // handed on by the next call
        }
      }
      out[0] = {mine, 0, bytes, ev, tu, 0};
      *n = 1;
      return {};
    }
    if (count_ % 11 == 0 && !last_.empty() && !(g.flags & kDescEnd)) {  // seen + new in one
      std::memcpy(dst, last_.data(), last_.size());
      off = uint32_t(last_.size());
      events = last_events_;
      tuples = last_tuples_;
      sent_twice_ += last_tuples_;
    }
    std::memcpy(dst + off, gen_.pool().slot(g.slot) + g.offset, g.bytes);
    (void)gen_.pool().release(g.slot);
    if (!(g.flags & kDescEnd)) {
      last_.assign(dst + off, dst + off + g.bytes);
      last_events_ = g.events;
      last_tuples_ = g.tuples;
    }
    out[0] = {mine, 0, off + g.bytes, events + g.events, tuples + g.tuples, g.flags};
    *n = 1;
    return {};
  }
  SlotPool& pool() override { return pool_; }
  void shutdown() override {
    gen_.shutdown();
    pool_.close();
  }
  uint64_t sent_twice() const { return sent_twice_; }
  uint64_t seen_after_new() const { return seen_after_new_; }
  uint64_t gaps() const { return gaps_; }  // of those, with a new event after the seen one

 private:
  static uint32_t stream_of(const std::byte* event) {
    EventHeader h;
    std::memcpy(&h, event, sizeof h);
    return h.stream;
  }
  Generator gen_;
  SlotPool pool_;
  uint64_t count_ = 0, sent_twice_ = 0, seen_after_new_ = 0, gaps_ = 0;
  std::optional<Descriptor> pending_;  // the generator's, taken early (the 13th's)
  std::vector<std::byte> last_;
  uint32_t last_events_ = 0, last_tuples_ = 0;
};

// A node that checkpoints drops the events it already saw when they come
// again (whole descriptors, the seen head of a mixed one, and a stream's
// seen event after another stream's new one) by their
// event_seq: its moving average emits one row per input tuple, exactly, and
// counts what it dropped. Its snapshots are written while it runs (the held
// input slots come back each time: with 16 slots and 6,000 events it would
// otherwise stall) and the file is gone after END.
TEST(Snapshots, ANodeDropsReplayedEventsItAlreadyHoldsAndReleasesItsHeldSlots) {
  Deployment d = two_streams();
  OperatorConfig oc;
  oc.kind = "moving_avg";
  for (const auto& p : find_operator_spec("moving_avg")->params) oc.params.emplace_back(p.key, p.def ? p.def : "");
  oc.set("field", "key");
  oc.set("window", "16");
  oc.derived_stream = d.streams;
  oc.max_event_tuples = 64;
  OperatorChain chain;
  ASSERT_TRUE(OperatorChain::make({oc}, Schema::default_for(d.tuple_bytes), &chain).ok());
  auto src = std::make_unique<ReplayingSource>(d, 2);
  ReplayingSource* rs = src.get();
  auto ver = std::make_unique<Verifier>(src->pool());
  Verifier* v = ver.get();
  const std::string path = ::testing::TempDir() + "/replay-" + std::to_string(getpid()) + ".snapshot";
  InstanceConfig ic;
  ic.ring_slots = 4;
  ic.emit_capacity = 1024;
  ic.threads = Threads::kAdaptive;  // a node that checkpoints runs dedicated whatever it is told
  ic.checkpoint_path = path;
  ic.checkpoint_token = "test";
  ic.checkpoint_ms = 5;
  ic.checkpoint_hold = 4;
  Instance in(ic, std::move(src), std::move(ver), std::move(chain), [] {});
  in.start();
  in.join();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  const VerifyCounts c = v->counts();
  EXPECT_TRUE(c.end_seen);
  EXPECT_EQ(c.tuples, 20000u);  // one row per input tuple, none twice
  EXPECT_EQ(c.aggregated, 20000u);
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(c.duplicated, 0u);
  EXPECT_EQ(c.corrupt, 0u);
  ProcessSummary s;
  in.report(s);
  EXPECT_GT(rs->sent_twice(), 100u);
  EXPECT_GT(rs->seen_after_new(), 10u);
  EXPECT_GT(rs->gaps(), 10u);
  EXPECT_EQ(s.deduplicated, rs->sent_twice());
  EXPECT_GT(s.checkpoints, 1u);
  EXPECT_GT(s.snapshot_bytes, 0u);
  EXPECT_EQ(s.threads, "dedicated");
  // Its destination keeps state (a verifier, as a sink's): its last
  // snapshot, after END, stays (a restart after END reports from it).
  EXPECT_TRUE(std::filesystem::exists(path + ".0") || std::filesystem::exists(path + ".1"));
  std::filesystem::remove(path + ".0");
  std::filesystem::remove(path + ".1");
}

// A source nobody sends to: start() waits, as a listener does for its
// upstream, until shutdown().
class SilentSource final : public Source {
 public:
  explicit SilentSource(const Deployment& d) : pool_(16, d.event_bytes) {}
  Status start() override {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return shut_; });
    return Status::Error("shut down while accepting");
  }
  Status next(std::span<Descriptor>, size_t* n) override {
    *n = 0;
    return Status::Error("nothing ever comes");
  }
  SlotPool& pool() override { return pool_; }
  void shutdown() override {
    std::lock_guard lk(mu_);
    shut_ = true;
    cv_.notify_all();
    pool_.close();
  }

 private:
  SlotPool pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shut_ = false;
};

// A sink (a verifier) whose send stage falls behind now and then, and which
// checks what it is asked to save against what it consumed.
class LaggingSink final : public Destination {
 public:
  explicit LaggingSink(SlotPool& pool) : v_(pool) {}
  Status consume(std::span<const Descriptor> descs) override {
    consumer_ = std::this_thread::get_id();
    if (++calls_ % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    for (const Descriptor& d : descs) tuples_ += d.tuples;
    return v_.consume(descs);
  }
  Status finish() override { return v_.finish(); }
  bool saves_state() const override { return true; }
  // What the instance put first: the tuples it took in, as of the snapshot.
  void save(SnapshotOut& out) const override {
    uint64_t covered = 0;
    std::memcpy(&covered, out.data().data(), sizeof covered);
    saves_.push_back({covered, tuples_, std::this_thread::get_id() == consumer_});
    v_.save(out);
  }
  struct Save {
    uint64_t covered, consumed;
    bool on_send_thread;
  };
  mutable std::vector<Save> saves_;
  Verifier v_;

 private:
  std::thread::id consumer_;
  uint64_t calls_ = 0, tuples_ = 0;
};

// A sink's snapshot holds exactly the input whose slots it releases: its
// state is copied out between the last descriptor the snapshot covers and
// the next, by the send stage when it is behind (and goes on at once), by
// the process stage when it is not. Every copy's count of consumed tuples is
// what the instance says the snapshot covers, replays dropped.
TEST(Snapshots, ASinkCopiesItsStateOutAtTheCutEvenWhileItsSendStageIsBehind) {
  Deployment d = two_streams();
  OperatorChain chain;
  ASSERT_TRUE(OperatorChain::make({}, Schema::default_for(d.tuple_bytes), &chain).ok());
  auto src = std::make_unique<ReplayingSource>(d, 2);
  ReplayingSource* rs = src.get();
  auto sink = std::make_unique<LaggingSink>(src->pool());
  LaggingSink* k = sink.get();
  const std::string path = ::testing::TempDir() + "/lagging-" + std::to_string(getpid()) + ".snapshot";
  InstanceConfig ic;
  ic.ring_slots = 4;
  ic.checkpoint_path = path;
  ic.checkpoint_token = "test";
  ic.checkpoint_ms = 5;
  ic.checkpoint_hold = 4;  // of the source's 16 slots: a snapshot every 4 descriptors
  Instance in(ic, std::move(src), std::move(sink), std::move(chain), [] {});
  in.start();
  in.join();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  const VerifyCounts c = k->v_.counts();
  EXPECT_TRUE(c.end_seen);
  EXPECT_EQ(c.tuples, 20000u);
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(c.duplicated, 0u);
  ProcessSummary s;
  in.report(s);
  EXPECT_GT(rs->sent_twice(), 100u);
  EXPECT_GT(rs->gaps(), 10u);  // a seen event between two new ones: the new one moved down
  EXPECT_EQ(s.deduplicated, rs->sent_twice());
  ASSERT_GT(k->saves_.size(), 10u);
  // Each copy was written, but for one that END's drain may have overtaken.
  EXPECT_GE(k->saves_.size(), s.checkpoints);
  EXPECT_LE(k->saves_.size(), s.checkpoints + 1);
  size_t behind = 0;
  for (size_t i = 0; i < k->saves_.size(); ++i) {
    EXPECT_EQ(k->saves_[i].covered, k->saves_[i].consumed) << "snapshot " << i + 1;
    behind += k->saves_[i].on_send_thread;
  }
  EXPECT_GT(behind, 0u) << "no snapshot was asked for while the send stage was behind";

  // Its last snapshot is of its state after END, and outlives the instance.
  // A sink killed after END (before its summary, or before it exits) is
  // restarted from it: it waits for no upstream (its source only
  // waits to be shut down, as a listener nobody connects to does) and
  // reports what the run before it counted.
  ASSERT_TRUE(std::filesystem::exists(path + ".0") || std::filesystem::exists(path + ".1"));
  auto silent = std::make_unique<SilentSource>(d);
  auto again = std::make_unique<Verifier>(silent->pool());
  Verifier* v2 = again.get();
  OperatorChain none;
  ASSERT_TRUE(OperatorChain::make({}, Schema::default_for(d.tuple_bytes), &none).ok());
  Instance restarted(ic, std::move(silent), std::move(again), std::move(none), [] {});
  restarted.start();
  restarted.join();
  ASSERT_TRUE(restarted.status().ok()) << restarted.status().message();
  EXPECT_TRUE(v2->counts().end_seen);
  EXPECT_EQ(v2->counts().tuples, 20000u);
  EXPECT_EQ(v2->counts().lost, 0u);
  EXPECT_EQ(v2->counts().duplicated, 0u);
  ProcessSummary s2;
  restarted.report(s2);
  EXPECT_EQ(s2.restored_tuples, 20000u);
  EXPECT_EQ(s2.restored_checkpoint, s.checkpoints);
  // With its stream's bytes and interval, which the report's tuples/s is
  // over: this run of the sink took nothing in and has no time of its own.
  EXPECT_EQ(s2.restored_bytes, v2->counts().bytes);
  EXPECT_GT(s2.restored_bytes, 0u);
  EXPECT_GT(s2.restored_first_arrival_s, 0);
  EXPECT_GE(s2.last_arrival_s, s2.restored_first_arrival_s);
  std::filesystem::remove(path + ".0");
  std::filesystem::remove(path + ".1");
}

// A snapshotting sink's input link seen through its ledger (AckLedger), as
// a NetSource with claims is: a generator's events copied into 16 slots of
// its own, each frame numbered as it arrives. claim() names the frame in a
// slot; ack() is the sink letting it go upstream, which must come only once
// a snapshot holds it: no frame beyond the tuples the sink's last copy of
// its state covered.
class ClaimingSource final : public Source, public AckLedger {
 public:
  ClaimingSource(const Deployment& d, const std::atomic<uint64_t>* covered)
      : gen_(d, 0), pool_(16, gen_.pool().slot_bytes()), covered_(covered), frame_of_(16, 0) {}
  Status next(std::span<Descriptor> out, size_t* n) override {
    *n = 0;
    const uint32_t mine = pool_.acquire(Wait::kBlock);
    if (mine == kNoSlot) return Status::Error("stopped");
    size_t got = 0;
    Status st = gen_.next(out.subspan(0, 1), &got);
    if (!st || got == 0) {
      (void)pool_.release(mine);
      return st;
    }
    const Descriptor g = out[0];
    std::memcpy(pool_.slot(mine), gen_.pool().slot(g.slot) + g.offset, g.bytes);
    (void)gen_.pool().release(g.slot);
    {
      std::lock_guard lk(mu_);
      // The slot came back to the link before the frame it held was
      // acknowledged: its credit did not wait for the snapshot.
      if (frame_of_[mine] != 0 && !acked_[frame_of_[mine]]) ++early_;
      frame_of_[mine] = ++frames_;
      upto_.push_back(upto_.back() + g.tuples);
      acked_.push_back(false);
    }
    out[0] = {mine, 0, g.bytes, g.events, g.tuples, g.flags};
    *n = 1;
    return {};
  }
  SlotPool& pool() override { return pool_; }
  void shutdown() override {
    gen_.shutdown();
    pool_.close();
  }
  Take claim(uint32_t slot, Claim* c) override {
    std::lock_guard lk(mu_);
    c->frame = frame_of_[slot];
    ++claims_;
    return Take::kClaimed;
  }
  void ack(const Claim& c) override {
    std::lock_guard lk(mu_);
    if (c.frame <= last_acked_ || c.frame > frames_) ++out_of_order_;
    last_acked_ = std::max(last_acked_, c.frame);
    acked_[c.frame] = true;
    ++acks_;
    if (upto_[c.frame] > covered_->load()) ++unsaved_;  // acknowledged before a snapshot held it
  }
  void acked() override {}
  void replay_upstream() override { ADD_FAILURE() << "a sink has no downstream to replay for"; }
  bool stale(uint32_t) const override { return false; }

  std::mutex mu_;
  uint64_t frames_ = 0, claims_ = 0, acks_ = 0, last_acked_ = 0, early_ = 0, unsaved_ = 0,
           out_of_order_ = 0;

 private:
  Generator gen_;
  SlotPool pool_;
  const std::atomic<uint64_t>* covered_;
  std::vector<uint64_t> frame_of_;      // by slot: the frame it holds now (0: none yet)
  std::vector<uint64_t> upto_{0};       // by frame: the tuples up to and with it
  std::vector<bool> acked_{false};      // by frame
};

// A verifier that says how many tuples the newest copy of its state covers.
class CoveredSink final : public Destination {
 public:
  CoveredSink(SlotPool& pool, std::atomic<uint64_t>* covered) : v_(pool), covered_(covered) {}
  Status consume(std::span<const Descriptor> descs) override { return v_.consume(descs); }
  Status finish() override { return v_.finish(); }
  bool saves_state() const override { return true; }
  void save(SnapshotOut& out) const override {
    uint64_t covered = 0;  // what the instance put first: the tuples taken in
    std::memcpy(&covered, out.data().data(), sizeof covered);
    if (covered > covered_->load()) covered_->store(covered);
    v_.save(out);
  }
  Verifier v_;

 private:
  std::atomic<uint64_t>* covered_;
};

// A sink whose input links have acks claims its input frames instead of
// holding their slots: a slot goes back to its link (and its credit to the
// sender) once the verifier is done with it, and only the acknowledgement
// waits for a snapshot. Every frame, END's too, is acknowledged once, in
// order, and none before a snapshot covers it; slots come back ahead of
// their acknowledgements (the snapshots are 64 descriptors apart, the link
// has 16 slots: holding them, it would wait for the idle snapshots).
TEST(Snapshots, ASinkWithAcksGivesItsSlotsBackAndAcknowledgesOnlyWhatASnapshotHolds) {
  Deployment d = two_streams();
  OperatorChain chain;
  ASSERT_TRUE(OperatorChain::make({}, Schema::default_for(d.tuple_bytes), &chain).ok());
  std::atomic<uint64_t> covered{0};
  auto src = std::make_unique<ClaimingSource>(d, &covered);
  ClaimingSource* cs = src.get();
  auto sink = std::make_unique<CoveredSink>(src->pool(), &covered);
  CoveredSink* k = sink.get();
  const std::string path = ::testing::TempDir() + "/claiming-" + std::to_string(getpid()) + ".snapshot";
  InstanceConfig ic;
  ic.ring_slots = 4;
  ic.checkpoint_path = path;
  ic.checkpoint_token = "test";
  ic.checkpoint_ms = 1000;
  ic.checkpoint_hold = 64;
  ic.input_ledger = cs;
  Instance in(ic, std::move(src), std::move(sink), std::move(chain), [] {});
  in.start();
  in.join();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  const VerifyCounts c = k->v_.counts();
  EXPECT_TRUE(c.end_seen);
  EXPECT_EQ(c.tuples, 20000u);
  EXPECT_EQ(c.lost, 0u);
  ProcessSummary s;
  in.report(s);
  EXPECT_GT(s.checkpoints, 1u);
  std::lock_guard lk(cs->mu_);
  EXPECT_EQ(cs->claims_, cs->frames_) << "every frame is claimed, none held";
  EXPECT_EQ(cs->acks_, cs->frames_) << "every frame is acknowledged once";
  EXPECT_EQ(cs->last_acked_, cs->frames_);
  EXPECT_EQ(cs->out_of_order_, 0u);
  EXPECT_EQ(cs->unsaved_, 0u) << "frames acknowledged before a snapshot held them";
  EXPECT_GT(cs->early_, 0u) << "no slot came back before its frame was acknowledged";
  std::filesystem::remove(path + ".0");
  std::filesystem::remove(path + ".1");
}

}  // namespace
}  // namespace sluice


// The node's stages without a network: a load generator as the receive stage,
// the sink's verifier as the send stage, operators in between. What the
// verifier counts is what a real pipeline would count.
#include "node/node.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "graph/operator.h"
#include "loadgen/generator.h"
#include "sink/verifier.h"
#include "transport/event.h"

namespace sluice {
namespace {

Deployment small_deployment(uint32_t tuple_bytes, uint32_t event_bytes, uint64_t tuples) {
  Deployment d;
  d.tuple_bytes = tuple_bytes;
  d.event_bytes = event_bytes;
  d.tuples = tuples;
  d.streams = 3;
  d.loadgen_slots = 8;  // few slots: the generator waits for the verifier often
  d.ring_slots = 4;
  return d;
}

struct Result {
  VerifyCounts counts;
  uint64_t latency_samples;
  Status status;
  uint64_t events_out;
  uint64_t inline_events = 0;  // run to completion on the receiving thread
  bool stage_threads = false;  // the process and send stages had threads of their own
};

Result run_local(const Deployment& d, std::vector<OperatorConfig> ops, Wait wait,
                 bool handover_copy = false, Threads threads = Threads::kDedicated) {
  auto gen = std::make_unique<Generator>(d, 0);
  std::unique_ptr<HandoverPool> handover;
  if (handover_copy)  // fewer slots than the generator: the copy stage waits too
    handover = std::make_unique<HandoverPool>(3, gen->pool().slot_bytes());
  auto ver = handover ? std::make_unique<Verifier>(handover->pool)
                      : std::make_unique<Verifier>(gen->pool());
  Verifier* v = ver.get();
  OperatorChain chain;
  EXPECT_TRUE(OperatorChain::make(ops, Schema::default_for(d.tuple_bytes), &chain).ok());
  InstanceConfig ic;
  ic.wait = wait;
  ic.ring_slots = d.ring_slots;
  ic.threads = threads;
  Instance in(ic, std::move(gen), std::move(ver), std::move(chain), [] {}, std::move(handover));
  in.start();
  in.join();
  return {v->counts(),       v->latency().count(),
          in.status(),       in.out().events.load(),
          in.inline_events(), in.stage_tid(1) != 0 && in.stage_tid(2) != 0};
}

void expect_every_tuple_once(const Result& r, uint64_t n, const char* what) {
  ASSERT_TRUE(r.status.ok()) << what << ": " << r.status.message();
  EXPECT_TRUE(r.counts.end_seen) << what;
  EXPECT_EQ(r.counts.tuples, n) << what;
  // The verifier counts a tuple out of order within its stream as lost and
  // then duplicated: none of either means none was reordered.
  EXPECT_EQ(r.counts.lost, 0u) << what;
  EXPECT_EQ(r.counts.duplicated, 0u) << what;
  EXPECT_EQ(r.counts.corrupt, 0u) << what;
}

TEST(Node, EveryTupleArrivesOnceAndIntact) {
  for (Wait w : {Wait::kBlock, Wait::kSpin, Wait::kHybrid}) {
    // Spinning stages on a shared 2-core machine crawl: fewer tuples there.
    const uint64_t n = w == Wait::kBlock ? 20000 : 2000;
    Deployment d = small_deployment(12, 0, n);
    Result r = run_local(d, {}, w);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_TRUE(r.counts.end_seen);
    EXPECT_EQ(r.counts.tuples, n) << wait_name(w);
    EXPECT_EQ(r.counts.events, n);
    EXPECT_EQ(r.counts.lost, 0u);
    EXPECT_EQ(r.counts.duplicated, 0u);
    EXPECT_EQ(r.counts.corrupt, 0u);
    EXPECT_EQ(r.latency_samples, n);
  }
}

// The process's main thread sleeps on the instance's done eventfd instead of
// polling: the last stage to finish writes it once, in every mode, and not
// before done() is true.
TEST(Node, TheDoneFdRingsOnceWhenTheLastStageIsThrough) {
  for (Threads t : {Threads::kDedicated, Threads::kAdaptive, Threads::kShared}) {
    Deployment d = small_deployment(128, 4096, 2000);
    auto gen = std::make_unique<Generator>(d, 0);
    auto ver = std::make_unique<Verifier>(gen->pool());
    OperatorChain chain;
    ASSERT_TRUE(OperatorChain::make({}, Schema::default_for(d.tuple_bytes), &chain).ok());
    InstanceConfig ic;
    ic.ring_slots = d.ring_slots;
    ic.threads = t;
    Instance in(ic, std::move(gen), std::move(ver), std::move(chain), [] {});
    Fd bell(::eventfd(0, EFD_CLOEXEC));
    ASSERT_TRUE(bell.valid());
    in.set_done_fd(bell.get());
    in.start();
    pollfd ring{bell.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&ring, 1, 20000), 1) << threads_name(t) << ": the done fd never rang";
    uint64_t rung = 0;
    ASSERT_EQ(::read(bell.get(), &rung, sizeof rung), ssize_t(sizeof rung));
    EXPECT_EQ(rung, 1u) << threads_name(t);
    EXPECT_TRUE(in.done()) << threads_name(t);
    in.join();
    ASSERT_TRUE(in.status().ok()) << in.status().message();
    pollfd p{bell.get(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0) << threads_name(t) << ": rung again after done";
  }
}

// ---- threads: dedicated, shared, adaptive ------------------------------------

// An idle node (events far apart): the receiving thread runs the events
// through process and send itself; no hand-off. Not every one: the batch
// with END goes through the stages, and on a machine slow enough (TSan
// took 4 of 60 away at 2 ms apart) a run of late events reads as backlog.
TEST(Threads, AnIdleAdaptiveNodeRunsEventsOnTheReceivingThread) {
  Deployment d = small_deployment(128, 0, 40);
  d.streams = 1;
  d.rate = 200;  // 5 ms apart: the generator waits for each
  Result r = run_local(d, {}, Wait::kBlock, false, Threads::kAdaptive);
  expect_every_tuple_once(r, 40, "adaptive, idle");
  EXPECT_TRUE(r.stage_threads);
  EXPECT_GE(r.inline_events, 30u);
  EXPECT_LE(r.inline_events, 40u);
  // dedicated: none.
  Result dedicated = run_local(d, {}, Wait::kBlock, false, Threads::kDedicated);
  expect_every_tuple_once(dedicated, 40, "dedicated, idle");
  EXPECT_EQ(dedicated.inline_events, 0u);
}

// A busy node (the generator never waits for its schedule): after the first
// batches (8 in a row without a wait may still be a lull), every event is
// handed to the stage threads, as with dedicated threads.
TEST(Threads, ABusyAdaptiveNodeHandsOff) {
  Deployment d = small_deployment(64, 2048, 20000);  // 625 events
  Result r = run_local(d, {}, Wait::kBlock, false, Threads::kAdaptive);
  expect_every_tuple_once(r, 20000, "adaptive, busy");
  EXPECT_LE(r.inline_events, 8u * d.loadgen_slots);  // 8 batches of at most 8 slots' events
  Result dedicated = run_local(d, {}, Wait::kBlock, false, Threads::kDedicated);
  expect_every_tuple_once(dedicated, 20000, "dedicated");
  EXPECT_EQ(dedicated.inline_events, 0u);
}

// Bursts: each burst is far more than 8 batches (8 slots each) that come
// without a wait (hand-off), and the gaps between bursts find the generator
// waiting (inline), so the mode switches back and forth many times; within
// each stream no tuple is reordered, lost or repeated, through a filter
// that drops some.
TEST(Threads, SwitchingBetweenInlineAndHandOffReordersNothing) {
  Deployment d = small_deployment(64, 512, 30000);  // 7 tuples per event
  d.burst_events = 200;
  d.burst_ms = 2;
  d.duration_s = 60;
  OperatorConfig f = OperatorConfig::filter("key", "lt", 0);
  f.set("value", std::to_string(768));
  Result r = run_local(d, {f}, Wait::kBlock, false, Threads::kAdaptive);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(r.counts.end_seen);
  EXPECT_EQ(r.counts.tuples + r.counts.filtered, 30000u);
  EXPECT_GT(r.counts.filtered, 0u);
  EXPECT_EQ(r.counts.lost, 0u);
  EXPECT_EQ(r.counts.duplicated, 0u);
  EXPECT_EQ(r.counts.corrupt, 0u);
  // Both ways were taken.
  EXPECT_GT(r.inline_events, 0u);
  EXPECT_LT(r.inline_events, r.events_out);
}

// shared: one thread runs all three stages; the process and send stages
// have no thread, and every event was run to completion.
TEST(Threads, SharedRunsEveryStageOnOneThread) {
  Deployment d = small_deployment(128, 4096, 20000);
  Result r = run_local(d, {}, Wait::kBlock, false, Threads::kShared);
  expect_every_tuple_once(r, 20000, "shared");
  EXPECT_FALSE(r.stage_threads);
  EXPECT_EQ(r.inline_events, r.events_out);
}

// A handover copy (the original preset) stays dedicated whatever is asked:
// it is the study's baseline.
TEST(Threads, AHandoverCopyStaysDedicated) {
  Deployment d = small_deployment(128, 4096, 5000);
  d.rate = 2000;
  for (Threads t : {Threads::kShared, Threads::kAdaptive}) {
    Result r = run_local(d, {}, Wait::kBlock, /*handover_copy=*/true, t);
    expect_every_tuple_once(r, 5000, threads_name(t));
    EXPECT_TRUE(r.stage_threads);
    EXPECT_EQ(r.inline_events, 0u);
  }
}

// ---- max_delay_us -------------------------------------------------------------

// The sink's verifier, counting the send stage's consume() calls.
// pause_ms: its first consume() stalls that long first, as a downstream
// link that grants no credit does.
class CountingVerifier final : public Destination {
 public:
  explicit CountingVerifier(SlotPool& pool, uint32_t pause_ms = 0) : v_(pool), pause_ms_(pause_ms) {}
  Status consume(std::span<const Descriptor> descs) override {
    if (calls_++ == 0 && pause_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
    return v_.consume(descs);
  }
  Status finish() override { return v_.finish(); }
  const Verifier& verifier() const { return v_; }
  uint64_t calls() const { return calls_; }

 private:
  Verifier v_;
  uint32_t pause_ms_;
  uint64_t calls_ = 0;
};

struct Gathered {
  VerifyCounts counts;
  uint64_t calls, max_latency_ns;
};

Gathered run_gathering(const Deployment& d, uint32_t max_delay_us, uint32_t capacity,
                       uint32_t pause_ms = 0) {
  auto gen = std::make_unique<Generator>(d, 0);
  auto dest = std::make_unique<CountingVerifier>(gen->pool(), pause_ms);
  CountingVerifier* cv = dest.get();
  InstanceConfig ic;
  ic.ring_slots = 64;
  ic.threads = Threads::kDedicated;
  ic.max_delay_us = max_delay_us;
  ic.emit_capacity = capacity;
  Instance in(ic, std::move(gen), std::move(dest), OperatorChain(), [] {});
  in.start();
  in.join();
  EXPECT_TRUE(in.status().ok()) << in.status().message();
  return {cv->verifier().counts(), cv->calls(), cv->verifier().latency().max()};
}

// One-tuple events 50 us apart: with a 20 ms bound the send stage gathers
// about a frame's worth (4 KiB: 32 of these 128-byte events) per send.
TEST(MaxDelay, OneTupleEventsTravelManyToASend) {
  Deployment d = small_deployment(64, 0, 3000);
  d.streams = 1;
  d.loadgen_slots = 256;
  d.rate = 20000;
  Gathered g = run_gathering(d, 20000, 4096);
  EXPECT_TRUE(g.counts.end_seen);
  EXPECT_EQ(g.counts.tuples, 3000u);
  EXPECT_EQ(g.counts.lost, 0u);
  EXPECT_EQ(g.counts.duplicated, 0u);
  EXPECT_LE(g.calls, 3000u / 8) << "sends: " << g.calls;
}

// Events 10 ms apart could never fill a 64 KiB frame: each goes when the 2 ms
// bound runs out, not when the stream ends (300 ms later).
TEST(MaxDelay, NothingWaitsLongerThanTheBound) {
  Deployment d = small_deployment(64, 0, 30);
  d.streams = 1;
  d.rate = 100;
  Gathered g = run_gathering(d, 2000, 65536);
  EXPECT_TRUE(g.counts.end_seen);
  EXPECT_EQ(g.counts.tuples, 30u);
  EXPECT_EQ(g.counts.lost, 0u);
  // 2 ms, and room for a loaded machine; without the bound, 290 ms.
  EXPECT_LT(g.max_latency_ns, 100'000'000u);
  EXPECT_GE(g.calls, 15u);
}

// A downstream paused for 50 ms (its first send stalls, as a link with no
// credit does): what queued behind it meanwhile goes within the 2 ms bound
// once it is back, and so does everything after, each event alone (5 ms
// apart, they never fill a 64 KiB frame). A send stage that counted the
// bound only until the first send, or gathered until a frame was full,
// would hold them to END, 250 ms later.
TEST(MaxDelay, WhatQueuedBehindAPausedDownstreamGoesWithinTheBound) {
  Deployment d = small_deployment(64, 0, 60);
  d.streams = 1;
  d.rate = 200;
  d.loadgen_slots = 64;
  Gathered g = run_gathering(d, 2000, 65536, /*pause_ms=*/50);
  EXPECT_TRUE(g.counts.end_seen);
  EXPECT_EQ(g.counts.tuples, 60u);
  EXPECT_EQ(g.counts.lost, 0u);
  // The pause and the bound (52 ms), with room for a loaded machine.
  EXPECT_LT(g.max_latency_ns, 150'000'000u);
  EXPECT_GE(g.calls, 30u) << "the events after the pause went together";
}

// original's handover: every event is copied into a fresh slot between the
// stages, the received slot freed at once; nothing may be lost or mangled.
TEST(Node, HandoverByCopyDeliversTheSameTuples) {
  Deployment d = small_deployment(128, 4096, 30000);
  OperatorConfig f = OperatorConfig::filter("key", "lt", 0);
  f.set("value", std::to_string(512));
  Result r = run_local(d, {f}, Wait::kBlock, /*handover_copy=*/true);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(r.counts.end_seen);
  EXPECT_EQ(r.counts.tuples + r.counts.filtered, 30000u);
  EXPECT_GT(r.counts.filtered, 0u);
  EXPECT_EQ(r.counts.lost, 0u);
  EXPECT_EQ(r.counts.corrupt, 0u);
}

TEST(Node, ALastShortEventCarriesTheRemainder) {
  Deployment d = small_deployment(128, 4096, 1000);  // 31 tuples per event
  d.data_bytes = 100;
  Result r = run_local(d, {}, Wait::kBlock);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.counts.tuples, 1000u);
  EXPECT_EQ(r.counts.events, (1000u + 30) / 31);
  EXPECT_EQ(r.counts.corrupt, 0u);
  EXPECT_EQ(r.counts.lost, 0u);
}

// `tuples` sends exactly that many, however long the rate makes it: a
// paced run that outlasts duration_s is not cut short by the clock.
TEST(Node, APacedRunSendsAllItsTuplesPastTheDuration) {
  Deployment d = small_deployment(128, 0, 30);
  d.streams = 1;
  d.rate = 100;          // 10 ms apart: 0.3 s for 30
  d.duration_s = 0.05;   // the clock alone would stop it after 5 or 6
  Result r = run_local(d, {}, Wait::kBlock);
  expect_every_tuple_once(r, 30, "paced past the duration");
  EXPECT_EQ(r.events_out, 30u);
}

TEST(Node, AFilterDropsTuplesWhichAreFilteredNotLost) {
  Deployment d = small_deployment(64, 2048, 50000);
  d.data_bytes = 24;
  OperatorConfig f = OperatorConfig::filter("key", "lt", 0);
  f.set("value", std::to_string(256));  // keys are uniform in [0, 1024): about a quarter pass
  Result r = run_local(d, {f}, Wait::kBlock);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.counts.tuples + r.counts.filtered, 50000u);
  EXPECT_GT(r.counts.tuples, 50000u / 5);
  EXPECT_LT(r.counts.tuples, 50000u / 3);
  EXPECT_EQ(r.counts.lost, 0u);
  EXPECT_EQ(r.counts.corrupt, 0u);  // resealed after compaction
}

TEST(Node, AFilterThatDropsEverythingKeepsTheEventsForAccounting) {
  Deployment d = small_deployment(12, 1024, 5000);
  OperatorConfig f = OperatorConfig::filter("seq", "gt", 0);
  f.set("value", std::to_string(UINT64_MAX - 1));
  Result r = run_local(d, {f}, Wait::kBlock);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.counts.tuples, 0u);
  EXPECT_EQ(r.counts.filtered, 5000u);
  EXPECT_EQ(r.counts.lost, 0u);
}

// ---- a carrier that completes sends asynchronously ---------------------------

// A destination whose "sends" complete only when its completion fd fires, as a
// libfabric or UCX link's do: it holds every slot until progress() sees the fd
// readable. The generator has 8 slots, so the pipeline moves only if the send
// stage, with its ring empty, sleeps on its ring and on this fd together.
class AsyncDest final : public Destination {
 public:
  // acked: what it holds waits for acknowledgements (acks: on) that the
  // fd brings, not for its own sends to complete.
  explicit AsyncDest(SlotPool& pool, bool acked = false)
      : pool_(pool), fd_(::eventfd(0, EFD_NONBLOCK)), acked_(acked) {}
  ~AsyncDest() override { ::close(fd_); }
  Status consume(std::span<const Descriptor> descs) override {
    for (const Descriptor& d : descs) {
      if (d.flags & kDescEnd) end_ = true;
      else tuples_ += d.tuples;
      held_.push_back(d.slot);
    }
    return {};
  }
  bool busy() const override { return !held_.empty(); }
  bool carrier_busy() const override { return !acked_ && busy(); }
  bool acknowledged() const override { return acked_; }
  Status progress() override {
    progress_calls_.fetch_add(1);
    uint64_t v;
    if (::read(fd_, &v, sizeof v) != sizeof v) return {};  // nothing completed yet
    for (uint32_t s : held_)
      if (Status st = pool_.release(s); !st) return st;
    held_.clear();
    return {};
  }
  Status finish() override {
    // Whatever is still in flight completes before the stream is done.
    while (busy()) {
      pollfd p{fd_, POLLIN, 0};
      ::poll(&p, 1, 100);
      if (Status st = progress(); !st) return st;
    }
    return {};
  }
  void wait_fds(std::vector<int>* fds) const override { fds->push_back(fd_); }
  int fd() const { return fd_; }
  uint64_t tuples() const { return tuples_; }
  bool end_seen() const { return end_; }
  uint64_t progress_calls() const { return progress_calls_.load(); }

 private:
  SlotPool& pool_;
  int fd_;
  std::vector<uint32_t> held_;
  uint64_t tuples_ = 0;
  bool end_ = false;
  bool acked_;
  std::atomic<uint64_t> progress_calls_{0};
};

// Rings an AsyncDest's fd every `ms` (its sends completing, or
// acknowledgements coming) until stop(), which says how many times it rang.
class Ringer {
 public:
  Ringer(int fd, int ms)
      : thread_([this, fd, ms] {
          const uint64_t one = 1;
          while (!stop_.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(ms));
            (void)!::write(fd, &one, sizeof one);
            rings_.fetch_add(1);
          }
        }) {}
  ~Ringer() { stop(); }
  uint64_t stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return rings_.load();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rings_{0};
  std::thread thread_;  // last: it runs once the counters are made
};

TEST(Node, TheSendStageWaitsOnItsRingAndItsLinkTogether) {
  Deployment d = small_deployment(64, 2048, 5000);
  auto gen = std::make_unique<Generator>(d, 0);
  auto dest = std::make_unique<AsyncDest>(gen->pool());
  AsyncDest* ad = dest.get();
  InstanceConfig ic;
  ic.ring_slots = 4;
  Instance in(ic, std::move(gen), std::move(dest), OperatorChain(), [] {});
  Ringer completions(ad->fd(), 2);
  in.start();
  in.join();
  const uint64_t signals = completions.stop();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  EXPECT_TRUE(ad->end_seen());
  EXPECT_EQ(ad->tuples(), 5000u);
  // It slept between completions instead of spinning on progress().
  EXPECT_GT(ad->progress_calls(), 0u);
  EXPECT_LE(ad->progress_calls(), 4 * signals + 16);
}

// Every mode with sends that complete later (fabric, ucx): shared reaps them
// on its one thread while the generator waits for a slot; adaptive's inline
// sends leave them to the send thread, which it wakes.
TEST(Threads, SendsThatCompleteLaterAreReapedInEveryMode) {
  for (Threads t : {Threads::kDedicated, Threads::kShared, Threads::kAdaptive}) {
    for (double rate : {0.0, 3000.0}) {
      Deployment d = small_deployment(64, 2048, 5000);
      d.rate = rate;
      auto gen = std::make_unique<Generator>(d, 0);
      auto dest = std::make_unique<AsyncDest>(gen->pool());
      AsyncDest* ad = dest.get();
      InstanceConfig ic;
      ic.ring_slots = 4;
      ic.threads = t;
      Instance in(ic, std::move(gen), std::move(dest), OperatorChain(), [] {});
      Ringer completions(ad->fd(), 1);
      in.start();
      in.join();
      completions.stop();
      const std::string what = fmt::format("{} at {} events/s", threads_name(t), rate);
      ASSERT_TRUE(in.status().ok()) << what << ": " << in.status().message();
      EXPECT_TRUE(ad->end_seen()) << what;
      EXPECT_EQ(ad->tuples(), 5000u) << what;
      if (t == Threads::kShared) {
        EXPECT_EQ(in.inline_events(), in.out().events.load()) << what;
      }
      if (t == Threads::kAdaptive && rate > 0) {
        EXPECT_GT(in.inline_events(), 0u) << what;
      }
    }
  }
}

// adaptive with acks, at a moderate rate: the receiving thread sends each
// event inline, leaving it to be acknowledged. The send thread sleeps on the
// destination's fds throughout, so acknowledgements wake it and inline sends
// do not: it does not wake (and call progress()) once per event.
TEST(Threads, AnInlineSendWithAcksLeavesTheSendThreadAsleepOnItsAcknowledgements) {
  Deployment d = small_deployment(64, 2048, 32 * 1500);  // 1,500 events of 32 tuples
  d.rate = 2000;
  auto gen = std::make_unique<Generator>(d, 0);
  auto dest = std::make_unique<AsyncDest>(gen->pool(), /*acked=*/true);
  AsyncDest* ad = dest.get();
  InstanceConfig ic;
  ic.ring_slots = 4;
  ic.threads = Threads::kAdaptive;
  Instance in(ic, std::move(gen), std::move(dest), OperatorChain(), [] {});
  Ringer acks(ad->fd(), 2);
  in.start();
  in.join();
  const uint64_t signals = acks.stop();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  EXPECT_TRUE(ad->end_seen());
  EXPECT_EQ(ad->tuples(), 32u * 1500);
  const uint64_t inl = in.inline_events();
  EXPECT_GT(inl, 750u);  // most events ran inline
  // Woken by acknowledgements (one in 2 ms: about 4 events' worth) and by
  // what went through its ring, not by each inline send.
  EXPECT_LT(ad->progress_calls(), inl / 2)
      << ad->progress_calls() << " calls, " << inl << " events inline, " << signals
      << " acknowledgements";
}

// ---- an emitting operator on a tiny reserve --------------------------------

// A generator whose events are copied into a pool of its own that keeps
// `reserved` slots for the process stage to emit into: what a network
// source with an emitting chain has (NetSource::make's reserve).
class ReservedSource final : public Source {
 public:
  ReservedSource(const Deployment& d, size_t reserved)
      : gen_(d, 0), pool_(8 + reserved, gen_.pool().slot_bytes(), reserved) {}
  Status next(std::span<Descriptor> out, size_t* n) override {
    Status st = gen_.next(out.subspan(0, 1), n);
    if (!st || *n == 0) return st;
    const uint32_t mine = pool_.acquire(Wait::kBlock);
    if (mine == kNoSlot) return Status::Error("stopped");
    std::memcpy(pool_.slot(mine), gen_.pool().slot(out[0].slot) + out[0].offset, out[0].bytes);
    (void)gen_.pool().release(out[0].slot);
    out[0].slot = mine;
    out[0].offset = 0;
    return {};
  }
  SlotPool& pool() override { return pool_; }
  bool waited() const override { return gen_.waited(); }
  void shutdown() override {
    gen_.shutdown();
    pool_.close();
  }

 private:
  Generator gen_;
  SlotPool pool_;
};

// The send side: verifies, but holds each descriptor a while first, so the
// reserve's slots come back slowly; counts the descriptors in reserved slots.
class SlowVerifier final : public Destination {
 public:
  explicit SlowVerifier(SlotPool& pool) : pool_(pool), v_(pool) {}
  Status consume(std::span<const Descriptor> descs) override {
    for (const Descriptor& d : descs) {
      if (d.slot >= pool_.reserve_first() && d.slot != kNoSlot) ++reserved_seen_;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    return v_.consume(descs);
  }
  Status finish() override { return v_.finish(); }
  const Verifier& verifier() const { return v_; }
  uint64_t reserved_seen() const { return reserved_seen_; }

 private:
  SlotPool& pool_;
  Verifier v_;
  uint64_t reserved_seen_ = 0;
};

// moving_avg emits a row per tuple into a reserve of one slot whose events
// the send side gives back slowly: the process stage waits for the slot
// each time instead of failing or taking another; every row arrives, every
// input tuple is accounted for, nothing is lost.
void emitting_operator_on_a_tiny_reserve(Threads threads);

TEST(Node, AnEmittingOperatorWaitsForItsReserveAndLosesNothing) {
  emitting_operator_on_a_tiny_reserve(Threads::kDedicated);
}
TEST(Threads, AnEmittingOperatorWaitsForItsReserveInEveryMode) {
  emitting_operator_on_a_tiny_reserve(Threads::kShared);
  emitting_operator_on_a_tiny_reserve(Threads::kAdaptive);
}

void emitting_operator_on_a_tiny_reserve(Threads threads) {
  SCOPED_TRACE(threads_name(threads));
  Deployment d = small_deployment(16, 1024, 6000);
  if (threads == Threads::kAdaptive) d.rate = 20000;  // waits, so some events run inline
  const OperatorSpec* spec = find_operator_spec("moving_avg");
  ASSERT_NE(spec, nullptr);
  OperatorConfig oc;
  oc.kind = "moving_avg";
  for (const auto& p : spec->params) oc.params.emplace_back(p.key, p.def ? p.def : "");
  oc.set("field", "key");
  oc.set("window", "16");
  oc.derived_stream = d.streams;  // after the generator's streams
  oc.max_event_tuples = 64;
  OperatorChain chain;
  Status cs = OperatorChain::make({oc}, Schema::default_for(d.tuple_bytes), &chain);
  ASSERT_TRUE(cs.ok()) << cs.message();
  auto src = std::make_unique<ReservedSource>(d, 1);
  SlotPool& pool = src->pool();
  auto dest = std::make_unique<SlowVerifier>(pool);
  SlowVerifier* sv = dest.get();
  InstanceConfig ic;
  ic.ring_slots = 4;
  ic.emit_capacity = 1024;  // a few rows per slot: many slots' worth of rows
  ic.threads = threads;
  Instance in(ic, std::move(src), std::move(dest), std::move(chain), [] {});
  in.start();
  in.join();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  const VerifyCounts c = sv->verifier().counts();
  EXPECT_TRUE(c.end_seen);
  EXPECT_EQ(c.tuples, 6000u);      // one row per input tuple
  EXPECT_EQ(c.aggregated, 6000u);  // and every input tuple accounted for
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(c.duplicated, 0u);
  EXPECT_EQ(c.corrupt, 0u);
  // The one reserved slot carried many descriptors in turn: each time the
  // stage waited for the send side to give it back.
  ASSERT_EQ(pool.reserved(), 1u);
  EXPECT_GT(sv->reserved_seen(), 20u);
}

// An operator that waits (a sleep, standing for a blocked call or a
// preemption) and then spins a little per descriptor.
struct WaitingOperator final : Operator {
  const char* name() const override { return "waiting"; }
  Result process(std::byte*, Descriptor&, Emitter&) override {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return kKeep;
  }
  uint64_t calls = 0;
};

// An operator's cost is the CPU time of its thread, not the wall time it
// took: the time it slept is no cost of it.
TEST(Node, OperatorCostIsThreadCpuTimeNotWallTime) {
  Deployment d = small_deployment(16, 1024, 2000);
  auto gen = std::make_unique<Generator>(d, 0);
  auto ver = std::make_unique<Verifier>(gen->pool());
  OperatorChain chain;
  ASSERT_TRUE(OperatorChain::make({}, Schema::default_for(d.tuple_bytes), &chain).ok());
  static const OperatorSpec spec{"waiting", "test", {}};
  auto op = std::make_unique<WaitingOperator>();
  WaitingOperator* w = op.get();
  chain.append(&spec, std::move(op));
  InstanceConfig ic;
  ic.ring_slots = d.ring_slots;
  Instance in(ic, std::move(gen), std::move(ver), std::move(chain), [] {});
  in.start();
  in.join();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  const double slept_s = w->calls * 0.002;
  ASSERT_GT(slept_s, 0.02) << w->calls;
  EXPECT_EQ(in.chain().cost(0).tuples_in, 2000u);
  EXPECT_LT(in.chain().cost(0).cpu_s, slept_s / 4) << "calls " << w->calls;
}

// A deliberately wrong operator (test only, in no shipped registry): it
// consumes everything and reports `by` tuples fewer aggregated than it took.
struct Miscount final : Operator {
  explicit Miscount(uint64_t by) : by_(by) {}
  const char* name() const override { return "miscount"; }
  Result process(std::byte* run, Descriptor& d, Emitter&) override {
    size_t off = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      EventHeader h;
      std::memcpy(&h, run + off, sizeof h);
      off += h.wire_bytes();
      accounts_.filtered(h.stream, filtered_inside(h));
      const uint64_t less = std::min<uint64_t>(h.tuple_count, by_ - taken_);
      taken_ += less;
      accounts_.aggregated(h.stream, h.tuple_count - less);
    }
    return kConsumed;
  }
  void end(EndOfStream* eos) override { accounts_.add_to(eos); }
  uint64_t by_, taken_ = 0;
  StreamAccounts accounts_;
};

// An operator that reports fewer tuples taken than it took: the sink sees
// the gap its count does not explain, as lost.
TEST(Node, AnOperatorThatMiscountsIsCaughtAsLost) {
  Deployment d = small_deployment(32, 4096, 20000);
  auto gen = std::make_unique<Generator>(d, 0);
  auto ver = std::make_unique<Verifier>(gen->pool());
  Verifier* v = ver.get();
  OperatorChain chain;
  ASSERT_TRUE(OperatorChain::make({}, Schema::default_for(d.tuple_bytes), &chain).ok());
  static const OperatorSpec spec{"miscount", "test only", {}};
  chain.append(&spec, std::make_unique<Miscount>(3));
  InstanceConfig ic;
  ic.ring_slots = d.ring_slots;
  Instance in(ic, std::move(gen), std::move(ver), std::move(chain), [] {});
  in.start();
  in.join();
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  EXPECT_TRUE(v->counts().end_seen);
  EXPECT_EQ(v->counts().lost, 3u);
  EXPECT_EQ(v->counts().aggregated, 20000u - 3);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// The live counters: what live() reads is what the stages did, and a stage
// that waits on an empty ring counts the time it waited there (and never
// more than the run lasted).
TEST(Node, LiveCountersCountEventsAndTimeBlockedByReason) {
  Deployment d = small_deployment(64, 2048, 3000);
  d.rate = 5000;  // events/s: the process and send stages mostly wait for input
  auto gen = std::make_unique<Generator>(d, 0);
  auto ver = std::make_unique<Verifier>(gen->pool());
  InstanceConfig ic;
  ic.ring_slots = 4;
  Instance in(ic, std::move(gen), std::move(ver), OperatorChain(), [] {});
  const uint64_t t0 = mono_ns();
  in.start();
  in.join();
  const double wall = (mono_ns() - t0) / 1e9;
  ASSERT_TRUE(in.status().ok()) << in.status().message();
  LiveInstance li;
  in.live(&li);
  EXPECT_EQ(li.out.tuples, 3000u);
  EXPECT_EQ(li.in.events, li.out.events);
  EXPECT_EQ(li.stages[0].events, li.in.events);
  EXPECT_EQ(li.stages[2].events, li.out.events);
  EXPECT_GT(li.stages[1].blocked_ns[kRingEmpty], 0u);
  EXPECT_GT(li.stages[2].blocked_ns[kRingEmpty], 0u);
  for (const auto& s : li.stages) {
    uint64_t sum = 0;
    for (uint64_t b : s.blocked_ns) sum += b;
    EXPECT_LE(sum / 1e9, wall);
  }
  EXPECT_TRUE(li.links.empty());  // a generator and a verifier have none
  // The sink's live histogram has every event, as its summary does.
  ASSERT_NE(in.live_latency(), nullptr);
  EXPECT_EQ(in.live_latency()->count(), li.out.events);
  // And the summary reads the same counters.
  ProcessSummary s;
  in.report(s);
  ASSERT_EQ(s.stages.size(), 3u);
  EXPECT_DOUBLE_EQ(s.stages[1].blocked_s[kRingEmpty], li.stages[1].blocked_ns[kRingEmpty] / 1e9);
}

TEST(LiveHistogram, CumulativeBucketsAndSum) {
  LiveHistogram h;
  h.record(5000);         // 5 us: the first bucket (<= 10 us)
  h.record(1500000);      // 1.5 ms: <= 2 ms
  h.record(20000000000);  // 20 s: beyond every bound
  EXPECT_EQ(h.cumulative(0), 1u);
  EXPECT_EQ(h.cumulative(6), 1u);  // <= 1 ms
  EXPECT_EQ(h.cumulative(7), 2u);  // <= 2 ms
  EXPECT_EQ(h.cumulative(LiveHistogram::kBounds - 1), 2u);
  EXPECT_EQ(h.count(), 3u);
  EXPECT_NEAR(h.sum_s(), 20.001505, 1e-9);
}

// The summary's JSON reads back into the same fields (one list of them).
TEST(ProcessSummary, JsonRoundTripsEveryField) {
  ProcessSummary s;
  s.name = "sink";
  s.role = "sink";
  s.instances = 2;
  s.events_in = 7;
  s.bytes_in = 9;
  s.wall_s = 1.5;
  s.cpe_p = 123.25;
  s.lost = 3;
  s.metrics_url = "http://127.0.0.1:1/metrics";
  s.latency_p99_us = 42.5;
  s.burst.bursts = 4;
  s.burst.head_events = 2;
  s.burst.tail_p99_us = 77.5;
  s.stages.push_back({"send/0", 0.5, 0.25, 7, 4, 1, "0-1", 1, {0.125, 0.25, 0.5}});
  s.cpus = "0,1";
  s.last_cpu = 1;
  s.links.push_back({"node-b->sink", false, 10, 4096, 12, 0, 0});
  ProcessSummary r;
  ASSERT_TRUE(summary_from_json(s.to_json(), &r).ok()) << s.to_json();
  EXPECT_EQ(r.to_json(), s.to_json());
  EXPECT_EQ(r.instances, 2u);
  EXPECT_EQ(r.metrics_url, s.metrics_url);
  EXPECT_EQ(r.burst.bursts, 4u);
  EXPECT_DOUBLE_EQ(r.stages[0].blocked_s[kNoCredit], 0.5);
  EXPECT_EQ(r.links[0].frames, 10u);
  EXPECT_EQ(r.cpus, "0,1");
  EXPECT_EQ(r.last_cpu, 1);
  EXPECT_EQ(r.stages[0].cpus, "0-1");
}

}  // namespace
}  // namespace sluice

#include "node/ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "node/metrics.h"

namespace sluice {
namespace {

TEST(SpscRing, RejectsCapacityThatIsNotAPowerOfTwo) {
  EXPECT_THROW(SpscRing<int>(3), std::invalid_argument);
  EXPECT_THROW(SpscRing<int>(0), std::invalid_argument);
  EXPECT_NO_THROW(SpscRing<int>(4));
}

TEST(SpscRing, ExactlyFullThenOneFree) {
  SpscRing<int> r(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(r.try_push(i));
  EXPECT_FALSE(r.try_push(99));  // exactly full
  EXPECT_EQ(r.size(), 4u);
  int v;
  ASSERT_TRUE(r.try_pop(v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(r.try_push(4));    // one free
  EXPECT_FALSE(r.try_push(5));
  for (int want = 1; want <= 4; ++want) {
    ASSERT_TRUE(r.try_pop(v));
    EXPECT_EQ(v, want);
  }
  EXPECT_FALSE(r.try_pop(v));
}

// Head and tail cross the array's end many times, with batches that straddle
// the wrap edge at every offset.
TEST(SpscRing, BatchesStraddleTheWrapEdgeAtEveryOffset) {
  SpscRing<uint64_t> r(8);
  uint64_t next_in = 0, next_out = 0;
  for (int round = 0; round < 200; ++round) {
    size_t want = 1 + round % 8;
    uint64_t in[8], out[8];
    for (size_t i = 0; i < want; ++i) in[i] = next_in + i;
    size_t pushed = r.try_push_n(in, want);
    EXPECT_EQ(pushed, want);
    next_in += pushed;
    size_t popped = r.try_pop_n(out, 8);
    ASSERT_EQ(popped, pushed);
    for (size_t i = 0; i < popped; ++i) EXPECT_EQ(out[i], next_out++);
  }
  EXPECT_EQ(next_in, next_out);
}

TEST(SpscRing, PartialPushWhenNearlyFull) {
  SpscRing<int> r(4);
  int in[3] = {1, 2, 3};
  EXPECT_EQ(r.try_push_n(in, 3), 3u);
  EXPECT_EQ(r.try_push_n(in, 3), 1u);  // only one place left
  int out[8];
  EXPECT_EQ(r.try_pop_n(out, 8), 4u);
  EXPECT_EQ(out[3], 1);
}

TEST(SpscRing, CloseWakesABlockedConsumerAndDrainsFirst) {
  SpscRing<int> r(4);
  r.try_push(7);
  std::atomic<int> got{-1};
  std::thread t([&] {
    int v[4];
    size_t n = r.pop_n(v, 4, Wait::kBlock);
    EXPECT_EQ(n, 1u);
    n = r.pop_n(v, 4, Wait::kBlock);  // blocks until close
    got = static_cast<int>(n);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.close();
  t.join();
  EXPECT_EQ(got.load(), 0);
  EXPECT_FALSE(r.push(1, Wait::kBlock));
}

TEST(SpscRing, CloseWakesABlockedProducer) {
  SpscRing<int> r(2);
  r.try_push(1);
  r.try_push(2);
  std::atomic<bool> result{true};
  std::thread t([&] { result = r.push(3, Wait::kBlock); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.close();
  t.join();
  EXPECT_FALSE(result.load());
}

// Two threads behind a start barrier move many items through a small ring
// (so both sides wait often); the consumer checks order and count.
class RingTwoThreads : public ::testing::TestWithParam<Wait> {};

TEST_P(RingTwoThreads, OrderAndCountSurviveAMillionItems) {
  constexpr uint64_t kItems = 1'000'000;
  SpscRing<uint64_t> r(64);
  std::barrier start(2);
  std::thread producer([&] {
    start.arrive_and_wait();
    uint64_t batch[7];
    uint64_t next = 0;
    while (next < kItems) {
      size_t n = std::min<uint64_t>(1 + next % 7, kItems - next);
      for (size_t i = 0; i < n; ++i) batch[i] = next + i;
      for (size_t i = 0; i < n; ++i) ASSERT_TRUE(r.push(batch[i], GetParam()));
      next += n;
    }
    r.close();
  });
  start.arrive_and_wait();
  uint64_t expect = 0, out[32];
  for (;;) {
    size_t n = r.pop_n(out, 32, GetParam());
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], expect++);
  }
  producer.join();
  EXPECT_EQ(expect, kItems);
}

INSTANTIATE_TEST_SUITE_P(Waits, RingTwoThreads,
                         ::testing::Values(Wait::kBlock, Wait::kSpin, Wait::kHybrid),
                         [](const auto& info) { return std::string(wait_name(info.param)); });

TEST(Wait, ParsesTheThreePolicies) {
  Wait w;
  EXPECT_TRUE(parse_wait("spin", &w));
  EXPECT_EQ(w, Wait::kSpin);
  EXPECT_TRUE(parse_wait("hybrid", &w));
  EXPECT_EQ(w, Wait::kHybrid);
  EXPECT_TRUE(parse_wait("block", &w));
  EXPECT_EQ(w, Wait::kBlock);
  EXPECT_FALSE(parse_wait("poll", &w));
}

TEST(LatencyHistogram, PercentilesWithinABucket) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 10000; ++v) h.record(v * 1000);
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_EQ(h.max(), 10'000'000u);
  auto near = [](uint64_t got, double want) { return got >= want * 0.93 && got <= want * 1.07; };
  EXPECT_TRUE(near(h.percentile(50), 5e6)) << h.percentile(50);
  EXPECT_TRUE(near(h.percentile(99), 9.9e6)) << h.percentile(99);
  EXPECT_EQ(h.percentile(100), 10'000'000u);
  LatencyHistogram small;
  small.record(3);
  EXPECT_EQ(small.percentile(50), 3u);
}

TEST(ProcessSummary, CyclesPerEventFollowTheStudysFormulas) {
  ProcessSummary s;
  s.events_in = 1'000'000;
  s.events_out = 1'000'000;
  s.bytes_in = s.bytes_out = 1'000'000'000;
  s.user_s = 0.5;
  s.sys_s = 0.25;
  s.wall_s = 1.0;
  s.cores = 2;
  s.clock_ghz = 2.0;
  s.peak_watts = 100;
  s.compute();
  EXPECT_DOUBLE_EQ(s.cpe_u, 500.0);   // 0.5 s x 2e9 / 2e6 events
  EXPECT_DOUBLE_EQ(s.cpe_s, 250.0);
  EXPECT_DOUBLE_EQ(s.cpe_p, 750.0);
  EXPECT_DOUBLE_EQ(s.cpe_i, 1250.0);  // (2 x 1 - 0.75) x 2e9 / 2e6
  EXPECT_DOUBLE_EQ(s.cpb_p, 0.75);
  EXPECT_DOUBLE_EQ(s.epe_joules, 100 * (750 + 0.7 * 1250) / (2 * 2e9));
}

TEST(ProcessSummary, JsonRoundTrip) {
  ProcessSummary s;
  s.name = "node-\"a\"";
  s.role = "node";
  s.ok = false;
  s.error = "line1\nline2";
  s.events_in = 42;
  s.tuples_out = 7;
  s.latency_p99_us = 12.5;
  s.stages.push_back({"send/0", 0.25, 0.5, 9});
  ProcessSummary back;
  ASSERT_TRUE(summary_from_json(s.to_json(), &back).ok());
  EXPECT_EQ(back.name, s.name);
  EXPECT_FALSE(back.ok);
  EXPECT_EQ(back.error, s.error);
  EXPECT_EQ(back.events_in, 42u);
  EXPECT_EQ(back.tuples_out, 7u);
  EXPECT_DOUBLE_EQ(back.latency_p99_us, 12.5);
  ASSERT_EQ(back.stages.size(), 1u);
  EXPECT_EQ(back.stages[0].events, 9u);
  EXPECT_FALSE(summary_from_json("[1, 2", &back).ok());
}

}  // namespace
}  // namespace sluice

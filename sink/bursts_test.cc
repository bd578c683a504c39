#include "sink/bursts.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

constexpr uint64_t kMs = 1000000;  // ns

// Bursts of `n` events every 10 ms: event i of burst b is sent at
// b x 10 ms + i x 1 us, and takes `base + i x step` ns to arrive.
BurstStats feed(int bursts, int n, uint32_t head, uint64_t base, uint64_t step) {
  BurstStats s(10 * kMs, head);
  const uint64_t t0 = 5000 * kMs;  // any epoch
  for (int b = 0; b < bursts; ++b)
    for (int i = 0; i < n; ++i) {
      const uint64_t sent = t0 + b * 10 * kMs + i * 1000;
      s.record(sent, sent + base + i * step);
    }
  s.finish();
  return s;
}

TEST(BurstStats, EachPeriodIsOneBurst) {
  BurstStats s = feed(7, 20, 2, 100000, 0);
  EXPECT_EQ(s.bursts(), 7u);
  EXPECT_EQ(s.processing().count(), 7u);
  EXPECT_EQ(s.head_latency().count(), 7u * 2);
  EXPECT_EQ(s.tail_latency().count(), 7u * 18);
  EXPECT_EQ(s.late(), 0u);
}

TEST(BurstStats, ProcessingIsFirstSentToLastReceived) {
  // Burst: 10 events sent 1 us apart, the last arriving 500 us after it was
  // sent: first sent to last received is 9 us + 500 us.
  BurstStats s = feed(3, 10, 1, 500000, 0);
  const uint64_t want = 9 * 1000 + 500000;
  // Within the histogram's resolution (1/64).
  EXPECT_NEAR(double(s.processing().percentile(50)), double(want), want / 64.0);
  EXPECT_EQ(s.processing().max(), want);
}

TEST(BurstStats, AQueueInsideABurstShowsAsATailSlowerThanItsHead) {
  // Each later event of a burst waits 20 us more: the first 4 (head) see
  // 0..60 us on top of 50 us, the tail 80..380 us.
  BurstStats s = feed(5, 20, 4, 50000, 20000);
  EXPECT_LE(s.head_latency().max(), 50000u + 3 * 20000u);
  EXPECT_GE(s.tail_latency().percentile(1), 50000u + 4 * 20000u - (50000u + 4 * 20000u) / 16);
  EXPECT_EQ(s.tail_latency().max(), 50000u + 19 * 20000u);
  ProcessSummary sum;
  s.report(sum);
  EXPECT_EQ(sum.burst.bursts, 5u);
  EXPECT_EQ(sum.burst.head_events, 4u);
  EXPECT_LT(sum.burst.head_p99_us, sum.burst.tail_p50_us);
  EXPECT_DOUBLE_EQ(sum.burst.tail_max_us, (50000 + 19 * 20000) / 1e3);
}

TEST(BurstStats, ABurstMadeLateInItsPeriodStaysItsOwn) {
  // The first burst starts 3 ms into its period, the second on time, the
  // third 4 ms late: rounding to the nearest period keeps them apart.
  BurstStats s(10 * kMs, 1);
  for (uint64_t start : {3 * kMs, 10 * kMs, 24 * kMs})
    for (int i = 0; i < 5; ++i) s.record(start + i * 1000, start + i * 1000 + 10000);
  s.finish();
  EXPECT_EQ(s.bursts(), 3u);
  EXPECT_EQ(s.head_latency().count(), 3u);
}

TEST(BurstStats, AnEventOfAnOlderBurstArrivingLateIsTailOnly) {
  BurstStats s(10 * kMs, 1);
  s.record(0, 1000);
  s.record(10 * kMs, 10 * kMs + 1000);
  s.record(1000, 20 * kMs);  // burst 0, arriving during burst 1
  s.finish();
  EXPECT_EQ(s.bursts(), 2u);
  EXPECT_EQ(s.late(), 1u);
  EXPECT_EQ(s.tail_latency().count(), 1u);
  // Burst 0 closed before it came: its processing time is not stretched.
  EXPECT_EQ(s.processing().percentile(0), 1000u);
}

TEST(BurstStats, MergeAddsBurstsAndTheTableListsEveryKind) {
  BurstStats a = feed(2, 10, 1, 1000, 0), b = feed(3, 10, 1, 1000, 0);
  a.merge(b);
  EXPECT_EQ(a.bursts(), 5u);
  const std::string t = a.histogram_tsv();
  EXPECT_EQ(t.rfind("kind\tupper_us\tcount\n", 0), 0u);
  for (const char* k : {"\nprocessing\t", "\nhead\t", "\ntail\t"}) EXPECT_NE(t.find(k), std::string::npos) << t;
}

}  // namespace
}  // namespace sluice

#include "node/metrics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace sluice {
namespace {

TEST(LatencyHistogram, PercentilesWithinABucket) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 10000; ++v) h.record(v * 1000);
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_EQ(h.max(), 10'000'000u);
  // Within 1/64 (and above the truth: a percentile is its bucket's upper
  // bound). 16 buckets per power of two put p50 4.9% above.
  auto near = [](uint64_t got, double want) { return got >= want && got <= want * (1 + 1 / 64.0); };
  EXPECT_TRUE(near(h.percentile(50), 5e6)) << h.percentile(50);
  EXPECT_TRUE(near(h.percentile(99), 9.9e6)) << h.percentile(99);
  EXPECT_EQ(h.percentile(100), 10'000'000u);
  LatencyHistogram small;
  small.record(3);
  EXPECT_EQ(small.percentile(50), 3u);
}

// A sink's snapshot keeps its histogram's non-empty buckets only: it comes
// back with every bucket, and a damaged one (a count off, buckets out of
// order or range) is refused, leaving the histogram as it was.
TEST(LatencyHistogram, ASnapshotHoldsTheUsedBucketsAndComesBackWhole) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 5000; ++v) h.record(20000 + v * v / 12);  // 20 us to 2.1 ms
  SnapshotOut out;
  h.save(out);
  EXPECT_LT(out.data().size(), 8192u) << "all 4,096 buckets written (32 KiB), not the used range";
  LatencyHistogram back;
  SnapshotIn in(out.data().data(), out.data().size());
  ASSERT_TRUE(back.load(in).ok());
  EXPECT_EQ(in.left(), 0u);
  EXPECT_EQ(back.count(), h.count());
  EXPECT_EQ(back.max(), h.max());
  std::vector<std::pair<uint64_t, uint64_t>> a, b;
  h.for_each_bucket([&](uint64_t hi, uint64_t n) { a.emplace_back(hi, n); });
  back.for_each_bucket([&](uint64_t hi, uint64_t n) { b.emplace_back(hi, n); });
  EXPECT_EQ(a, b);
  // What the layout is: count, max, the first bucket kept, how many, then
  // their counts.
  auto damaged = [&](size_t at, const void* p, size_t n) {
    std::string bytes = out.data();
    std::memcpy(bytes.data() + at, p, n);
    LatencyHistogram x;
    x.record(5);
    SnapshotIn din(bytes.data(), bytes.size());
    const Status st = x.load(din);
    EXPECT_EQ(x.count(), 1u) << "a refused snapshot changed the histogram";
    return st.ok() ? std::string() : st.message();
  };
  const uint64_t more = h.count() + 1;
  EXPECT_NE(damaged(0, &more, 8).find("its total says 5001"), std::string::npos) << damaged(0, &more, 8);
  const uint64_t higher = h.max() * 4;
  EXPECT_NE(damaged(8, &higher, 8).find("do not fit its maximum"), std::string::npos);
  const uint16_t beyond = 4090;
  EXPECT_NE(damaged(16, &beyond, 2).find("do not fit"), std::string::npos);
  const uint16_t fewer = 3;
  EXPECT_NE(damaged(18, &fewer, 2).find("do not fit"), std::string::npos);
  const uint64_t moved = 0;  // the first bucket's count gone: the total no longer holds
  EXPECT_NE(damaged(20, &moved, 8).find("its total says"), std::string::npos);
}

// The once-a-second line says each side's rate apart: a relay that takes in
// and sends 1 Gb/s shows 1 Gb/s in and 1 Gb/s out, never their 2 Gb/s sum.
TEST(ProgressLine, EachSideItsOwnRateNeverTheSum) {
  ProgressCounts last{1000, 1000, 125'000'000, 125'000'000};
  ProgressCounts now{5000, 4000, 375'000'000, 375'000'000};
  EXPECT_EQ(progress_line(3.0, 2.0, now, last, true, true),
            "3 s: in 5000 events (2000/s, 1.00 Gb/s), out 4000 events (1500/s, 1.00 Gb/s)");
  // A loadgen has no in side, a sink no out side.
  EXPECT_EQ(progress_line(3.0, 2.0, now, last, false, true), "3 s: out 4000 events (1500/s, 1.00 Gb/s)");
  EXPECT_EQ(progress_line(3.0, 2.0, now, last, true, false), "3 s: in 5000 events (2000/s, 1.00 Gb/s)");
  // A filter sends less than it takes: each side its own bytes.
  now.bytes_out = 187'500'000;
  EXPECT_EQ(progress_line(1.0, 1.0, now, last, true, true),
            "1 s: in 5000 events (4000/s, 2.00 Gb/s), out 4000 events (3000/s, 0.50 Gb/s)");
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
  StageSummary stage;
  stage.name = "send/0";
  stage.user_s = 0.25;
  stage.sys_s = 0.5;
  stage.events = 9;
  stage.ctx_voluntary = 5;
  stage.ctx_involuntary = 2;
  s.stages.push_back(stage);
  s.ctx_voluntary = 31;
  s.ctx_involuntary = 3;
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
  EXPECT_EQ(back.stages[0].ctx_voluntary, 5u);
  EXPECT_EQ(back.stages[0].ctx_involuntary, 2u);
  EXPECT_EQ(back.ctx_voluntary, 31u);
  EXPECT_EQ(back.ctx_involuntary, 3u);
  EXPECT_FALSE(summary_from_json("[1, 2", &back).ok());
}

// The summary is JSON any reader takes: a name or error that is not UTF-8
// (a path, a library's message) is written replaced, not as raw bytes; and
// the reader is a JSON reader, not a YAML one that takes what JSON does not.
TEST(ProcessSummary, JsonIsStrictBothWays) {
  ProcessSummary s;
  s.name = "node-a";
  s.error = std::string("bad byte \xff here\ttab");
  ProcessSummary back;
  ASSERT_TRUE(summary_from_json(s.to_json(), &back).ok()) << s.to_json();
  EXPECT_EQ(back.error, "bad byte \xef\xbf\xbd here\ttab");  // U+FFFD
  EXPECT_EQ(s.to_json().rfind("{\"name\":\"node-a\",\"role\":", 0), 0u) << s.to_json();
  EXPECT_FALSE(summary_from_json("{name: node-a, ok: yes}", &back).ok());
  EXPECT_FALSE(summary_from_json("{\"ok\": \"yes\"}", &back).ok());  // a string is no bool
  EXPECT_EQ(json_escape(std::string("a\"b\\c\n\x01")), "a\\\"b\\\\c\\n\\u0001");
}
}  // namespace
}  // namespace sluice

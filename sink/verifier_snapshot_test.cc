// A sink's part of a snapshot (Verifier::save / load): it comes back whole,
// and damaged bytes are refused with what was wrong, leaving the verifier
// as it was (sink/fuzz/fuzz_verifier reads arbitrary bytes the same way).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/snapshot.h"
#include "loadgen/generator.h"
#include "node/metrics.h"
#include "sink/verifier.h"

namespace sluice {
namespace {

Deployment deployment() {
  Deployment d;
  d.tuple_bytes = 128;
  d.event_bytes = 1024;
  d.streams = 4;
  d.loadgen_slots = 8;
  return d;
}

void feed(Generator& g, Verifier& v, int n) {
  Descriptor d[1];
  size_t got = 0;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(g.next(std::span<Descriptor>(d, 1), &got).ok());
    ASSERT_EQ(got, 1u);
    ASSERT_TRUE(v.consume(std::span<const Descriptor>(d, 1)).ok());
  }
}

std::string saved(const Verifier& v) {
  SnapshotOut out;
  v.save(out);
  return out.data();
}

// Where the fields after the latency histogram (whose length varies) lie,
// counted from the end: keep, part_missing, missing, corrupt_unseen, seen.
constexpr size_t kKeepFromEnd = 8;
constexpr size_t kSeenFromEnd = 8 + 3 * kMaxStreams * 8 + kMaxStreams;

TEST(VerifierSnapshot, ComesBackWholeAndGoesOnCounting) {
  Generator g(deployment(), 0);
  Verifier a(g.pool());
  feed(g, a, 40);
  const std::string bytes = saved(a);
  Verifier b(g.pool());
  SnapshotIn in(bytes.data(), bytes.size());
  ASSERT_TRUE(b.load(in).ok());
  EXPECT_EQ(b.counts().events, 40u);
  EXPECT_EQ(b.counts().tuples, a.counts().tuples);
  EXPECT_EQ(saved(b), bytes);
  feed(g, b, 10);  // the streams go on where a left them: nothing lost, nothing twice
  EXPECT_EQ(b.counts().events, 50u);
  EXPECT_EQ(b.counts().lost, 0u);
  EXPECT_EQ(b.counts().duplicated, 0u);
  EXPECT_EQ(b.counts().corrupt, 0u);
}

// A sink's last snapshot is taken after END: it comes back ended, so that a
// sink restarted between its END and its summary reports instead of waiting.
TEST(VerifierSnapshot, OneTakenAfterEndComesBackEnded) {
  Generator g(deployment(), 0);
  Verifier a(g.pool());
  feed(g, a, 40);
  EXPECT_FALSE(a.stream_ended());
  std::string bytes = saved(a);
  Verifier b(g.pool());
  SnapshotIn in(bytes.data(), bytes.size());
  ASSERT_TRUE(b.load(in).ok());
  EXPECT_FALSE(b.stream_ended());
  bytes[offsetof(VerifyCounts, end_seen)] = 1;
  Verifier c(g.pool());
  SnapshotIn in2(bytes.data(), bytes.size());
  ASSERT_TRUE(c.load(in2).ok());
  EXPECT_TRUE(c.stream_ended());
  EXPECT_EQ(c.counts().events, 40u);
}

// Its bytes and its stream's first and last arrival come back too: the
// report measures a restored sink's tuples/s over its whole stream
// (deploy/report.cc), not over the run after its restart.
TEST(VerifierSnapshot, ItsBytesAndItsStreamsIntervalComeBack) {
  Generator g(deployment(), 0);
  Verifier a(g.pool());
  feed(g, a, 40);
  const VerifyCounts had = a.counts();
  ASSERT_GT(had.bytes, 40u * kEventHeaderBytes);
  EXPECT_EQ(had.bytes % 40, 0u);  // 40 events of one size
  ASSERT_GT(had.first_ns, 0u);
  ASSERT_GE(had.last_ns, had.first_ns);
  ProcessSummary fresh;
  a.report(fresh);
  EXPECT_EQ(fresh.restored_bytes, 0u);  // not restored: none of it
  EXPECT_EQ(fresh.restored_first_arrival_s, 0);
  EXPECT_DOUBLE_EQ(fresh.last_arrival_s, had.last_ns * 1e-9);

  const std::string bytes = saved(a);
  Verifier b(g.pool());
  SnapshotIn in(bytes.data(), bytes.size());
  ASSERT_TRUE(b.load(in).ok());
  ProcessSummary before;
  b.report(before);
  EXPECT_EQ(before.restored_bytes, had.bytes);
  EXPECT_DOUBLE_EQ(before.restored_first_arrival_s, had.first_ns * 1e-9);
  EXPECT_DOUBLE_EQ(before.last_arrival_s, had.last_ns * 1e-9);
  EXPECT_EQ(before.first_arrival_s, 0);  // nothing came in this run yet

  feed(g, b, 10);
  ProcessSummary after;
  b.report(after);
  EXPECT_EQ(b.counts().bytes, had.bytes / 40 * 50);
  EXPECT_EQ(after.restored_bytes, had.bytes);  // what the snapshot had, still
  EXPECT_DOUBLE_EQ(after.restored_first_arrival_s, had.first_ns * 1e-9);
  EXPECT_GT(after.first_arrival_s, 0);
  EXPECT_GE(after.last_arrival_s, after.first_arrival_s);
  EXPECT_GE(after.last_arrival_s, before.last_arrival_s);
}

TEST(VerifierSnapshot, DamagedFlagsLengthsAndEndsAreRefusedAndChangeNothing) {
  Generator g(deployment(), 0);
  Verifier a(g.pool());
  feed(g, a, 40);
  const std::string whole = saved(a);
  struct Case {
    const char* what;
    std::string bytes;
    const char* error;
  };
  std::vector<Case> cases;
  std::string s = whole;
  s[offsetof(VerifyCounts, end_seen)] = 2;
  cases.push_back({"END flag 2", s, "holds 2 for whether END was seen"});
  s = whole;
  s[s.size() - kSeenFromEnd + 3] = 7;
  cases.push_back({"stream 3's flag 7", s, "holds 7 for whether stream 3 was seen"});
  s = whole;
  const int64_t keep = -5;
  std::memcpy(s.data() + s.size() - kKeepFromEnd, &keep, 8);
  cases.push_back({"results length -5", s, "holds a results file length of -5"});
  cases.push_back({"cut short", whole.substr(0, whole.size() - 1), "ends early"});
  for (const Case& c : cases) {
    Verifier b(g.pool());
    feed(g, b, 3);
    const std::string before = saved(b);
    SnapshotIn in(c.bytes.data(), c.bytes.size());
    const Status st = b.load(in);
    ASSERT_FALSE(st.ok()) << c.what;
    EXPECT_NE(st.message().find("the sink's verifier: "), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.error), std::string::npos) << c.what << ": " << st.message();
    EXPECT_EQ(saved(b), before) << c.what << ": a refused snapshot changed the verifier";
  }
}

// A results file cut or replaced since the snapshot: the restored sink
// fails naming it, instead of padding it with zeros to the length the
// snapshot saw.
TEST(VerifierSnapshot, AResultsFileShorterThanTheSnapshotSawIsAnError) {
  const std::string path = ::testing::TempDir() + "/verifier-results-" + std::to_string(getpid()) + ".csv";
  Generator g(deployment(), 0);
  const Schema schema = Schema::default_for(128);
  Verifier a(g.pool());
  ASSERT_TRUE(a.write_results(path, schema).ok());
  feed(g, a, 5);
  const std::string bytes = saved(a);
  // Written while the stream runs as PATH.part (sink/results.h).
  const std::string part = path + ".part";
  ASSERT_GT(std::filesystem::file_size(part), 0u);
  std::filesystem::resize_file(part, 10);
  Verifier b(g.pool());
  ASSERT_TRUE(b.write_results(path, schema).ok());
  SnapshotIn in(bytes.data(), bytes.size());
  ASSERT_TRUE(b.load(in).ok());
  Descriptor d[1];
  size_t got = 0;
  ASSERT_TRUE(g.next(std::span<Descriptor>(d, 1), &got).ok());
  const Status st = b.consume(std::span<const Descriptor>(d, 1));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("results file " + part + ": 10 bytes, fewer than the"), std::string::npos)
      << st.message();
  EXPECT_EQ(std::filesystem::file_size(part), 10u);
  g.pool().release(d[0].slot);
  std::filesystem::remove(part);
}

}  // namespace
}  // namespace sluice

// The verifier behind a key split: parts of events and the partitioned
// account of END reconcile to lost = 0, and a wrong account is caught.
#include "sink/verifier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "graph/partition.h"

namespace sluice {
namespace {

constexpr uint32_t kTupleBytes = 16;  // seq u64, key u32, 4 bytes payload
constexpr uint32_t kEvents = 10, kPerEvent = 8;

// kEvents events of stream 0, seq from 0, key = seq % 5.
std::vector<std::byte> source_run() {
  std::vector<std::byte> out;
  for (uint32_t e = 0; e < kEvents; ++e) {
    std::vector<std::byte> ev(kEventHeaderBytes + kPerEvent * kTupleBytes);
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.tuple_bytes = kTupleBytes;
    h.first_seq = uint64_t{e} * kPerEvent;
    h.tuple_count = h.tuple_span = kPerEvent;
    h.event_seq = e;
    std::memcpy(ev.data(), &h, sizeof h);
    for (uint32_t i = 0; i < kPerEvent; ++i) {
      const uint64_t seq = h.first_seq + i;
      const uint32_t key = static_cast<uint32_t>(seq % 5);
      std::memcpy(ev.data() + kEventHeaderBytes + i * kTupleBytes, &seq, 8);
      std::memcpy(ev.data() + kEventHeaderBytes + i * kTupleBytes + 8, &key, 4);
    }
    seal_event(ev.data());
    out.insert(out.end(), ev.begin(), ev.end());
  }
  return out;
}

struct Link0 {
  std::vector<std::byte> parts;
  uint32_t events = 0, tuples = 0;
  PartitionTally tally{2};
};

Link0 cut() {
  Link0 l;
  const std::vector<std::byte> run = source_run();
  FieldRef key{8, FieldType::kU32, 4};
  l.parts.resize(run.size());
  uint32_t next = 0;
  const size_t bytes = write_parts(run.data(), kEvents, key, 0, 2, l.parts.data(), l.parts.size(),
                                   &next, &l.events, &l.tuples, &l.tally);
  l.parts.resize(bytes);
  return l;
}

void end_with(Verifier& v, uint64_t partitioned) {
  EndOfStream eos{};
  eos.n_streams = 1;
  eos.flags = kEndAccounts | kEndPartitioned;
  eos.streams[0] = {0, 0, uint64_t{kEvents} * kPerEvent, kEvents};
  eos.accounts[0].partitioned = partitioned;
  std::vector<std::byte> wire(eos.wire_bytes());
  write_end(eos, wire.data());
  ASSERT_EQ(check_end_of_stream(wire.data(), wire.size()), "");
  EndOfStream back{};
  read_end(wire.data(), wire.size(), &back);
  EXPECT_EQ(back.accounts[0].partitioned, partitioned);
  v.verify_end(wire.data(), static_cast<uint32_t>(wire.size()));
}

TEST(VerifierKeySplit, PartsAndThePartitionedAccountLoseNothing) {
  Link0 l = cut();
  ASSERT_GT(l.tuples, 0u);
  ASSERT_LT(l.tuples, kEvents * kPerEvent);
  SlotPool pool(1, 64);
  Verifier v(pool);
  v.verify_run(l.parts.data(), Descriptor{0, 0, static_cast<uint32_t>(l.parts.size()), l.events,
                                          l.tuples, 0}, 0);
  end_with(v, l.tally.not_sent(0, 0));
  EXPECT_EQ(v.counts().tuples, l.tuples);
  EXPECT_EQ(v.counts().lost, 0u);
  EXPECT_EQ(v.counts().corrupt, 0u);
  EXPECT_EQ(v.counts().filtered, 0u);
  EXPECT_EQ(v.counts().partitioned, kEvents * kPerEvent - l.tuples);
}

// A filter ahead of the split dropped every third tuple inside the events:
// each sink counts those filtered, never partitioned, and ends with lost = 0;
// over both sinks a tuple that passed the filter is partitioned once (n - 1
// times over n sinks, here once).
TEST(VerifierKeySplit, TuplesFilteredBeforeTheSplitAreFilteredNotPartitioned) {
  std::vector<std::byte> src = source_run();
  std::vector<std::byte> run;
  uint64_t dropped = 0, kept = 0;
  for (size_t off = 0; off < src.size();) {
    EventHeader h;
    std::memcpy(&h, src.data() + off, sizeof h);
    std::vector<std::byte> ev(kEventHeaderBytes);
    for (uint32_t i = 0; i < h.tuple_count; ++i) {
      const std::byte* t = src.data() + off + kEventHeaderBytes + i * kTupleBytes;
      if (tuple_seq(t) % 3 == 0) {
        ++dropped;
        continue;
      }
      ev.insert(ev.end(), t, t + kTupleBytes);
      ++kept;
    }
    off += h.wire_bytes();
    h.tuple_count = static_cast<uint32_t>((ev.size() - kEventHeaderBytes) / kTupleBytes);
    std::memcpy(ev.data(), &h, sizeof h);
    seal_event(ev.data());
    run.insert(run.end(), ev.begin(), ev.end());
  }
  FieldRef key{8, FieldType::kU32, 4};
  PartitionTally tally(2);
  uint64_t partitioned = 0, filtered = 0, tuples = 0;
  for (uint32_t link = 0; link < 2; ++link) {
    std::vector<std::byte> parts(run.size());
    uint32_t next = 0, events = 0, n = 0;
    parts.resize(write_parts(run.data(), kEvents, key, link, 2, parts.data(), parts.size(), &next,
                             &events, &n, &tally));
    ASSERT_EQ(next, kEvents);
    SlotPool pool(1, 64);
    Verifier v(pool);
    v.verify_run(parts.data(), Descriptor{0, 0, static_cast<uint32_t>(parts.size()), events, n, 0}, 0);
    EndOfStream eos{};
    eos.n_streams = 1;
    eos.flags = kEndAccounts | kEndPartitioned;
    eos.streams[0] = {0, 0, uint64_t{kEvents} * kPerEvent, kEvents};
    eos.accounts[0].partitioned = tally.not_sent(0, link);
    eos.accounts[0].filtered = tally.filtered_ahead(0);
    std::vector<std::byte> wire(eos.wire_bytes());
    write_end(eos, wire.data());
    v.verify_end(wire.data(), static_cast<uint32_t>(wire.size()));
    EXPECT_EQ(v.counts().lost, 0u) << "link " << link;
    EXPECT_EQ(v.counts().corrupt, 0u) << "link " << link;
    EXPECT_EQ(v.counts().filtered, dropped) << "link " << link;
    EXPECT_EQ(v.counts().partitioned, kept - n) << "link " << link;
    partitioned += v.counts().partitioned;
    filtered += v.counts().filtered;
    tuples += n;
  }
  EXPECT_EQ(tuples, kept);
  EXPECT_EQ(partitioned, kept);
}

TEST(VerifierKeySplit, AClaimBeyondWhatIsMissingIsCorrupt) {
  Link0 l = cut();
  SlotPool pool(1, 64);
  Verifier v(pool);
  v.verify_run(l.parts.data(), Descriptor{0, 0, static_cast<uint32_t>(l.parts.size()), l.events,
                                          l.tuples, 0}, 0);
  end_with(v, l.tally.not_sent(0, 0) + 3);
  EXPECT_EQ(v.counts().lost, 0u);
  EXPECT_EQ(v.counts().miscounted, 3u);
  EXPECT_EQ(v.counts().corrupt, 3u);
}

TEST(VerifierKeySplit, ALostPartIsLostTuplesOfThisLinkOnly) {
  Link0 l = cut();
  // Leave out the last part.
  size_t off = 0;
  EventHeader h{};
  for (uint32_t e = 0; e < l.events; ++e) {
    std::memcpy(&h, l.parts.data() + off, sizeof h);
    if (e + 1 < l.events) off += h.wire_bytes();
  }
  SlotPool pool(1, 64);
  Verifier v(pool);
  v.verify_run(l.parts.data(), Descriptor{0, 0, static_cast<uint32_t>(off), l.events - 1,
                                          l.tuples - h.tuple_count, 0}, 0);
  end_with(v, l.tally.not_sent(0, 0));
  EXPECT_EQ(v.counts().lost, h.tuple_count);
  EXPECT_EQ(v.counts().corrupt, 0u);
}

// With acks (dedupe) a link that broke and came back replays what was not
// acknowledged: parts this sink already had are dropped by event_seq like
// whole events, counted deduplicated, never duplicated, and the accounts
// still balance.
TEST(VerifierKeySplit, RepeatedPartsAreDeduplicatedWithAcks) {
  Link0 l = cut();
  SlotPool pool(1, 64);
  Verifier v(pool);
  v.dedupe(true);
  const Descriptor d{0, 0, static_cast<uint32_t>(l.parts.size()), l.events, l.tuples, 0};
  v.verify_run(l.parts.data(), d, 0);
  // The second half again, as a replay would send it.
  size_t off = 0;
  uint32_t tuples = 0;
  EventHeader h{};
  for (uint32_t e = 0; e < l.events / 2; ++e) {
    std::memcpy(&h, l.parts.data() + off, sizeof h);
    off += h.wire_bytes();
    tuples += h.tuple_count;
  }
  v.verify_run(l.parts.data() + off, Descriptor{0, 0, static_cast<uint32_t>(l.parts.size() - off),
                                                l.events - l.events / 2, l.tuples - tuples, 0}, 0);
  end_with(v, l.tally.not_sent(0, 0));
  EXPECT_EQ(v.counts().tuples, l.tuples);
  EXPECT_EQ(v.counts().deduplicated, l.tuples - tuples);
  EXPECT_EQ(v.counts().duplicated, 0u);
  EXPECT_EQ(v.counts().lost, 0u);
  EXPECT_EQ(v.counts().filtered, 0u);
  EXPECT_EQ(v.counts().corrupt, 0u);
}

// Pauses of the stream at the sink, for each recovery's time: a batch after
// kStallNs or more of silence is kept with its pause; shorter gaps are not;
// when the list is full the longest pauses stay; report gives them in time
// order, in seconds, with the first event's time.
TEST(VerifierStalls, PausesOfAtLeastTheThresholdAreKeptTheLongestWhenFull) {
  SlotPool pool(1, 64);
  Verifier v(pool);
  const uint64_t ms = 1'000'000, t0 = 1'000'000'000'000ull;
  v.arrived(t0);
  v.arrived(t0 + 99 * ms);    // 99 ms: not a pause
  v.arrived(t0 + 299 * ms);   // 200 ms
  ProcessSummary s;
  v.report(s);
  EXPECT_DOUBLE_EQ(s.first_arrival_s, t0 * 1e-9);
  ASSERT_EQ(s.stalls_s.size(), 1u);
  EXPECT_NEAR(s.stalls_s[0][0], (t0 + 99 * ms) * 1e-9, 1e-6);
  EXPECT_NEAR(s.stalls_s[0][1], (t0 + 299 * ms) * 1e-9, 1e-6);
  // Fill it with pauses of 100 ms, then one of 500 ms: the 500 ms one and
  // the 200 ms one are among those kept, and one of 100 ms went.
  uint64_t t = t0 + 299 * ms;
  for (size_t i = 0; i < ProcessSummary::kMaxStalls; ++i) v.arrived(t += 100 * ms);
  v.arrived(t += 500 * ms);
  v.arrived(t += 150 * ms);  // longer than the shortest kept: replaces one of 100 ms
  v.arrived(t += 100 * ms);  // not longer than the shortest kept: dropped
  ProcessSummary full;
  v.report(full);
  ASSERT_EQ(full.stalls_s.size(), ProcessSummary::kMaxStalls);
  size_t long_ones = 0;
  for (size_t i = 0; i < full.stalls_s.size(); ++i) {
    const double d = full.stalls_s[i][1] - full.stalls_s[i][0];
    if (d > 0.12) ++long_ones;
    if (i) {
      EXPECT_LT(full.stalls_s[i - 1][0], full.stalls_s[i][0]);  // in time order
    }
  }
  EXPECT_EQ(long_ones, 3u);  // 200, 500 and 150 ms
  EXPECT_NEAR(full.stalls_s.back()[1], (t - 100 * ms) * 1e-9, 1e-6);  // the 150 ms one, last kept
}

}  // namespace
}  // namespace sluice

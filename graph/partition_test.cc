// The key split's cutting of events into parts (graph/partition.h), against
// a reference computed tuple by tuple.
#include "graph/partition.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

namespace sluice {
namespace {

constexpr uint32_t kTupleBytes = 24;  // seq u64, key u32, value i64, 4 bytes payload

// Events of stream `stream` with random keys; some with tuples dropped
// inside (count < span, as a filter leaves them) and some with array data.
struct EventRun {
  std::vector<std::byte> bytes;
  uint32_t events = 0;
  std::map<uint64_t, uint32_t> key_of;  // seq -> key, of the tuples present
  uint64_t span = 0;
};

EventRun make_run(std::mt19937_64& rng, uint32_t stream, uint32_t events) {
  EventRun r;
  uint64_t seq = 1000;
  for (uint32_t e = 0; e < events; ++e) {
    const uint32_t span = 1 + rng() % 40;
    const uint32_t data = (e % 3 == 0) ? 16 : 0;
    std::vector<std::byte> ev(kEventHeaderBytes + size_t{span} * kTupleBytes + data);
    uint32_t count = 0;
    for (uint32_t i = 0; i < span; ++i) {
      if (e % 4 == 1 && i % 3 == 0) continue;  // dropped inside the event
      std::byte* t = ev.data() + kEventHeaderBytes + size_t{count} * kTupleBytes;
      const uint64_t s = seq + i;
      const uint32_t key = static_cast<uint32_t>(rng() % 50);
      const int64_t value = static_cast<int64_t>(rng());
      std::memcpy(t, &s, 8);
      std::memcpy(t + 8, &key, 4);
      std::memcpy(t + 12, &value, 8);
      r.key_of[s] = key;
      ++count;
    }
    for (uint32_t i = 0; i < data; ++i)
      ev[kEventHeaderBytes + size_t{count} * kTupleBytes + i] = std::byte(i * 7 + e);
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.stream = stream;
    h.tuple_bytes = kTupleBytes;
    h.first_seq = seq;
    h.tuple_count = count;
    h.tuple_span = span;
    h.data_bytes = data;
    h.event_seq = e;
    std::memcpy(ev.data(), &h, sizeof h);
    ev.resize(h.wire_bytes());
    seal_event(ev.data());
    r.bytes.insert(r.bytes.end(), ev.begin(), ev.end());
    seq += span;
    r.span += span;
  }
  r.events = events;
  return r;
}

Schema keyed() {
  Schema s;
  EXPECT_TRUE(Schema::make("keyed", {{"key", FieldType::kU32, 4}, {"value", FieldType::kI64, 8}},
                           kTupleBytes, &s)
                  .ok());
  return s;
}

TEST(KeyHash, IsFixedAndSpreads) {
  // Fixed: the same key, the same link, in every process and run.
  EXPECT_EQ(key_hash(0), 0u);
  EXPECT_EQ(key_hash(1), 0x5692161d100b05e5ULL);  // the splitmix64 finalizer of 1
  std::vector<int> per(4, 0);
  for (uint64_t k = 0; k < 4000; ++k) ++per[key_link(k, 4)];
  for (int n : per) EXPECT_GT(n, 800);
  // A few small keys (the esper query's 8 groups) spread as evenly as a
  // fixed hash can: the low bits sent 7 of 8 to one of two links.
  std::vector<int> two(2, 0), four(4, 0);
  for (uint64_t k = 0; k < 8; ++k) ++two[key_link(k, 2)], ++four[key_link(k, 4)];
  EXPECT_EQ(two, (std::vector<int>{4, 4}));
  for (int n : four) EXPECT_LE(n, 3);
}

// Every tuple lands in exactly one part, the one of its key's hash; each
// part keeps its event's first_seq, span and data, is flagged a part and
// checks; the tally is the tuples that went to the other links, and the
// tuples dropped inside the events before the split are filtered_ahead,
// counted once and never as not sent.
TEST(Partition, EveryTupleInExactlyOnePartByItsKeysHash) {
  std::mt19937_64 rng(7);
  const Schema s = keyed();
  FieldRef key;
  ASSERT_TRUE(s.find("key", &key));
  for (uint32_t links : {2u, 3u, 5u}) {
    const EventRun run = make_run(rng, 3, 60);
    PartitionTally tally(links);
    std::map<uint64_t, uint32_t> got;  // seq -> link
    for (uint32_t l = 0; l < links; ++l) {
      // Slots of a little over one event's worst case, so most runs need several.
      std::vector<std::byte> slot(kEventHeaderBytes + 40 * kTupleBytes + 16 + 200);
      uint32_t next = 0, slots = 0;
      while (next < run.events) {
        uint32_t parts = 0, tuples = 0;
        const uint32_t before = next;
        const size_t bytes = write_parts(run.bytes.data(), run.events, key, l, links, slot.data(),
                                         slot.size(), &next, &parts, &tuples, &tally);
        ASSERT_GT(next, before) << "no progress";
        ++slots;
        uint64_t tuples_seen = 0;
        std::string err = check_event_run(slot.data(), bytes, parts, kTupleBytes, &tuples_seen);
        ASSERT_EQ(err, "");
        EXPECT_EQ(tuples_seen, tuples);
        size_t off = 0;
        for (uint32_t e = 0; e < parts; ++e) {
          const std::byte* p = slot.data() + off;
          EventHeader h;
          std::memcpy(&h, p, sizeof h);
          EXPECT_EQ(event_checksum(p), h.checksum);
          EXPECT_TRUE(h.flags & kEventPart);
          EXPECT_EQ(h.stream, 3u);
          EXPECT_GT(h.tuple_count, 0u);
          // The source event with the same first_seq: same span and data.
          size_t so = 0;
          bool found = false;
          for (uint32_t se = 0; se < run.events; ++se) {
            EventHeader sh;
            std::memcpy(&sh, run.bytes.data() + so, sizeof sh);
            if (sh.first_seq == h.first_seq) {
              found = true;
              EXPECT_EQ(sh.tuple_span, h.tuple_span);
              EXPECT_EQ(sh.event_seq, h.event_seq);
              ASSERT_EQ(sh.data_bytes, h.data_bytes);
              EXPECT_EQ(std::memcmp(run.bytes.data() + so + kEventHeaderBytes +
                                        size_t{sh.tuple_count} * kTupleBytes,
                                    p + kEventHeaderBytes + size_t{h.tuple_count} * kTupleBytes,
                                    h.data_bytes),
                        0);
            }
            so += sh.wire_bytes();
          }
          EXPECT_TRUE(found);
          const std::byte* t = p + kEventHeaderBytes;
          for (uint32_t i = 0; i < h.tuple_count; ++i, t += kTupleBytes) {
            const uint64_t seq = tuple_seq(t);
            EXPECT_GE(seq, h.first_seq);
            EXPECT_LT(seq, h.first_seq + h.tuple_span);
            ASSERT_TRUE(run.key_of.count(seq)) << seq;
            EXPECT_EQ(tuple_key(t), run.key_of.at(seq));
            EXPECT_EQ(key_link(run.key_of.at(seq), links), l);
            EXPECT_TRUE(got.emplace(seq, l).second) << "seq " << seq << " in two parts";
          }
          off += h.wire_bytes();
        }
        EXPECT_EQ(off, bytes);
      }
      EXPECT_GT(slots, 1u);
    }
    EXPECT_EQ(got.size(), run.key_of.size()) << links << " links";
    for (uint32_t l = 0; l < links; ++l) {
      uint64_t mine = 0;
      for (const auto& [seq, at] : got) mine += at == l;
      EXPECT_EQ(tally.not_sent(3, l), run.key_of.size() - mine) << "link " << l;
    }
    ASSERT_LT(run.key_of.size(), run.span) << "the run drops tuples inside some events";
    EXPECT_EQ(tally.filtered_ahead(3), run.span - run.key_of.size());
  }
}

TEST(Partition, AnEventLargerThanTheSlotMakesNoProgress) {
  std::mt19937_64 rng(1);
  const Schema s = keyed();
  FieldRef key;
  ASSERT_TRUE(s.find("key", &key));
  const EventRun run = make_run(rng, 0, 1);
  PartitionTally tally(2);
  std::vector<std::byte> slot(kEventHeaderBytes);
  uint32_t next = 0, parts = 0, tuples = 0;
  EXPECT_EQ(write_parts(run.bytes.data(), 1, key, 0, 2, slot.data(), slot.size(), &next, &parts,
                        &tuples, &tally),
            0u);
  EXPECT_EQ(next, 0u);
  EXPECT_EQ(tally.not_sent(0, 0), 0u);  // counted only once handled
}

TEST(Partition, MadeOnlyOverANumericFieldAndTwoLinks) {
  Schema s;
  ASSERT_TRUE(Schema::make("b", {{"tag", FieldType::kBytes, 8}, {"k", FieldType::kI64, 8}}, 0, &s).ok());
  Status st;
  EXPECT_EQ(make_partition(s, "tag", std::make_shared<PartitionTally>(2), &st), nullptr);
  EXPECT_NE(st.message().find("no numeric field"), std::string::npos) << st.message();
  EXPECT_EQ(make_partition(s, "k", std::make_shared<PartitionTally>(1), &st), nullptr);
  EXPECT_NE(make_partition(s, "k", std::make_shared<PartitionTally>(2), &st), nullptr);
}

}  // namespace
}  // namespace sluice

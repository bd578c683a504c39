// The study's aggregate against a reference built on std::map and std::list
// that follows the rules of correlate.h, on random streams.
#include "graph/kernels/correlate.h"

#include <gtest/gtest.h>

#include <list>
#include <map>

#include "graph/kernels/test_util.h"

namespace sluice::kernels {
namespace {

using testing::Collect;
using testing::Tuples;

Schema make_schema() {
  Schema s;
  EXPECT_TRUE(Schema::make("b", {{"event", FieldType::kI32}, {"txn", FieldType::kU32}, {"ts", FieldType::kTimestamp}},
                           0, &s).ok());
  return s;
}

struct Ref {
  struct Open {
    uint64_t first;
    int64_t last_event;
    uint32_t count;
    std::list<uint64_t>::iterator pos;
  };
  std::map<uint64_t, Open> open;
  std::list<uint64_t> order;  // oldest first
  uint64_t matched = 0, timed_out = 0, out_of_order = 0, evicted = 0;
  std::vector<std::vector<uint64_t>> rows;  // seq, txn, first, last

  void drop(uint64_t txn) {
    order.erase(open[txn].pos);
    open.erase(txn);
  }
  void run(const Tuples& t, uint32_t steps, uint64_t within, uint32_t max_open) {
    for (size_t i = 0; i < t.size(); ++i) {
      const uint64_t txn = t.get<uint32_t>(i, "txn");
      const int64_t ev = t.get<int32_t>(i, "event");
      const uint64_t ts = t.get<uint64_t>(i, "ts");
      while (!order.empty()) {
        const Open& o = open[order.front()];
        if (!(ts > o.first && ts - o.first > within)) break;
        drop(order.front());
        ++timed_out;
      }
      auto it = open.find(txn);
      if (it != open.end()) {
        Open& o = it->second;
        const bool late = ts > o.first && ts - o.first > within;
        if (ev > o.last_event && !late) {
          o.last_event = ev;
          if (++o.count == steps) {
            ++matched;
            rows.push_back({t.get<uint64_t>(i, "seq"), txn, o.first, ts});
            drop(txn);
          }
          continue;
        }
        if (ev > o.last_event) ++timed_out; else ++out_of_order;
        o.first = ts;
        o.last_event = ev;
        o.count = 1;
        order.erase(o.pos);
        o.pos = order.insert(order.end(), txn);
        continue;
      }
      if (steps == 1) {
        ++matched;
        rows.push_back({t.get<uint64_t>(i, "seq"), txn, ts, ts});
        continue;
      }
      if (open.size() == max_open) {
        drop(order.front());
        ++evicted;
      }
      Open o{ts, ev, 1, order.insert(order.end(), txn)};
      open[txn] = o;
    }
  }
};

TEST(Correlate, MatchesReferenceOnRandomStreams) {
  Schema s = make_schema();
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    const uint32_t txns = 1 + rng() % 300;
    const uint32_t max_open = 1 + rng() % 64;
    const uint32_t steps = 1 + rng() % 5;
    const uint64_t within = rng() % 200;
    Tuples t(s, 20000);
    std::vector<int32_t> next_event(txns, 0);
    uint64_t ts = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      uint32_t x = static_cast<uint32_t>(rng() % txns);
      int32_t ev = rng() % 8 == 0 ? static_cast<int32_t>(rng() % 5) : ++next_event[x];
      ts += rng() % 4;
      t.set<uint32_t>(i, "txn", x);
      t.set<int32_t>(i, "event", ev);
      t.set<uint64_t>(i, "ts", ts);
    }
    CorrelateSpec spec;
    spec.steps = steps;
    spec.within = within;
    spec.max_open = max_open;
    Correlate c;
    ASSERT_TRUE(Correlate::make(s, spec, &c).ok());
    Collect got(c.row_bytes());
    for (auto [b, m] : testing::random_runs(t.size(), 500, rng)) {
      c.consume(t.at(b), m, t.stride(), got);
      ASSERT_LE(c.open(), max_open);
    }
    Ref ref;
    ref.run(t, steps, within, max_open);
    ASSERT_EQ(got.rows.size(), ref.rows.size()) << "seed " << seed;
    for (size_t i = 0; i < got.rows.size(); ++i) {
      for (int f = 0; f < 4; ++f) {
        ASSERT_EQ(testing::row_get<uint64_t>(got.rows[i], 8 * f), ref.rows[i][f]) << "seed " << seed << " row " << i;
      }
    }
    EXPECT_EQ(c.matched(), ref.matched);
    EXPECT_EQ(c.timed_out(), ref.timed_out);
    EXPECT_EQ(c.out_of_order(), ref.out_of_order);
    EXPECT_EQ(c.evicted(), ref.evicted);
    EXPECT_EQ(c.open(), ref.open.size());
    const uint32_t open = c.open();
    c.flush(got);
    EXPECT_EQ(c.abandoned(), open);
    EXPECT_EQ(c.open(), 0u);
  }
}

TEST(Correlate, FourInOrderWithinTheLimit) {
  Schema s = make_schema();
  CorrelateSpec spec;
  spec.within = 100;
  Correlate c;
  ASSERT_TRUE(Correlate::make(s, spec, &c).ok());
  // txn 7: events 1..4 within 90 -> match; txn 8: 4 events over 150 -> no match.
  Tuples t(s, 8);
  const uint32_t txn[] = {7, 8, 7, 8, 7, 8, 7, 8};
  const uint64_t ts[] = {0, 10, 30, 40, 60, 70, 90, 160};
  for (size_t i = 0; i < 8; ++i) {
    t.set<uint32_t>(i, "txn", txn[i]);
    t.set<int32_t>(i, "event", static_cast<int32_t>(i / 2 + 1));
    t.set<uint64_t>(i, "ts", ts[i]);
  }
  Collect got(c.row_bytes());
  c.consume(t.data(), t.size(), t.stride(), got);
  ASSERT_EQ(got.rows.size(), 1u);
  EXPECT_EQ(testing::row_get<uint64_t>(got.rows[0], 8), 7u);
  EXPECT_EQ(testing::row_get<uint64_t>(got.rows[0], 16), 0u);
  EXPECT_EQ(testing::row_get<uint64_t>(got.rows[0], 24), 90u);
  EXPECT_EQ(c.timed_out(), 1u);
  EXPECT_FALSE(Correlate::make(s, {"nope", "event", "ts", 4, 10, 8}, &c).ok());
}

// A snapshot loads only into a correlate made alike, and bytes that break
// its invariants (a key twice, a count that would already have matched, a
// cut) are refused, each saying which, leaving it empty and usable.
TEST(Correlate, ASnapshotOfAnotherSpecOrBrokenStateIsRefused) {
  Schema s = make_schema();
  CorrelateSpec spec;
  spec.within = 1000;
  spec.max_open = 16;
  Correlate a;
  ASSERT_TRUE(Correlate::make(s, spec, &a).ok());
  Tuples t(s, 3);
  for (size_t i = 0; i < 3; ++i) {
    t.set<uint32_t>(i, "txn", static_cast<uint32_t>(10 + i));
    t.set<int32_t>(i, "event", 1);
    t.set<uint64_t>(i, "ts", i);
  }
  Collect got(a.row_bytes());
  a.consume(t.data(), t.size(), t.stride(), got);
  ASSERT_EQ(a.open(), 3u);
  SnapshotOut out;
  a.save(out);
  const std::string good = out.data();

  auto load = [&](const CorrelateSpec& sp, const std::string& bytes, Correlate* c) {
    EXPECT_TRUE(Correlate::make(s, sp, c).ok());
    SnapshotIn in(bytes.data(), bytes.size());
    return c->load(in);
  };
  Correlate b;
  ASSERT_TRUE(load(spec, good, &b).ok());
  EXPECT_EQ(b.open(), 3u);

  CorrelateSpec other = spec;
  other.steps = 5;
  Status st = load(other, good, &b);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("steps 4"), std::string::npos) << st.message();
  EXPECT_EQ(b.open(), 0u);

  // Header 20 bytes, then 28 per transaction: key, first, last event, count.
  std::string twice = good;
  std::memcpy(&twice[20 + 28], &twice[20], 8);  // the second holds the first's key
  st = load(spec, twice, &b);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("transaction 10 twice"), std::string::npos) << st.message();
  EXPECT_EQ(b.open(), 0u);

  std::string full = good;
  const uint32_t four = 4;
  std::memcpy(&full[20 + 24], &four, 4);
  st = load(spec, full, &b);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("holds 4 tuples"), std::string::npos) << st.message();

  st = load(spec, good.substr(0, good.size() - 1), &b);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("ends early"), std::string::npos) << st.message();
  EXPECT_EQ(b.open(), 0u);
  // Emptied, it still works: txn 10 opens again and matches after 4 steps.
  Tuples u(s, 4);
  for (size_t i = 0; i < 4; ++i) {
    u.set<uint32_t>(i, "txn", 10);
    u.set<int32_t>(i, "event", static_cast<int32_t>(i));
    u.set<uint64_t>(i, "ts", i);
  }
  Collect got2(b.row_bytes());
  b.consume(u.data(), u.size(), u.stride(), got2);
  EXPECT_EQ(got2.rows.size(), 1u);
  EXPECT_EQ(b.open(), 0u);
}

}  // namespace
}  // namespace sluice::kernels

// Grouped windowed aggregates against a reference that recomputes every
// window from the whole stream with std::map, on random streams cut into runs
// at random places.
#include "graph/kernels/aggregate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "graph/kernels/test_util.h"

namespace sluice::kernels {
namespace {

using testing::Collect;
using testing::Tuples;

Schema make_schema() {
  Schema s;
  EXPECT_TRUE(Schema::make("t", {{"k", FieldType::kU32}, {"v", FieldType::kI64}, {"f", FieldType::kF64},
                                 {"u", FieldType::kU64}, {"ts", FieldType::kTimestamp}}, 0, &s).ok());
  return s;
}

// One output row, decoded: window_end, key, then count, sum_v, avg_f, min_v, max_u, max_f.
using Row = std::tuple<uint64_t, uint64_t, uint64_t, int64_t, double, int64_t, uint64_t, double>;

std::vector<AggSpec> the_aggs() {
  return {{AggFn::kCount, ""}, {AggFn::kSum, "v"}, {AggFn::kAvg, "f"},
          {AggFn::kMin, "v"},  {AggFn::kMax, "u"}, {AggFn::kMax, "f"}};
}

struct Acc {
  uint64_t count = 0;
  int64_t sum_v = 0;
  double sum_f = 0;
  int64_t min_v = INT64_MAX;
  uint64_t max_u = 0;
  double max_f = -1e300;
};

// Rows of one window over the tuples [from, to) that lie in it.
void ref_window(const Tuples& t, const std::vector<size_t>& members, uint64_t end, bool grouped,
                int64_t having_min_sum, std::vector<Row>* out) {
  std::map<uint64_t, Acc> g;
  for (size_t i : members) {
    Acc& a = g[grouped ? t.get<uint32_t>(i, "k") : 0];
    a.count++;
    a.sum_v += t.get<int64_t>(i, "v");
    a.sum_f += t.get<double>(i, "f");
    a.min_v = std::min(a.min_v, t.get<int64_t>(i, "v"));
    a.max_u = std::max(a.max_u, t.get<uint64_t>(i, "u"));
    a.max_f = std::max(a.max_f, t.get<double>(i, "f"));
  }
  for (auto& [k, a] : g) {
    if (a.sum_v < having_min_sum) continue;
    out->emplace_back(end, k, a.count, a.sum_v, a.sum_f / static_cast<double>(a.count), a.min_v, a.max_u,
                      a.max_f);
  }
}

std::vector<Row> reference(const Tuples& t, const WindowSpec& w, bool grouped, int64_t having) {
  std::vector<Row> out;
  const size_t n = t.size();
  if (n == 0) return out;
  if (w.by == WindowSpec::By::kNone) {
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    ref_window(t, all, n, grouped, having, &out);
    return out;
  }
  const uint64_t slide = w.slide ? w.slide : w.size;
  if (w.by == WindowSpec::By::kCount) {
    for (uint64_t b = slide; b - std::min<uint64_t>(b, w.size) < n; b += slide) {
      std::vector<size_t> m;
      for (uint64_t i = b > w.size ? b - w.size : 0; i < b && i < n; ++i) m.push_back(i);
      ref_window(t, m, b, grouped, having, &out);
    }
    return out;
  }
  const int64_t t0 = static_cast<int64_t>(t.get<uint64_t>(0, "ts"));
  const int64_t tn = static_cast<int64_t>(t.get<uint64_t>(n - 1, "ts"));
  const int64_t sl = static_cast<int64_t>(slide), size = static_cast<int64_t>(w.size);
  // Window b covers [b - size, b); the first ends at the end of t0's pane.
  for (int64_t b = t0 / sl * sl + sl; b - size <= tn; b += sl) {
    std::vector<size_t> m;
    for (size_t i = 0; i < n; ++i) {
      const int64_t ts = static_cast<int64_t>(t.get<uint64_t>(i, "ts"));
      if (ts >= b - size && ts < b) m.push_back(i);
    }
    ref_window(t, m, static_cast<uint64_t>(b), grouped, having, &out);
  }
  return out;
}

std::vector<Row> decode(const Collect& c) {
  std::vector<Row> out;
  uint64_t seq = 0;
  for (auto& r : c.rows) {
    EXPECT_EQ(testing::row_get<uint64_t>(r, 0), seq++);
    out.emplace_back(testing::row_get<uint64_t>(r, 8), testing::row_get<uint64_t>(r, 16),
                     testing::row_get<uint64_t>(r, 24), testing::row_get<int64_t>(r, 32),
                     testing::row_get<double>(r, 40), testing::row_get<int64_t>(r, 48),
                     testing::row_get<uint64_t>(r, 56), testing::row_get<double>(r, 64));
  }
  return out;
}

void sort_rows(std::vector<Row>* r) {
  std::stable_sort(r->begin(), r->end(), [](const Row& a, const Row& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
}

void fill(Tuples& t, std::mt19937_64& rng, uint32_t groups, uint64_t max_step) {
  uint64_t ts = 1000 + rng() % 50;
  for (size_t i = 0; i < t.size(); ++i) {
    t.set<uint32_t>(i, "k", static_cast<uint32_t>(rng() % groups));
    t.set<int64_t>(i, "v", static_cast<int64_t>(rng() % 2001) - 1000);
    t.set<double>(i, "f", static_cast<double>(static_cast<int64_t>(rng() % 201) - 100));
    t.set<uint64_t>(i, "u", rng() % 100000);
    ts += rng() % 10 == 0 ? rng() % (max_step * 20) : rng() % max_step;
    t.set<uint64_t>(i, "ts", ts);
  }
}

void check(const WindowSpec& w, bool grouped, bool with_having, uint64_t seed) {
  Schema s = make_schema();
  std::mt19937_64 rng(seed);
  const uint32_t groups = 1 + rng() % 40;
  Tuples t(s, 500 + rng() % 3000);
  fill(t, rng, groups, 5);
  GroupAggSpec spec;
  if (grouped) spec.group_by = "k";
  spec.aggs = the_aggs();
  spec.window = w;
  int64_t having = INT64_MIN;
  if (with_having) {
    having = static_cast<int64_t>(rng() % 2000) - 1000;
    spec.having = "sum(v) >= " + std::to_string(having);
  }
  spec.max_groups = 64;
  GroupAggregate agg;
  Status st = GroupAggregate::make(s, spec, &agg);
  ASSERT_TRUE(st.ok()) << st.message();
  Collect got(agg.row_bytes());
  for (auto [b, m] : testing::random_runs(t.size(), 700, rng)) {
    ASSERT_TRUE(agg.consume(t.at(b), m, t.stride(), got).ok());
    if (w.by == WindowSpec::By::kTime && rng() % 4 == 0) {
      agg.advance_to(t.get<uint64_t>(b + m - 1, "ts"), got);
    }
  }
  agg.flush(got);
  EXPECT_EQ(agg.groups(), 0u);
  EXPECT_EQ(agg.late(), 0u);
  std::vector<Row> g = decode(got), want = reference(t, w, grouped, having);
  sort_rows(&g);
  sort_rows(&want);
  ASSERT_EQ(g.size(), want.size()) << "seed " << seed;
  for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], want[i]) << "seed " << seed << " row " << i;
}

TEST(GroupAggregate, Unbounded) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    check({WindowSpec::By::kNone, 0, 0, ""}, true, seed % 2, seed);
    check({WindowSpec::By::kNone, 0, 0, ""}, false, seed % 2, seed);
  }
}

TEST(GroupAggregate, CountTumblingAndSliding) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed * 77);
    uint64_t slide = 1 + rng() % 200, panes = 1 + rng() % 5;
    check({WindowSpec::By::kCount, slide, slide, ""}, true, seed % 2, seed);
    check({WindowSpec::By::kCount, slide * panes, slide, ""}, true, seed % 3 == 0, seed);
    check({WindowSpec::By::kCount, slide * panes, slide, ""}, false, false, seed);
  }
}

TEST(GroupAggregate, TimeTumblingAndSliding) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed * 91);
    uint64_t slide = 1 + rng() % 300, panes = 1 + rng() % 5;
    check({WindowSpec::By::kTime, slide, slide, "ts"}, true, seed % 2, seed);
    check({WindowSpec::By::kTime, slide * panes, slide, "ts"}, true, seed % 3 == 0, seed);
  }
}

TEST(GroupAggregate, EsperQueryOneGroup) {
  Schema s;
  ASSERT_TRUE(Schema::make("e", {{"p0", FieldType::kU64}, {"p1", FieldType::kI64}}, 0, &s).ok());
  GroupAggSpec spec;
  spec.group_by = "p0";
  spec.aggs = {{AggFn::kSum, "p1"}};
  spec.having = "sum(p1) >= 100000";
  spec.max_groups = 4;
  GroupAggregate agg;
  ASSERT_TRUE(GroupAggregate::make(s, spec, &agg).ok());
  Tuples t(s, 1000);
  for (size_t i = 0; i < t.size(); ++i) {
    t.set<uint64_t>(i, "p0", 2);
    t.set<int64_t>(i, "p1", 1);
  }
  Tuples warm(s, 10);
  for (size_t i = 0; i < warm.size(); ++i) {
    warm.set<uint64_t>(i, "p0", 1);
    warm.set<int64_t>(i, "p1", 1);
  }
  Collect got(agg.row_bytes());
  ASSERT_TRUE(agg.consume(warm.data(), warm.size(), warm.stride(), got).ok());
  for (int r = 0; r < 100; ++r) ASSERT_TRUE(agg.consume(t.data(), t.size(), t.stride(), got).ok());
  EXPECT_TRUE(got.rows.empty());
  agg.flush(got);
  ASSERT_EQ(got.rows.size(), 1u);  // G1 summed to 10, below the having
  EXPECT_EQ(testing::row_get<uint64_t>(got.rows[0], 16), 2u);
  EXPECT_EQ(testing::row_get<int64_t>(got.rows[0], 24), 100000);
}

TEST(GroupAggregate, OverflowIsAnErrorAndLateIsCounted) {
  Schema s = make_schema();
  GroupAggSpec spec;
  spec.group_by = "k";
  spec.aggs = {{AggFn::kCount, ""}};
  spec.max_groups = 3;
  GroupAggregate agg;
  ASSERT_TRUE(GroupAggregate::make(s, spec, &agg).ok());
  Tuples t(s, 10);
  for (size_t i = 0; i < 10; ++i) t.set<uint32_t>(i, "k", static_cast<uint32_t>(i));
  Collect got(agg.row_bytes());
  Status st = agg.consume(t.data(), t.size(), t.stride(), got);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("max_groups=3"), std::string::npos) << st.message();
  agg.flush(got);
  EXPECT_EQ(got.rows.size(), 3u);

  spec.window = {WindowSpec::By::kTime, 10, 10, "ts"};
  ASSERT_TRUE(GroupAggregate::make(s, spec, &agg).ok());
  for (size_t i = 0; i < 10; ++i) t.set<uint64_t>(i, "ts", i < 5 ? 100 + i : 50);
  t.set<uint32_t>(0, "k", 0);
  for (size_t i = 0; i < 10; ++i) t.set<uint32_t>(i, "k", 1);
  ASSERT_TRUE(agg.consume(t.data(), t.size(), t.stride(), got).ok());
  EXPECT_EQ(agg.late(), 5u);

  GroupAggSpec bad = spec;
  bad.window = {WindowSpec::By::kCount, 10, 3, ""};
  st = GroupAggregate::make(s, bad, &agg);
  EXPECT_NE(st.message().find("divide"), std::string::npos) << st.message();
  bad = spec;
  bad.having = "sum(zz) > 3";
  st = GroupAggregate::make(s, bad, &agg);
  EXPECT_NE(st.message().find("sum_zz"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice::kernels

// sluice-bench-graph: the query kernels' tuples/s on one thread over tuples
// already in memory (items_per_second), and the memory each holds per group,
// window tuple or table row. The cache-aware variants run beside their plain
// versions, over the same sizes, in the same process.
//
//   flock /tmp/cpu.lock build/graph/sluice-bench-graph --benchmark_format=json
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "graph/kernels/aggregate.h"
#include "graph/kernels/correlate.h"
#include "graph/kernels/join.h"
#include "graph/kernels/moving.h"
#include "graph/kernels/predicate.h"
#include "graph/kernels/test_util.h"

namespace sluice::kernels {
namespace {

using testing::Tuples;

struct CountRows {
  uint64_t rows = 0;
  void operator()(const std::byte* r, size_t n) {
    benchmark::DoNotOptimize(r);
    rows += n;
  }
};

// Mendes et al.'s stream S: ID integer, A1 double, A2 double, TS long.
const Schema& stream_s() {
  static Schema s = [] {
    Schema x;
    (void)Schema::make("S", {{"id", FieldType::kI32}, {"a1", FieldType::kF64}, {"a2", FieldType::kF64},
                             {"ts", FieldType::kI64}}, 0, &x);
    return x;
  }();
  return s;
}

// The Esper test's SampleEvent (p0 string -> a u64 key, p1 long).
const Schema& sample_event() {
  static Schema s = [] {
    Schema x;
    (void)Schema::make("SampleEvent", {{"p0", FieldType::kU64}, {"p1", FieldType::kI64}}, 0, &x);
    return x;
  }();
  return s;
}

// select p0, sum(p1) group by p0 having sum(p1) >= 100000000, no window (as
// in the Esper test: one window, emitted at the end). Arg: groups.
void BM_GroupByHaving(benchmark::State& state) {
  const uint32_t groups = static_cast<uint32_t>(state.range(0));
  const Schema& s = sample_event();
  Tuples t(s, 1 << 16);
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < t.size(); ++i) {
    t.set<uint64_t>(i, "p0", groups == 1 ? 2 : rng() % groups);
    t.set<int64_t>(i, "p1", 1);
  }
  GroupAggSpec spec;
  spec.group_by = "p0";
  spec.aggs = {{AggFn::kSum, "p1"}};
  spec.having = "sum(p1) >= 100000000";
  spec.max_groups = groups;
  GroupAggregate agg;
  Status st = GroupAggregate::make(s, spec, &agg);
  if (!st.ok()) return state.SkipWithError(st.message().c_str());
  CountRows out;
  for (auto _ : state) {
    if (!agg.consume(t.data(), t.size(), t.stride(), out).ok()) return state.SkipWithError("consume");
  }
  agg.flush(out);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t.size()));
  state.counters["bytes_per_group"] = static_cast<double>(agg.bytes_held()) / groups;
  state.counters["rows_out"] = static_cast<double>(out.rows);
}
BENCHMARK(BM_GroupByHaving)->Arg(1)->Arg(1000)->Arg(1000000)->MinTime(0.5);

// The same query over tumbling count windows of 100,000 tuples.
void BM_GroupByHavingTumbling(benchmark::State& state) {
  const uint32_t groups = static_cast<uint32_t>(state.range(0));
  const Schema& s = sample_event();
  Tuples t(s, 1 << 16);
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < t.size(); ++i) {
    t.set<uint64_t>(i, "p0", rng() % groups);
    t.set<int64_t>(i, "p1", static_cast<int64_t>(rng() % 1000));
  }
  GroupAggSpec spec;
  spec.group_by = "p0";
  spec.aggs = {{AggFn::kCount, ""}, {AggFn::kSum, "p1"}, {AggFn::kMax, "p1"}};
  spec.window = {WindowSpec::By::kCount, 100000, 100000, ""};
  spec.having = "sum(p1) >= 1000";
  spec.max_groups = groups;
  GroupAggregate agg;
  Status st = GroupAggregate::make(s, spec, &agg);
  if (!st.ok()) return state.SkipWithError(st.message().c_str());
  CountRows out;
  for (auto _ : state) {
    if (!agg.consume(t.data(), t.size(), t.stride(), out).ok()) return state.SkipWithError("consume");
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t.size()));
  state.counters["bytes_per_group"] = static_cast<double>(agg.bytes_held()) / groups;
}
BENCHMARK(BM_GroupByHavingTumbling)->Arg(1)->Arg(1000)->MinTime(0.5);

// SELECT avg(A1) FROM S [ROWS N SLIDE 1]. The window is filled once before
// the timed loop. Arg: N.
void moving(benchmark::State& state, bool cache_aware) {
  const uint64_t n = static_cast<uint64_t>(state.range(0));
  const Schema& s = stream_s();
  Tuples t(s, 8192);
  for (size_t i = 0; i < t.size(); ++i) t.set<double>(i, "a1", static_cast<double>(i % 1000) * 0.25);
  MovingAverage m;
  Status st = cache_aware ? make_cache_aware(s, "a1", n, &m) : MovingAverage::make(s, "a1", n, &m);
  if (!st.ok()) return state.SkipWithError(st.message().c_str());
  std::vector<double> out(t.size());
  for (uint64_t filled = 0; filled < n; filled += t.size()) m.consume(t.data(), t.size(), t.stride(), out.data());
  for (auto _ : state) {
    m.consume(t.data(), t.size(), t.stride(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t.size()));
  state.counters["bytes_per_window_tuple"] = static_cast<double>(m.bytes_held()) / static_cast<double>(n);
}
void BM_MovingAvg(benchmark::State& state) { moving(state, false); }
void BM_CacheAwareMovingAvg(benchmark::State& state) { moving(state, true); }
#define MOVING_ARGS RangeMultiplier(10)->Range(1000, 100000000)->MinTime(0.3)
BENCHMARK(BM_MovingAvg)->MOVING_ARGS;
BENCHMARK(BM_CacheAwareMovingAvg)->MOVING_ARGS;

// SELECT S.ID, S.A1, T.T1 FROM S, T WHERE S.ID = T.ID; T has ID and T1..T4
// (integers) with IDs 1..rows; S's IDs are uniform over them (every tuple
// matches). Arg: rows.
struct JoinSetup {
  Tuples stream;
  JoinTable table;
  explicit JoinSetup(uint64_t rows) : stream(stream_s(), 1 << 16) {
    std::mt19937_64 rng(rows);
    for (size_t i = 0; i < stream.size(); ++i) {
      stream.set<int32_t>(i, "id", static_cast<int32_t>(1 + rng() % rows));
      stream.set<double>(i, "a1", 1.5);
    }
    (void)JoinTable::make({{"id", FieldType::kI32}, {"t1", FieldType::kI32}, {"t2", FieldType::kI32},
                           {"t3", FieldType::kI32}, {"t4", FieldType::kI32}},
                          "id", {"t1"}, &table);
    table.generate(rows, 7);
  }
};

template <class J>
void run_join(benchmark::State& state, J& j, JoinSetup& js) {
  CountRows out;
  for (auto _ : state) j.consume(js.stream.data(), js.stream.size(), js.stream.stride(), out);
  j.flush(out);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * js.stream.size()));
  state.counters["bytes_per_row"] =
      static_cast<double>(j.index_bytes()) / static_cast<double>(js.table.rows());
  if (out.rows != state.iterations() * js.stream.size()) state.SkipWithError("rows lost");
}

void BM_HashJoin(benchmark::State& state) {
  JoinSetup js(static_cast<uint64_t>(state.range(0)));
  HashJoin j;
  Status st = HashJoin::make(stream_s(), {"id", {"id", "a1"}}, js.table, &j);
  if (!st.ok()) return state.SkipWithError(st.message().c_str());
  run_join(state, j, js);
}
void BM_GraceHashJoin(benchmark::State& state) {
  JoinSetup js(static_cast<uint64_t>(state.range(0)));
  GraceHashJoin j;
  Status st = GraceHashJoin::make(stream_s(), {"id", {"id", "a1"}}, js.table, GraceOptions{}, &j);
  if (!st.ok()) return state.SkipWithError(st.message().c_str());
  state.counters["partitions"] = j.partitions();
  run_join(state, j, js);
}
// The grace join without its software prefetch: what partitioning alone buys.
void BM_GraceHashJoinNoPrefetch(benchmark::State& state) {
  JoinSetup js(static_cast<uint64_t>(state.range(0)));
  GraceHashJoin j;
  GraceOptions opt;
  opt.prefetch = 0;
  Status st = GraceHashJoin::make(stream_s(), {"id", {"id", "a1"}}, js.table, opt, &j);
  if (!st.ok()) return state.SkipWithError(st.message().c_str());
  state.counters["partitions"] = j.partitions();
  run_join(state, j, js);
}
// Batch size (tuples) and partition size (KiB) of the grace join at one table size.
void BM_GraceHashJoinSweep(benchmark::State& state) {
  JoinSetup js(static_cast<uint64_t>(state.range(0)));
  GraceHashJoin j;
  GraceOptions opt;
  opt.batch_tuples = static_cast<uint32_t>(state.range(1));
  opt.partition_bytes = static_cast<uint32_t>(state.range(2)) << 10;
  Status st = GraceHashJoin::make(stream_s(), {"id", {"id", "a1"}}, js.table, opt, &j);
  if (!st.ok()) return state.SkipWithError(st.message().c_str());
  state.counters["partitions"] = j.partitions();
  run_join(state, j, js);
}
BENCHMARK(BM_GraceHashJoinSweep)->ArgsProduct({{10000000}, {4096, 16384, 65536}, {128, 1024, 8192}})->MinTime(0.3);

#define JOIN_ARGS RangeMultiplier(10)->Range(1000, 10000000)->MinTime(0.5)
BENCHMARK(BM_HashJoin)->JOIN_ARGS;
BENCHMARK(BM_GraceHashJoin)->JOIN_ARGS;
BENCHMARK(BM_GraceHashJoinNoPrefetch)->Arg(1000)->Arg(1000000)->Arg(10000000)->MinTime(0.5);

// A filter of two comparisons, and: the selection vector only.
void BM_Filter(benchmark::State& state) {
  const Schema& s = stream_s();
  Tuples t(s, 8192);
  std::mt19937_64 rng(3);
  for (size_t i = 0; i < t.size(); ++i) {
    t.set<int32_t>(i, "id", static_cast<int32_t>(rng() % 1000));
    t.set<double>(i, "a1", static_cast<double>(rng() % 1000));
  }
  PredicateSpec p;
  (void)parse_predicate("id < 500 and a1 >= 250", &p);
  Predicate pred;
  if (!Predicate::make(s, p, &pred).ok()) return state.SkipWithError("predicate");
  std::vector<uint32_t> sel(t.size());
  for (auto _ : state) benchmark::DoNotOptimize(pred.select(t.data(), t.size(), t.stride(), sel.data()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t.size()));
}
BENCHMARK(BM_Filter)->MinTime(0.3);

// The study's aggregate: 12-byte tuples (event id, txn id, timestamp), four
// events per transaction, 1,000 transactions interleaved.
void BM_Correlate(benchmark::State& state) {
  Schema s;
  (void)Schema::make("borealis", {{"event", FieldType::kI32}, {"txn", FieldType::kU32},
                                  {"ts", FieldType::kTimestamp}}, 0, &s);
  Tuples t(s, 1 << 16);
  for (size_t i = 0; i < t.size(); ++i) {
    const size_t round = i / 4000, k = i % 4000;
    t.set<uint32_t>(i, "txn", static_cast<uint32_t>(round * 1000 + k % 1000));
    t.set<int32_t>(i, "event", static_cast<int32_t>(k / 1000 + 1));
    t.set<uint64_t>(i, "ts", i);
  }
  CorrelateSpec spec;
  spec.within = 5000;
  spec.max_open = 4096;
  Correlate c;
  if (!Correlate::make(s, spec, &c).ok()) return state.SkipWithError("correlate");
  CountRows out;
  for (auto _ : state) c.consume(t.data(), t.size(), t.stride(), out);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * t.size()));
  state.counters["matches_per_tuple"] =
      static_cast<double>(out.rows) / static_cast<double>(state.iterations() * t.size());
}
BENCHMARK(BM_Correlate)->MinTime(0.3);

}  // namespace
}  // namespace sluice::kernels

BENCHMARK_MAIN();

// The operators that wrap the kernels (kernel_ops.cc, filter's `where`): over
// hand-built, sealed events cut at random, each emits exactly the rows its
// kernel emits over the same tuples in one run (seq renumbered 0, 1, ...),
// as sealed events of its derived stream, and END accounts every input tuple.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "graph/kernels/aggregate.h"
#include "graph/kernels/correlate.h"
#include "graph/kernels/join.h"
#include "graph/kernels/moving.h"
#include "graph/kernels/predicate.h"
#include "graph/kernels/test_util.h"
#include "graph/checkpoint.h"
#include "graph/operator.h"

namespace sluice {
namespace {

using kernels::testing::Collect;
using kernels::testing::Tuples;

// Slots of 4 KiB; keeps what was committed and reads the rows back.
struct VecEmitter final : Emitter {
  std::vector<std::vector<std::byte>> slots;
  std::vector<std::byte> rows;  // the tuples of every committed event, in order
  uint64_t events = 0;
  std::byte* acquire(uint32_t* cap) override {
    slots.emplace_back(4096);
    *cap = 4096;
    return slots.back().data();
  }
  void commit(uint32_t bytes, uint32_t ev, uint32_t) override {
    const std::byte* p = slots.back().data();
    uint64_t tuples = 0;
    EXPECT_EQ(check_event_run(p, bytes, ev, 0, &tuples), "");
    for (uint32_t e = 0; e < ev; ++e) {
      EventHeader h;
      std::memcpy(&h, p, sizeof h);
      EXPECT_EQ(h.first_seq * h.tuple_bytes, rows.size()) << "the derived stream's seq";
      rows.insert(rows.end(), p + kEventHeaderBytes, p + kEventHeaderBytes + h.tuple_block_bytes());
      p += h.wire_bytes();
      ++events;
    }
  }
};

// Feeds the tuples to `op` as events of 1..max tuples, several per descriptor;
// every third event also says 2 tuples before it were filtered (its span).
void feed(Operator& op, const Tuples& t, VecEmitter& em, std::mt19937_64& rng, uint64_t* spans) {
  const uint32_t tb = t.stride();
  uint64_t seq = 0, ev = 0;
  *spans = 0;
  for (size_t i = 0; i < t.size();) {
    std::vector<std::byte> run;
    Descriptor d{0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 3 && i < t.size(); ++k) {
      uint32_t n = 1 + rng() % 100;
      if (n > t.size() - i) n = uint32_t(t.size() - i);
      const uint32_t extra = ev % 3 == 0 ? 2 : 0;
      EventHeader h{kEventMagic, kWireVersion, kEventHeaderBytes, 0, tb, seq, n, n + extra, 0, 0,
                    1000 + ev, ev, 0};
      const size_t off = run.size();
      run.resize(off + h.wire_bytes());
      std::memcpy(&run[off], &h, sizeof h);
      std::memcpy(&run[off + kEventHeaderBytes], t.at(i), size_t{n} * tb);
      seal_event(&run[off]);
      seq += n + extra;
      *spans += n + extra;
      i += n;
      ++ev;
      ++d.events;
      d.tuples += n;
    }
    d.bytes = uint32_t(run.size());
    EXPECT_EQ(op.process(run.data(), d, em), Operator::kConsumed);
  }
  op.on_time(UINT64_MAX, em);
  op.flush(em);
  EXPECT_TRUE(op.status().ok()) << op.status().message();
}

// Rows equal but for seq (the operator's is its derived stream's).
void expect_rows(const std::vector<std::byte>& got, const Collect& want) {
  const uint32_t rb = want.row_bytes;
  ASSERT_EQ(got.size(), want.rows.size() * rb);
  for (size_t r = 0; r < want.rows.size(); ++r) {
    uint64_t seq;
    std::memcpy(&seq, &got[r * rb], 8);
    EXPECT_EQ(seq, r);
    EXPECT_EQ(std::memcmp(&got[r * rb + 8], want.rows[r].data() + 8, rb - 8), 0) << "row " << r;
  }
}

void expect_end(Operator& op, uint64_t spans, uint64_t tuples, uint64_t rows, bool joined) {
  EndOfStream eos{};
  eos.n_streams = 1;
  eos.streams[0] = {0, 0, spans, 0};
  op.end(&eos);
  ASSERT_EQ(eos.n_streams, 2u);
  EXPECT_TRUE(eos.flags & kEndAccounts);
  EXPECT_EQ(eos.accounts[0].filtered, spans - tuples);
  EXPECT_EQ(joined ? eos.accounts[0].joined : eos.accounts[0].aggregated, tuples);
  EXPECT_EQ(eos.streams[1].stream, 5u);
  EXPECT_EQ(eos.streams[1].next_seq, rows);
}

OperatorConfig config(const std::string& kind, std::vector<std::pair<std::string, std::string>> set) {
  const OperatorSpec* spec = find_operator_spec(kind);
  OperatorConfig c;
  c.kind = kind;
  for (const auto& p : spec->params) c.params.emplace_back(p.key, p.def ? p.def : "");
  for (auto& [k, v] : set) c.set(k, v);
  c.derived_stream = 5;
  c.max_event_tuples = 37;
  return c;
}

Schema schema() {
  Schema s;
  EXPECT_TRUE(Schema::make("s", {{"p0", FieldType::kI64, 0}, {"p1", FieldType::kI64, 0},
                                 {"ts", FieldType::kU64, 0}, {"ev", FieldType::kI32, 0}},
                           0, &s).ok());
  return s;
}

Tuples random_tuples(const Schema& s, size_t n, std::mt19937_64& rng, uint64_t keys) {
  Tuples t(s, n);
  uint64_t ts = 0;
  for (size_t i = 0; i < n; ++i) {
    ts += rng() % 3;
    t.set<int64_t>(i, "p0", int64_t(rng() % keys));
    t.set<int64_t>(i, "p1", int64_t(rng() % 1000) - 100);
    t.set<uint64_t>(i, "ts", ts);
    t.set<int32_t>(i, "ev", int32_t(rng() % 6));
  }
  return t;
}

TEST(KernelOps, GroupByHavingMatchesItsKernel) {
  const Schema s = schema();
  std::mt19937_64 rng(7);
  const Tuples t = random_tuples(s, 20000, rng, 16);
  for (const char* win : {"none", "count", "time"}) {
    SCOPED_TRACE(win);
    OperatorConfig c = config("groupby", {{"group_by", "p0"}, {"aggregates", "sum(p1), count, max(p1)"},
                                          {"window", win}, {"size", "600"}, {"slide", "200"},
                                          {"time_field", "ts"}, {"having", "sum(p1) >= 3000"}});
    Schema out;
    ASSERT_TRUE(find_operator_spec("groupby")->output(c, s, &out).ok());
    Status st;
    auto op = make_operator(c, s, &st);
    ASSERT_TRUE(op) << st.message();
    kernels::GroupAggSpec gs{"p0", {{kernels::AggFn::kSum, "p1"}, {kernels::AggFn::kCount, ""}, {kernels::AggFn::kMax, "p1"}},
                             {}, "sum(p1) >= 3000", 1024};
    if (std::string(win) == "count") gs.window = {kernels::WindowSpec::By::kCount, 600, 200, ""};
    if (std::string(win) == "time") gs.window = {kernels::WindowSpec::By::kTime, 600, 200, "ts"};
    kernels::GroupAggregate k;
    ASSERT_TRUE(kernels::GroupAggregate::make(s, gs, &k).ok());
    EXPECT_EQ(out.describe(), k.output_schema().describe());
    Collect want(k.row_bytes());
    ASSERT_TRUE(k.consume(t.data(), t.size(), t.stride(), want).ok());
    k.flush(want);
    ASSERT_GT(want.rows.size(), 0u);
    VecEmitter em;
    uint64_t spans;
    feed(*op, t, em, rng, &spans);
    expect_rows(em.rows, want);
    expect_end(*op, spans, t.size(), want.rows.size(), false);
  }
}

TEST(KernelOps, GroupByOverflowFailsTheOperator) {
  const Schema s = schema();
  std::mt19937_64 rng(8);
  const Tuples t = random_tuples(s, 1000, rng, 100);
  Status st;
  auto op = make_operator(config("groupby", {{"group_by", "p0"}, {"max_groups", "10"}}), s, &st);
  ASSERT_TRUE(op);
  VecEmitter em;
  std::byte buf[4096];
  EventHeader h{kEventMagic, kWireVersion, kEventHeaderBytes, 0, t.stride(), 0, 100, 100, 0, 0, 1, 0, 0};
  std::memcpy(buf, &h, sizeof h);
  std::memcpy(buf + kEventHeaderBytes, t.data(), 100 * t.stride());
  seal_event(buf);
  Descriptor d{0, 0, uint32_t(h.wire_bytes()), 1, 100, 0};
  op->process(buf, d, em);
  EXPECT_FALSE(op->status().ok());
  EXPECT_NE(op->status().message().find("10"), std::string::npos) << op->status().message();
}

TEST(KernelOps, CorrelateMatchesItsKernel) {
  const Schema s = schema();
  std::mt19937_64 rng(9);
  const Tuples t = random_tuples(s, 20000, rng, 50);
  Status st;
  auto op = make_operator(config("correlate", {{"txn", "p0"}, {"event", "ev"}, {"time", "ts"},
                                               {"within", "40"}, {"max_open", "32"}}), s, &st);
  ASSERT_TRUE(op) << st.message();
  kernels::Correlate k;
  ASSERT_TRUE(kernels::Correlate::make(s, {"p0", "ev", "ts", 4, 40, 32}, &k).ok());
  Collect want(k.row_bytes());
  k.consume(t.data(), t.size(), t.stride(), want);
  k.flush(want);
  ASSERT_GT(want.rows.size(), 0u);
  VecEmitter em;
  uint64_t spans;
  feed(*op, t, em, rng, &spans);
  expect_rows(em.rows, want);
  expect_end(*op, spans, t.size(), want.rows.size(), false);
}

TEST(KernelOps, HashAndGraceJoinMatchTheirKernels) {
  const Schema s = schema();
  std::mt19937_64 rng(10);
  const Tuples t = random_tuples(s, 20000, rng, 1500);
  for (const char* method : {"hash", "grace"}) {
    SCOPED_TRACE(method);
    Status st;
    auto op = make_operator(config("join", {{"method", method}, {"key", "p0"}, {"fields", "p1, ts"},
                                            {"table_rows", "1000"}, {"seed", "3"},
                                            {"batch_tuples", "300"}, {"partition_bytes", "4096"}}),
                            s, &st);
    ASSERT_TRUE(op) << st.message();
    kernels::JoinTable table;
    ASSERT_TRUE(kernels::JoinTable::make({{"id", FieldType::kU64, 0}, {"t1", FieldType::kI32, 0}}, "id",
                                         {"t1"}, &table).ok());
    table.generate(1000, 3);
    kernels::HashJoin k;
    ASSERT_TRUE(kernels::HashJoin::make(s, {"p0", {"p1", "ts"}}, table, &k).ok());
    Collect want(k.row_bytes());
    k.consume(t.data(), t.size(), t.stride(), want);
    ASSERT_GT(want.rows.size(), 0u);
    ASSERT_LT(want.rows.size(), t.size());
    VecEmitter em;
    uint64_t spans;
    feed(*op, t, em, rng, &spans);
    expect_rows(em.rows, want);
    expect_end(*op, spans, t.size(), want.rows.size(), true);
  }
}

TEST(KernelOps, MovingAverageBothVersionsMatchTheKernel) {
  const Schema s = schema();
  std::mt19937_64 rng(11);
  const Tuples t = random_tuples(s, 5000, rng, 16);
  for (const char* ca : {"off", "on"}) {
    SCOPED_TRACE(ca);
    Status st;
    auto op = make_operator(config("moving_avg", {{"field", "p1"}, {"window", "300"}, {"cache_aware", ca},
                                                  {"staging", "64"}}), s, &st);
    ASSERT_TRUE(op) << st.message();
    kernels::MovingAverage k;
    ASSERT_TRUE(kernels::MovingAverage::make(s, "p1", 300, &k).ok());
    std::vector<double> avg(t.size());
    k.consume(t.data(), t.size(), t.stride(), avg.data());
    VecEmitter em;
    uint64_t spans;
    feed(*op, t, em, rng, &spans);
    ASSERT_EQ(em.rows.size(), t.size() * 32);
    for (size_t i = 0; i < t.size(); ++i) {
      uint64_t in_seq;
      int64_t v;
      double a;
      std::memcpy(&in_seq, &em.rows[i * 32 + 8], 8);
      std::memcpy(&v, &em.rows[i * 32 + 16], 8);
      std::memcpy(&a, &em.rows[i * 32 + 24], 8);
      ASSERT_EQ(in_seq, i);
      ASSERT_EQ(v, t.get<int64_t>(i, "p1"));
      ASSERT_EQ(a, avg[i]) << i;
    }
    expect_end(*op, spans, t.size(), t.size(), false);
  }
}

// ---- snapshots (graph/checkpoint.h)

// Feeds tuples [from, to) as in feed(), continuing seq and event numbers in
// *seq and *ev, without the end (no on_time, no flush).
void feed_part(Operator& op, const Tuples& t, size_t from, size_t to, VecEmitter& em,
               std::mt19937_64& rng, uint64_t* seq, uint64_t* ev, uint64_t* spans) {
  const uint32_t tb = t.stride();
  for (size_t i = from; i < to;) {
    std::vector<std::byte> run;
    Descriptor d{0, 0, 0, 0, 0, 0};
    for (int k = 0; k < 3 && i < to; ++k) {
      uint32_t n = 1 + rng() % 100;
      if (n > to - i) n = uint32_t(to - i);
      const uint32_t extra = *ev % 3 == 0 ? 2 : 0;
      EventHeader h{kEventMagic, kWireVersion, kEventHeaderBytes, 0, tb, *seq, n, n + extra, 0, 0,
                    1000 + *ev, *ev, 0};
      const size_t off = run.size();
      run.resize(off + h.wire_bytes());
      std::memcpy(&run[off], &h, sizeof h);
      std::memcpy(&run[off + kEventHeaderBytes], t.at(i), size_t{n} * tb);
      seal_event(&run[off]);
      *seq += n + extra;
      *spans += n + extra;
      i += n;
      ++*ev;
      ++d.events;
      d.tuples += n;
    }
    d.bytes = uint32_t(run.size());
    EXPECT_EQ(op.process(run.data(), d, em), Operator::kConsumed);
  }
}

// An operator saved after part of its input and loaded into a new one made
// alike: the new one, fed the rest, emits exactly what the first would have
// (the same rows, the derived stream's seq continued) and the same END.
TEST(Snapshot, ARestoredOperatorContinuesExactlyWhereTheSavedOneWas) {
  const Schema s = schema();
  std::mt19937_64 rng(21);
  const Tuples t = random_tuples(s, 20000, rng, 16);
  std::vector<OperatorConfig> cfgs;
  for (const char* win : {"none", "count", "time"})
    cfgs.push_back(config("groupby", {{"group_by", "p0"}, {"aggregates", "sum(p1), count, max(p1)"},
                                      {"window", win}, {"size", "600"}, {"slide", "200"},
                                      {"time_field", "ts"}, {"having", "sum(p1) >= 3000"}}));
  for (const char* ca : {"off", "on"})
    cfgs.push_back(config("moving_avg", {{"field", "p1"}, {"window", "300"}, {"cache_aware", ca},
                                         {"staging", "64"}}));
  for (const char* method : {"hash", "grace"})
    cfgs.push_back(config("join", {{"method", method}, {"key", "p0"}, {"fields", "p1, ts"},
                                   {"table_rows", "10"}, {"seed", "3"}, {"batch_tuples", "1000"}}));
  // A few open transactions (evictions), and room for all (time-outs).
  for (const char* max_open : {"5", "1000"})
    cfgs.push_back(config("correlate", {{"txn", "p0"}, {"event", "ev"}, {"time", "ts"}, {"steps", "3"},
                                        {"within", "40"}, {"max_open", max_open}}));
  for (const OperatorConfig& c : cfgs) {
    for (size_t cut : {size_t{0}, size_t{1}, size_t{4321}, size_t{12345}, t.size()}) {
      SCOPED_TRACE(c.kind + " " + c.get("window") + c.get("cache_aware") + c.get("method") + c.get("max_open") +
                   " cut at " + std::to_string(cut));
      Status st;
      auto whole = make_operator(c, s, &st);
      ASSERT_TRUE(whole) << st.message();
      ASSERT_EQ(whole->state(), Operator::State::kSaved);
      std::mt19937_64 r1(5), r2(5);
      VecEmitter want, got;
      uint64_t seq = 0, ev = 0, spans = 0;
      feed_part(*whole, t, 0, cut, want, r1, &seq, &ev, &spans);
      feed_part(*whole, t, cut, t.size(), want, r1, &seq, &ev, &spans);
      whole->on_time(UINT64_MAX, want);
      whole->flush(want);

      auto first = make_operator(c, s, &st);
      uint64_t seq2 = 0, ev2 = 0, spans2 = 0;
      // Same cut points as `whole` saw (r2 draws the same sizes) up to `cut`.
      feed_part(*first, t, 0, cut, got, r2, &seq2, &ev2, &spans2);
      SnapshotOut out;
      first->save(out);
      first.reset();  // the node died
      auto second = make_operator(c, s, &st);
      SnapshotIn in(out.data().data(), out.data().size());
      ASSERT_TRUE(second->load(in).ok());
      ASSERT_TRUE(in.ok()) << in.what();
      EXPECT_EQ(in.left(), 0u);
      feed_part(*second, t, cut, t.size(), got, r2, &seq2, &ev2, &spans2);
      second->on_time(UINT64_MAX, got);
      second->flush(got);
      ASSERT_TRUE(second->status().ok()) << second->status().message();
      ASSERT_EQ(got.rows.size(), want.rows.size());
      EXPECT_TRUE(got.rows == want.rows);
      EndOfStream e1{}, e2{};
      e1.n_streams = e2.n_streams = 1;
      e1.streams[0] = e2.streams[0] = {0, 0, spans, 0};
      whole->end(&e1);
      second->end(&e2);
      ASSERT_EQ(e1.n_streams, e2.n_streams);
      EXPECT_EQ(std::memcmp(e1.accounts, e2.accounts, sizeof e1.accounts), 0);
      EXPECT_EQ(std::memcmp(e1.streams, e2.streams, sizeof(EndOfStreamEntry) * e1.n_streams), 0);
    }
  }
}

OperatorChain groupby_chain(const Schema& s, const char* max_groups = "64") {
  OperatorChain chain;
  EXPECT_TRUE(OperatorChain::make({config("filter", {{"field", "p1"}, {"op", "ge"}, {"value", "0"}}),
                                   config("groupby", {{"group_by", "p0"}, {"aggregates", "sum(p1)"},
                                                      {"window", "count"}, {"size", "1000"},
                                                      {"max_groups", max_groups}})},
                                  s, &chain).ok());
  return chain;
}

// A snapshot file: what the chain and its counters were, back whole; any
// byte changed, any length cut, a different chain or configuration, and
// another run's file are told apart, each named.
TEST(Snapshot, TheFileComesBackWholeOrIsAnErrorNamingIt) {
  const Schema s = schema();
  std::mt19937_64 rng(22);
  const Tuples t = random_tuples(s, 5000, rng, 16);
  OperatorChain chain = groupby_chain(s);
  VecEmitter em;
  uint64_t seq = 0, ev = 0, spans = 0;
  feed_part(chain.op(1), t, 0, 2500, em, rng, &seq, &ev, &spans);
  CheckpointState st;
  st.number = 7;
  st.max_ts = 123456;
  st.watermarks = {11, 22};
  st.next_seq[0] = ev;
  st.next_seq[3] = 99;
  SnapshotOut scratch;
  std::string file;
  encode_snapshot("run-1", chain, st, &scratch, &file);

  OperatorChain back = groupby_chain(s);
  CheckpointState got;
  bool stale = true;
  ASSERT_TRUE(decode_snapshot(file.data(), file.size(), "f.snapshot", "run-1", back, &got, &stale).ok());
  EXPECT_FALSE(stale);
  EXPECT_EQ(got.number, 7u);
  EXPECT_EQ(got.max_ts, 123456u);
  EXPECT_EQ(got.watermarks, (std::vector<uint64_t>{11, 22}));
  EXPECT_EQ(got.next_seq[0], ev);
  EXPECT_EQ(got.next_seq[3], 99u);
  std::string again;
  encode_snapshot("run-1", back, got, &scratch, &again);
  EXPECT_TRUE(again == file) << "the restored chain saves the same bytes";

  // Another run's snapshot: stale, nothing loaded, no error.
  ASSERT_TRUE(decode_snapshot(file.data(), file.size(), "f.snapshot", "run-2", back, &got, &stale).ok());
  EXPECT_TRUE(stale);

  auto error_of = [&](const std::string& bytes, OperatorChain& c) {
    CheckpointState g;
    bool sl = false;
    Status e = decode_snapshot(bytes.data(), bytes.size(), "dir/node-b.0.snapshot", "run-1", c, &g, &sl);
    EXPECT_FALSE(sl);
    return e.ok() ? std::string() : e.message();
  };
  for (size_t cut = 0; cut < file.size(); cut += 1 + cut / 7) {
    OperatorChain c = groupby_chain(s);
    const std::string e = error_of(file.substr(0, cut), c);
    ASSERT_NE(e.find("snapshot dir/node-b.0.snapshot"), std::string::npos) << "cut at " << cut << ": " << e;
  }
  for (size_t at = 0; at < file.size(); at += 1 + at / 5) {
    std::string bad = file;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    OperatorChain c = groupby_chain(s);
    const std::string e = error_of(bad, c);
    ASSERT_NE(e.find("snapshot dir/node-b.0.snapshot"), std::string::npos) << "byte " << at << ": " << e;
  }
  {
    OperatorChain c = groupby_chain(s, "128");  // another max_groups
    const std::string e = error_of(file, c);
    EXPECT_NE(e.find("operator 1 (groupby)"), std::string::npos) << e;
    EXPECT_NE(e.find("max_groups"), std::string::npos) << e;
  }
  {
    OperatorChain c;
    ASSERT_TRUE(OperatorChain::make({config("filter", {{"field", "p1"}, {"op", "ge"}, {"value", "0"}}), config("moving_avg", {{"field", "p1"}})}, s, &c).ok());
    const std::string e = error_of(file, c);
    EXPECT_NE(e.find("operator 1 is groupby, this node's is moving_avg"), std::string::npos) << e;
  }
}

// Two files in turn: the newer of this run's comes back; a shorter snapshot
// leaves no tail of a longer one; a damaged file is an error naming it even
// beside a whole one; another run's files are not this run's.
// Snapshot number n of a two-operator chain, run "run", no watermarks.
std::string numbered_snapshot(const OperatorChain& chain, uint64_t n, SnapshotOut* scratch) {
  CheckpointState st;
  st.number = n;
  st.watermarks = {0, 0};
  std::string bytes;
  encode_snapshot("run", chain, st, scratch, &bytes);
  return bytes;
}

TEST(Snapshot, TwoFilesInTurnTheNewerComesBack) {
  const Schema s = schema();
  const std::string path = ::testing::TempDir() + "/files-" + std::to_string(::getpid()) + ".snapshot";
  OperatorChain chain = groupby_chain(s);
  SnapshotFiles files(path);
  SnapshotOut scratch;
  std::string bytes[4];
  std::mt19937_64 rng(23);
  const Tuples t = random_tuples(s, 3000, rng, 16);
  VecEmitter em;
  uint64_t seq = 0, ev = 0, spans = 0;
  for (uint64_t n = 1; n <= 3; ++n) {
    // Snapshot 3 holds less than 1 (a window closed): file 1 gets shorter.
    feed_part(chain.op(1), t, (n - 1) * 1000, n == 3 ? 3000 : n * 1000 - 10, em, rng, &seq, &ev, &spans);
    bytes[n] = numbered_snapshot(chain, n, &scratch);
    ASSERT_TRUE(files.write(n, bytes[n]).ok());
  }
  std::string got, where;
  bool found = false;
  ASSERT_TRUE(files.read_newest("run", &got, &where, &found).ok());
  ASSERT_TRUE(found);
  EXPECT_EQ(where, path + ".1");
  EXPECT_TRUE(got == bytes[3]);
  ASSERT_TRUE(files.read_newest("another run", &got, &where, &found).ok());
  EXPECT_FALSE(found);
  {  // the older file damaged: an error, though the newer is whole
    std::fstream f(path + ".0", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  Status st = files.read_newest("run", &got, &where, &found);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("snapshot " + path + ".0: checksum mismatch"), std::string::npos) << st.message();
  files.remove();
  EXPECT_FALSE(std::filesystem::exists(path + ".0"));
  EXPECT_FALSE(std::filesystem::exists(path + ".1"));
}

// snapshot_sync: on: the files' bytes are the same, and a damaged file
// beside a whole one is a write cut short (its input was never
// acknowledged): the whole one loads and passed_over() names the other.
// Neither whole is still an error.
TEST(Snapshot, SyncedFilesPassOverATornOneBesideAWholeOne) {
  const Schema s = schema();
  const std::string path = ::testing::TempDir() + "/synced-" + std::to_string(::getpid()) + ".snapshot";
  OperatorChain chain = groupby_chain(s);
  SnapshotFiles files(path, true);
  SnapshotOut scratch;
  std::string bytes[3];
  std::mt19937_64 rng(24);
  const Tuples t = random_tuples(s, 2000, rng, 16);
  VecEmitter em;
  uint64_t seq = 0, ev = 0, spans = 0;
  for (uint64_t n = 1; n <= 2; ++n) {
    feed_part(chain.op(1), t, (n - 1) * 1000, n * 1000, em, rng, &seq, &ev, &spans);
    bytes[n] = numbered_snapshot(chain, n, &scratch);
    ASSERT_TRUE(files.write(n, bytes[n]).ok());
  }
  std::string got, where;
  bool found = false;
  ASSERT_TRUE(files.read_newest("run", &got, &where, &found).ok());
  EXPECT_TRUE(found && got == bytes[2]);
  EXPECT_EQ(files.passed_over(), "");
  std::filesystem::resize_file(path + ".0", bytes[2].size() / 2);  // snapshot 2, torn
  ASSERT_TRUE(files.read_newest("run", &got, &where, &found).ok());
  ASSERT_TRUE(found);
  EXPECT_EQ(where, path + ".1");
  EXPECT_TRUE(got == bytes[1]);
  EXPECT_NE(files.passed_over().find("snapshot " + path + ".0"), std::string::npos) << files.passed_over();
  EXPECT_NE(files.passed_over().find("loading " + path + ".1"), std::string::npos) << files.passed_over();
  std::filesystem::resize_file(path + ".1", 10);
  Status st = files.read_newest("run", &got, &where, &found);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(found);
  files.remove();
}

TEST(KernelOps, FilterWhereKeepsWhatThePredicateSelects) {
  const Schema s = schema();
  std::mt19937_64 rng(12);
  const Tuples t = random_tuples(s, 3000, rng, 16);
  const std::string where = "p0 >= 4 and (p1 < 300 or ev == 5)";
  Status st;
  auto op = make_operator(config("filter", {{"where", where}}), s, &st);
  ASSERT_TRUE(op) << st.message();
  kernels::PredicateSpec ps;
  ASSERT_TRUE(kernels::parse_predicate(where, &ps).ok());
  kernels::Predicate p;
  ASSERT_TRUE(kernels::Predicate::make(s, ps, &p).ok());
  // Two events per run, of 1500 tuples each (more than a chunk).
  std::vector<std::byte> run;
  for (int e = 0; e < 2; ++e) {
    EventHeader h{kEventMagic, kWireVersion, kEventHeaderBytes, 0, t.stride(), e * 1500ull, 1500, 1500,
                  0, 0, 1, uint64_t(e), 0};
    const size_t off = run.size();
    run.resize(off + h.wire_bytes());
    std::memcpy(&run[off], &h, sizeof h);
    std::memcpy(&run[off + kEventHeaderBytes], t.at(e * 1500), 1500 * t.stride());
    seal_event(&run[off]);
  }
  Descriptor d{0, 0, uint32_t(run.size()), 2, 3000, 0};
  VecEmitter em;
  EXPECT_EQ(op->process(run.data(), d, em), Operator::kKeep);
  uint64_t tuples = 0;
  ASSERT_EQ(check_event_run(run.data(), d.bytes, 2, 0, &tuples), "");
  std::vector<uint64_t> want;
  for (size_t i = 0; i < t.size(); ++i)
    if (p.eval(t.at(i))) want.push_back(i);
  ASSERT_GT(want.size(), 0u);
  ASSERT_LT(want.size(), t.size());
  EXPECT_EQ(tuples, want.size());
  EXPECT_EQ(d.tuples, want.size());
  std::vector<uint64_t> got;
  size_t off = 0;
  for (int e = 0; e < 2; ++e) {
    EventHeader h;
    std::memcpy(&h, &run[off], sizeof h);
    EXPECT_EQ(h.tuple_span, 1500u);
    for (uint32_t i = 0; i < h.tuple_count; ++i) {
      uint64_t seq;
      std::memcpy(&seq, &run[off + kEventHeaderBytes + i * t.stride()], 8);
      EXPECT_EQ(std::memcmp(&run[off + kEventHeaderBytes + i * t.stride()], t.at(seq), t.stride()), 0);
      got.push_back(seq);
    }
    off += h.wire_bytes();
  }
  EXPECT_EQ(got, want);
}

// One sealed event of the tuples [from, to) of t (seq = index), send_ts `ts`.
std::vector<std::byte> one_event(const Tuples& t, size_t from, size_t to, uint64_t ts) {
  const uint32_t n = uint32_t(to - from), tb = t.stride();
  EventHeader h{kEventMagic, kWireVersion, kEventHeaderBytes, 0, tb, from, n, n, 0, 0, ts, 0, 0};
  std::vector<std::byte> run(h.wire_bytes());
  std::memcpy(run.data(), &h, sizeof h);
  std::memcpy(&run[kEventHeaderBytes], t.at(from), size_t{n} * tb);
  seal_event(run.data());
  return run;
}

// project keeps the named fields, in the order given, as a schema of its
// own name; it rewrites each event in place and keeps its seq and span.
TEST(KernelOps, ProjectKeepsTheChosenFieldsInTheirOrderUnderItsName) {
  const Schema s = schema();
  OperatorConfig c = config("project", {{"fields", "ev, p0"}, {"name", "slim"}});
  Schema out;
  ASSERT_TRUE(find_operator_spec("project")->output(c, s, &out).ok());
  EXPECT_EQ(out.describe(), "slim{seq:u64,ev:i32,p0:i64;tuple_bytes=20}");
  // A field the input does not have is an error that names it.
  Schema bad;
  Status st0 = find_operator_spec("project")->output(config("project", {{"fields", "p0, nope"}}), s, &bad);
  EXPECT_FALSE(st0.ok());
  EXPECT_NE(st0.message().find("nope"), std::string::npos) << st0.message();

  Status st;
  auto op = make_operator(c, s, &st);
  ASSERT_TRUE(op) << st.message();
  std::mt19937_64 rng(3);
  const Tuples t = random_tuples(s, 300, rng, 50);
  // Two events in one run; the second also says 4 tuples before it were filtered.
  std::vector<std::byte> run = one_event(t, 0, 100, 1);
  std::vector<std::byte> e2 = one_event(t, 100, 300, 2);
  {
    EventHeader h;
    std::memcpy(&h, e2.data(), sizeof h);
    h.tuple_span += 4;
    std::memcpy(e2.data(), &h, sizeof h);
    seal_event(e2.data());
  }
  run.insert(run.end(), e2.begin(), e2.end());
  Descriptor d{0, 0, uint32_t(run.size()), 2, 300, 0};
  VecEmitter em;
  EXPECT_EQ(op->process(run.data(), d, em), Operator::kKeep);
  EXPECT_TRUE(em.slots.empty());  // in place: no slot of its own
  uint64_t tuples = 0;
  ASSERT_EQ(check_event_run(run.data(), d.bytes, 2, 0, &tuples), "");
  EXPECT_EQ(tuples, 300u);
  EXPECT_EQ(d.bytes, 2 * kEventHeaderBytes + 300 * out.tuple_bytes());
  FieldRef ev, p0;
  ASSERT_TRUE(out.find("ev", &ev));
  ASSERT_TRUE(out.find("p0", &p0));
  size_t off = 0, row = 0;
  for (int e = 0; e < 2; ++e) {
    EventHeader h;
    std::memcpy(&h, &run[off], sizeof h);
    EXPECT_EQ(h.tuple_bytes, out.tuple_bytes());
    EXPECT_EQ(h.tuple_span, e == 0 ? 100u : 204u);
    for (uint32_t i = 0; i < h.tuple_count; ++i, ++row) {
      const std::byte* o = &run[off + kEventHeaderBytes + i * h.tuple_bytes];
      uint64_t seq;
      std::memcpy(&seq, o, 8);
      EXPECT_EQ(seq, row);
      EXPECT_EQ(load_i64(o, ev), t.get<int32_t>(row, "ev")) << row;
      EXPECT_EQ(load_i64(o, p0), t.get<int64_t>(row, "p0")) << row;
    }
    off += h.wire_bytes();
  }
  EXPECT_EQ(row, 300u);
}

// Time windows over a timestamp field follow the watermark: a window whose
// end the watermark passed goes out at on_time(), before any later tuple
// arrives; over a plain u64 field the watermark changes nothing.
TEST(KernelOps, GroupByTimeWindowsCloseWhenTheWatermarkPassesTheirEnd) {
  for (FieldType tt : {FieldType::kTimestamp, FieldType::kU64}) {
    SCOPED_TRACE(field_type_name(tt));
    Schema s;
    ASSERT_TRUE(Schema::make("ticks", {{"k", FieldType::kU32, 0}, {"t", tt, 0}, {"v", FieldType::kI64, 0}}, 0, &s).ok());
    Tuples tu(s, 250);
    for (size_t i = 0; i < 250; ++i) {
      tu.set<uint32_t>(i, "k", uint32_t(i % 3));
      tu.set<uint64_t>(i, "t", i);  // one tuple per time unit: windows of 100 hold 100
      tu.set<int64_t>(i, "v", int64_t(i));
    }
    const bool follows = tt == FieldType::kTimestamp;
    OperatorConfig c = config("groupby", {{"group_by", "k"}, {"aggregates", "sum(v), count"}, {"window", "time"},
                                          {"size", "100"}, {"time_field", "t"},
                                          {"watermark", follows ? "event" : "field"}});
    Schema out;
    ASSERT_TRUE(find_operator_spec("groupby")->output(c, s, &out).ok());
    Status st;
    auto op = make_operator(c, s, &st);
    ASSERT_TRUE(op) << st.message();
    FieldRef end, key, sum, count;
    ASSERT_TRUE(out.find("window_end", &end));
    ASSERT_TRUE(out.find("key", &key));
    ASSERT_TRUE(out.find("sum_v", &sum));
    ASSERT_TRUE(out.find("count", &count));
    auto rows_ending = [&](const VecEmitter& em, int64_t at) {
      size_t n = 0;
      for (size_t r = 0; r * out.tuple_bytes() < em.rows.size(); ++r)
        if (load_i64(&em.rows[r * out.tuple_bytes()], end) == at) ++n;
      return n;
    };
    VecEmitter em;
    std::vector<std::byte> run = one_event(tu, 0, 250, 250);
    Descriptor d{0, 0, uint32_t(run.size()), 1, 250, 0};
    EXPECT_EQ(op->process(run.data(), d, em), Operator::kConsumed);
    // Windows [0,100) and [100,200) closed as later tuples came; [200,300) is open.
    EXPECT_EQ(rows_ending(em, 100), 3u);
    EXPECT_EQ(rows_ending(em, 200), 3u);
    EXPECT_EQ(rows_ending(em, 300), 0u);
    op->on_time(299, em);
    EXPECT_EQ(rows_ending(em, 300), 0u) << "the watermark has not passed its end";
    op->on_time(300, em);
    EXPECT_EQ(rows_ending(em, 300), follows ? 3u : 0u);
    op->on_time(UINT64_MAX, em);
    op->flush(em);
    EXPECT_TRUE(op->status().ok()) << op->status().message();
    EXPECT_EQ(rows_ending(em, 300), 3u);  // once, either way
    ASSERT_EQ(em.rows.size(), 9 * out.tuple_bytes());
    for (size_t r = 0; r < 9; ++r) {
      const std::byte* row = &em.rows[r * out.tuple_bytes()];
      const int64_t e = load_i64(row, end), k = load_i64(row, key);
      int64_t want_sum = 0, want_n = 0;
      for (int64_t i = e - 100; i < e && i < 250; ++i)
        if (i % 3 == k) { want_sum += i; ++want_n; }
      EXPECT_EQ(load_i64(row, sum), want_sum) << "window " << e << " key " << k;
      EXPECT_EQ(load_i64(row, count), want_n) << "window " << e << " key " << k;
    }
    expect_end(*op, 250, 250, 9, false);
  }
}

// The runtime's watermark is wall-clock ns; a timestamp field filled with
// small numbers (the generator's sequence) must not be closed by it, or every
// tuple after the first event is dropped as late (found through processes:
// 12 rows of 240).
TEST(KernelOps, GroupByTimeWindowsFollowTheirFieldNotTheSendClock) {
  Schema s;
  ASSERT_TRUE(Schema::make("ticks", {{"k", FieldType::kU32, 0}, {"t", FieldType::kTimestamp, 0},
                                     {"v", FieldType::kI64, 0}}, 0, &s).ok());
  Tuples tu(s, 400);
  for (size_t i = 0; i < 400; ++i) {
    tu.set<uint32_t>(i, "k", uint32_t(i % 4));
    tu.set<uint64_t>(i, "t", i);
    tu.set<int64_t>(i, "v", 1);
  }
  OperatorConfig c = config("groupby", {{"group_by", "k"}, {"aggregates", "count"}, {"window", "time"},
                                        {"size", "100"}, {"time_field", "t"}});
  Schema out;
  ASSERT_TRUE(find_operator_spec("groupby")->output(c, s, &out).ok());
  Status st;
  auto op = make_operator(c, s, &st);
  ASSERT_TRUE(op) << st.message();
  VecEmitter em;
  for (size_t e = 0; e < 4; ++e) {  // four events of 100 tuples, a wall-clock watermark after each
    std::vector<std::byte> run = one_event(tu, e * 100, e * 100 + 100, 1 + e);
    Descriptor d{0, 0, uint32_t(run.size()), 1, 100, 0};
    op->process(run.data(), d, em);
    op->on_time(1'795'000'000'000'000'000ull + e, em);
  }
  op->on_time(UINT64_MAX, em);
  op->flush(em);
  ASSERT_TRUE(op->status().ok()) << op->status().message();
  EXPECT_EQ(em.rows.size(), 16 * out.tuple_bytes()) << "4 windows x 4 groups";
  FieldRef count;
  ASSERT_TRUE(out.find("count", &count));
  for (size_t r = 0; r * out.tuple_bytes() < em.rows.size(); ++r)
    EXPECT_EQ(load_i64(&em.rows[r * out.tuple_bytes()], count), 25) << "row " << r;

  // watermark: event only where the field can hold event time.
  Schema u;
  ASSERT_TRUE(Schema::make("u", {{"t", FieldType::kU64, 0}}, 0, &u).ok());
  OperatorConfig bad = config("groupby", {{"window", "time"}, {"size", "100"}, {"time_field", "t"},
                                          {"watermark", "event"}});
  Schema ignored;
  Status e = find_operator_spec("groupby")->output(bad, u, &ignored);
  EXPECT_NE(e.message().find("type timestamp"), std::string::npos) << e.message();
}

TEST(KernelOps, BadParametersAreErrorsThatNameThem) {
  const Schema s = schema();
  Schema out;
  EXPECT_NE(find_operator_spec("groupby")->output(config("groupby", {{"aggregates", "median(p1)"}}), s, &out)
                .message().find("median"), std::string::npos);
  EXPECT_NE(find_operator_spec("filter")->output(config("filter", {{"where", "p9 > 1"}}), s, &out)
                .message().find("p9"), std::string::npos);
  EXPECT_NE(find_operator_spec("join")->output(config("join", {{"key", "p0"}}), s, &out)
                .message().find("table_rows"), std::string::npos);
  EXPECT_NE(find_operator_spec("moving_avg")->output(config("moving_avg", {{"field", "nope"}}), s, &out)
                .message().find("nope"), std::string::npos);
}

}  // namespace
}  // namespace sluice

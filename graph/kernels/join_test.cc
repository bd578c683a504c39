// Stream-to-table joins against std::unordered_map, on random tables and
// streams; the CSV loader's rows and its errors.
#include "graph/kernels/join.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <unordered_map>

#include "graph/kernels/test_util.h"

namespace sluice::kernels {
namespace {

using testing::Collect;
using testing::Tuples;

Schema stream_schema() {
  Schema s;
  EXPECT_TRUE(Schema::make("s", {{"id", FieldType::kI32}, {"a1", FieldType::kF64}, {"a2", FieldType::kF64},
                                 {"ts", FieldType::kU64}}, 0, &s).ok());
  return s;
}

std::vector<FieldSpec> table_columns() {
  return {{"id", FieldType::kI64}, {"t1", FieldType::kI32}, {"t2", FieldType::kI32},
          {"t3", FieldType::kU64}, {"t4", FieldType::kBytes, 5}};
}

TEST(Join, HashAndGraceMatchReference) {
  Schema s = stream_schema();
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    JoinTable table;
    ASSERT_TRUE(JoinTable::make(table_columns(), "id", {"t1", "t3"}, &table).ok());
    // Unique keys from [-3000, 3000), some negative.
    std::vector<int64_t> keys;
    for (int64_t k = -3000; k < 3000; ++k) if (rng() % 3 == 0) keys.push_back(k);
    // The all-ones key (-1) must not be taken for the empty-slot marker.
    if (seed == 2 && std::find(keys.begin(), keys.end(), -1) == keys.end()) keys.push_back(-1);
    std::unordered_map<int64_t, std::vector<std::byte>> ref;
    for (int64_t k : keys) {
      std::vector<std::byte> p(12);
      for (auto& b : p) b = static_cast<std::byte>(rng());
      table.add_row(static_cast<uint64_t>(k), p.data());
      ref[k] = p;
    }
    Tuples t(s, 20000);
    for (size_t i = 0; i < t.size(); ++i) {
      t.set<int32_t>(i, "id", static_cast<int32_t>(rng() % 7000) - 3500);
      t.set<double>(i, "a1", static_cast<double>(rng() % 1000));
      t.set<uint64_t>(i, "ts", i);
    }
    JoinSpec spec{"id", {"id", "a1"}};
    // The reference: seq, id, a1, t1, t3 for each matching tuple, in order.
    std::vector<std::vector<std::byte>> want;
    for (size_t i = 0; i < t.size(); ++i) {
      auto it = ref.find(t.get<int32_t>(i, "id"));
      if (it == ref.end()) continue;
      std::vector<std::byte> row(8 + 4 + 8 + 12);
      std::memcpy(row.data(), t.at(i), 8);
      std::memcpy(row.data() + 8, t.at(i) + 8, 12);
      std::memcpy(row.data() + 20, it->second.data(), 12);
      want.push_back(row);
    }
    HashJoin hj;
    Status st = HashJoin::make(s, spec, table, &hj);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(hj.output_schema().describe(), "join{seq:u64,id:i32,a1:f64,t1:i32,t3:u64;tuple_bytes=32}");
    Collect got(hj.row_bytes());
    for (auto [b, m] : testing::random_runs(t.size(), 900, rng)) hj.consume(t.at(b), m, t.stride(), got);
    ASSERT_EQ(got.rows, want) << "seed " << seed;
    EXPECT_EQ(hj.matched(), want.size());
    EXPECT_EQ(hj.matched() + hj.unmatched(), t.size());
    EXPECT_LE(hj.index_bytes(), table.rows() * 20 * 5 / 3 + 40);

    GraceOptions opt;
    opt.batch_tuples = 1 + static_cast<uint32_t>(rng() % 3000);
    opt.partition_bytes = 1024 << (rng() % 4);
    opt.prefetch = seed % 2 ? 0 : 1 + static_cast<uint32_t>(rng() % 20);
    GraceHashJoin gj;
    ASSERT_TRUE(GraceHashJoin::make(s, spec, table, opt, &gj).ok());
    EXPECT_GT(gj.partitions(), 1u);
    Collect got2(gj.row_bytes());
    for (auto [b, m] : testing::random_runs(t.size(), 900, rng)) gj.consume(t.at(b), m, t.stride(), got2);
    gj.flush(got2);
    ASSERT_EQ(got2.rows, want) << "seed " << seed << " batch " << opt.batch_tuples;
    EXPECT_EQ(gj.matched() + gj.unmatched(), t.size());
  }
}

// A grace join's snapshot (its open batch) loads only into one made alike.
TEST(Join, AGraceSnapshotOfAnotherBatchOrLayoutIsRefused) {
  Schema s = stream_schema();
  JoinTable table;
  ASSERT_TRUE(JoinTable::make(table_columns(), "id", {"t1"}, &table).ok());
  std::byte p[4] = {};
  for (int64_t k = 0; k < 100; ++k) table.add_row(static_cast<uint64_t>(k), p);
  JoinSpec spec{"id", {"a1"}};
  GraceOptions opt;
  opt.batch_tuples = 64;
  GraceHashJoin a;
  ASSERT_TRUE(GraceHashJoin::make(s, spec, table, opt, &a).ok());
  Tuples t(s, 10);
  for (size_t i = 0; i < t.size(); ++i) t.set<int32_t>(i, "id", static_cast<int32_t>(i * 20));
  Collect none(a.row_bytes());
  a.consume(t.at(0), t.size(), t.stride(), none);
  ASSERT_TRUE(none.rows.empty());
  SnapshotOut out;
  a.save(out);
  const std::string good = out.data();

  GraceHashJoin b;
  ASSERT_TRUE(GraceHashJoin::make(s, spec, table, opt, &b).ok());
  SnapshotIn in(good.data(), good.size());
  ASSERT_TRUE(b.load(in).ok());
  Collect got(b.row_bytes());
  b.flush(got);
  EXPECT_EQ(got.rows.size(), 5u);  // ids 0, 20, 40, 60, 80
  EXPECT_EQ(b.matched(), 5u);
  EXPECT_EQ(b.unmatched(), 5u);

  GraceOptions bigger = opt;
  bigger.batch_tuples = 128;
  GraceHashJoin c;
  ASSERT_TRUE(GraceHashJoin::make(s, spec, table, bigger, &c).ok());
  SnapshotIn in2(good.data(), good.size());
  Status st = c.load(in2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("64-tuple batches"), std::string::npos) << st.message();

  std::string over = good;
  const uint32_t fill = 64;
  std::memcpy(&over[8], &fill, 4);
  GraceHashJoin d;
  ASSERT_TRUE(GraceHashJoin::make(s, spec, table, opt, &d).ok());
  SnapshotIn in3(over.data(), over.size());
  st = d.load(in3);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("holds 64 buffered tuples"), std::string::npos) << st.message();
  Collect empty(d.row_bytes());
  d.flush(empty);
  EXPECT_TRUE(empty.rows.empty());
}

TEST(Join, DuplicateKeyNamesItsRow) {
  Schema s = stream_schema();
  JoinTable table;
  ASSERT_TRUE(JoinTable::make(table_columns(), "id", {"t1"}, &table).ok());
  std::byte p[4]{};
  table.add_row(5, p);
  table.add_row(6, p);
  table.add_row(5, p);
  HashJoin hj;
  Status st = HashJoin::make(s, {"id", {}}, table, &hj);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("row 2: key 5 appears twice"), std::string::npos) << st.message();
  GraceHashJoin gj;
  st = GraceHashJoin::make(s, {"id", {}}, table, {}, &gj);
  EXPECT_NE(st.message().find("key 5 appears twice"), std::string::npos) << st.message();
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(JoinTable, LoadsCsvAndNamesFileLineColumnOnErrors) {
  JoinTable t;
  ASSERT_TRUE(JoinTable::make(table_columns(), "id", {"t4", "t1"}, &t).ok());
  std::string ok = write_file("ok.csv", "t1,id,t2,t3,t4,extra\n7, 1, 0, 0, ab,x\n-8,0x10,0,0,,y\n\n");
  Status st = t.load_csv(ok);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.key(0), 1u);
  EXPECT_EQ(t.key(1), 16u);
  EXPECT_EQ(std::memcmp(t.payload(0), "ab\0\0\0", 5), 0);
  int32_t v;
  std::memcpy(&v, t.payload(1) + 5, 4);
  EXPECT_EQ(v, -8);

  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"t1,id,t2,t3\n", "bad.csv:1: the header has no column 't4'"},
      {"id,t1,t2,t3,t4\n1,2,3,4,x\n2,zz,3,4,x\n", "bad.csv:3: column 't1': 'zz' is not a i32"},
      {"id,t1,t2,t3,t4\n1,2,3,4\n", "bad.csv:2: 4 fields, the header has 5"},
      {"id,t1,t2,t3,t4\n1,2,3,4,toolong\n", "bad.csv:2: column 't4': 'toolong' is not a bytes of at most 5"},
      {"id,t1,t2,t3,t4\nx1,2,3,4,a\n", "bad.csv:2: column 'id': 'x1' is not a i64"},
      {"id,t1,t2,t3,t4\n1,3000000000,3,4,a\n", "bad.csv:2: column 't1'"},
      {"id,t1,t2,t3,t4\n1,2,3,4,a\n\n2,2,3,4,a\n", "bad.csv:3: a row after a blank line"},
  };
  for (const auto& c : cases) {
    std::string path = write_file("bad.csv", c.text);
    st = t.load_csv(path);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_NE(st.message().find(c.want), std::string::npos) << st.message();
  }
  st = t.load_csv("/nonexistent/x.csv");
  EXPECT_NE(st.message().find("/nonexistent/x.csv: cannot open"), std::string::npos) << st.message();

  // A duplicate in a CSV names the file and line.
  std::string dup = write_file("dup.csv", "id,t1,t2,t3,t4\n1,2,3,4,a\n2,2,3,4,a\n1,2,3,4,a\n");
  ASSERT_TRUE(t.load_csv(dup).ok());
  HashJoin hj;
  st = HashJoin::make(stream_schema(), {"id", {}}, t, &hj);
  EXPECT_NE(st.message().find("dup.csv:4: key 1 appears twice"), std::string::npos) << st.message();
}

TEST(JoinTable, GeneratedKeysAreUniqueAndDense) {
  JoinTable t;
  ASSERT_TRUE(JoinTable::make(table_columns(), "id", {"t1"}, &t).ok());
  t.generate(1000, 3);
  std::vector<bool> seen(1001);
  for (size_t r = 0; r < t.rows(); ++r) {
    ASSERT_GE(t.key(r), 1u);
    ASSERT_LE(t.key(r), 1000u);
    EXPECT_FALSE(seen[t.key(r)]);
    seen[t.key(r)] = true;
  }
}

}  // namespace
}  // namespace sluice::kernels

// A sink's results file: records in each format, under PATH.part until END
// renames it, bounded by its buffer, and cut back to what a restored
// snapshot saw written.
#include "sink/results.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Fixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("sluice-results-" + std::to_string(getpid()));
  Schema schema;
  void SetUp() override {
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_TRUE(Schema::make("rows", {{"key", FieldType::kU32, 0}, {"sum", FieldType::kI64, 0},
                                      {"tag", FieldType::kBytes, 4}},
                             0, &schema)
                    .ok());
  }
  void TearDown() override { fs::remove_all(dir); }
  std::vector<std::byte> tuple(uint64_t seq) const {
    std::vector<std::byte> t(schema.tuple_bytes());
    const uint32_t key = static_cast<uint32_t>(seq % 7);
    const int64_t sum = -int64_t(seq) * 1000;
    std::memcpy(t.data(), &seq, 8);
    std::memcpy(t.data() + 8, &key, 4);
    std::memcpy(t.data() + 12, &sum, 8);
    std::memcpy(t.data() + 20, "ab", 2);
    return t;
  }
  std::string path(const char* name) const { return (dir / name).string(); }
};

TEST_F(Fixture, CsvIsCompleteUnderItsNameOnlyAfterFinish) {
  ResultsFile r;
  ASSERT_TRUE(r.prepare(path("r.csv"), schema, RecordFormat::kCsv, {}).ok());
  ASSERT_TRUE(r.open(-1).ok());
  for (uint64_t s = 0; s < 3; ++s) ASSERT_TRUE(r.write(tuple(s).data()).ok());
  int64_t bytes = 0;
  ASSERT_TRUE(r.written(&bytes).ok());
  EXPECT_FALSE(fs::exists(path("r.csv")));
  EXPECT_EQ(slurp(path("r.csv.part")).size(), static_cast<size_t>(bytes));
  ASSERT_TRUE(r.finish().ok());
  EXPECT_FALSE(fs::exists(path("r.csv.part")));
  // Bytes fields are left out of text formats unless named.
  EXPECT_EQ(slurp(path("r.csv")), "seq,key,sum\n0,0,0\n1,1,-1000\n2,2,-2000\n");
}

TEST_F(Fixture, JsonlAndBinaryWriteTheFieldsAsked) {
  ResultsFile j, b;
  ASSERT_TRUE(j.prepare(path("r.jsonl"), schema, RecordFormat::kJsonl, {"sum", "tag"}).ok());
  ASSERT_TRUE(b.prepare(path("r.bin"), schema, RecordFormat::kBinary, {}).ok());
  ASSERT_TRUE(j.open(-1).ok());
  ASSERT_TRUE(b.open(-1).ok());
  for (uint64_t s = 0; s < 2; ++s) {
    ASSERT_TRUE(j.write(tuple(s).data()).ok());
    ASSERT_TRUE(b.write(tuple(s).data()).ok());
  }
  ASSERT_TRUE(j.finish().ok());
  ASSERT_TRUE(b.finish().ok());
  EXPECT_EQ(slurp(path("r.jsonl")), "{\"sum\":0,\"tag\":\"ab\"}\n{\"sum\":-1000,\"tag\":\"ab\"}\n");
  const std::string bin = slurp(path("r.bin"));
  ASSERT_EQ(bin.size(), 2u * schema.tuple_bytes());  // seq and every field, bytes too
  EXPECT_EQ(0, std::memcmp(bin.data() + schema.tuple_bytes(), tuple(1).data(), schema.tuple_bytes()));
}

TEST_F(Fixture, MoreThanTheBufferGoesOutInPiecesAndWhole) {
  ResultsFile r;
  ASSERT_TRUE(r.prepare(path("big.csv"), schema, RecordFormat::kCsv, {"seq"}).ok());
  ASSERT_TRUE(r.open(-1).ok());
  std::string want = "seq\n";
  const uint64_t n = 3 * ResultsFile::kBufferBytes / 7;
  for (uint64_t s = 0; s < n; ++s) {
    ASSERT_TRUE(r.write(tuple(s).data()).ok());
    want += std::to_string(s) + "\n";
  }
  // Before the end, the file holds whole buffers' worth, no more.
  EXPECT_GT(fs::file_size(path("big.csv.part")), 0u);
  EXPECT_LT(fs::file_size(path("big.csv.part")), want.size());
  ASSERT_TRUE(r.finish().ok());
  EXPECT_EQ(slurp(path("big.csv")), want);
}

// A sink killed after a snapshot: its restart cuts the file back to what the
// snapshot saw and goes on; the result is as if it had not died.
TEST_F(Fixture, ARestoredSinkCutsBackToItsSnapshotAndGoesOn) {
  int64_t keep = 0;
  {
    ResultsFile r;
    ASSERT_TRUE(r.prepare(path("k.csv"), schema, RecordFormat::kCsv, {"seq", "sum"}).ok());
    ASSERT_TRUE(r.open(-1).ok());
    for (uint64_t s = 0; s < 5; ++s) ASSERT_TRUE(r.write(tuple(s).data()).ok());
    ASSERT_TRUE(r.written(&keep).ok());  // the snapshot
    for (uint64_t s = 5; s < 8; ++s) ASSERT_TRUE(r.write(tuple(s).data()).ok());
    int64_t more;
    ASSERT_TRUE(r.written(&more).ok());  // written after it, then the death
  }
  ResultsFile again;
  ASSERT_TRUE(again.prepare(path("k.csv"), schema, RecordFormat::kCsv, {"seq", "sum"}).ok());
  ASSERT_TRUE(again.open(keep).ok());
  for (uint64_t s = 5; s < 7; ++s) ASSERT_TRUE(again.write(tuple(s).data()).ok());
  ASSERT_TRUE(again.finish().ok());
  std::string want = "seq,sum\n";
  for (int64_t s = 0; s < 7; ++s) want += std::to_string(s) + "," + std::to_string(-s * 1000) + "\n";
  EXPECT_EQ(slurp(path("k.csv")), want);

  // Killed after the rename, before its summary: restored from its last
  // snapshot, it finishes the complete file again.
  int64_t all = static_cast<int64_t>(want.size());
  ResultsFile third;
  ASSERT_TRUE(third.prepare(path("k.csv"), schema, RecordFormat::kCsv, {"seq", "sum"}).ok());
  ASSERT_TRUE(third.open(all).ok());
  ASSERT_TRUE(third.finish().ok());
  EXPECT_EQ(slurp(path("k.csv")), want);

  // A file shorter than the snapshot saw: cut or replaced since.
  ResultsFile fourth;
  ASSERT_TRUE(fourth.prepare(path("k.csv"), schema, RecordFormat::kCsv, {"seq", "sum"}).ok());
  Status st = fourth.open(all + 10);
  EXPECT_EQ(st.message(), "results file " + path("k.csv.part") + ": " + std::to_string(all) +
                              " bytes, fewer than the " + std::to_string(all + 10) +
                              " the restored snapshot saw written (was it cut or replaced?)");
}

TEST_F(Fixture, AFolderThatTakesNoFileFailsAtPrepare) {
  ResultsFile r;
  Status st = r.prepare(path("none/r.csv"), schema, RecordFormat::kCsv, {});
  EXPECT_EQ(st.message(), "results file " + path("none/r.csv") + ": its folder " + path("none") +
                              ": No such file or directory");
  st = r.prepare(path("r.csv"), schema, RecordFormat::kCsv, {"nope"});
  EXPECT_EQ(st.message(), "results file " + path("r.csv") +
                              ": column 'nope' names no field of schema 'rows' (its fields: seq, key, sum, tag)");
}

}  // namespace
}  // namespace sluice

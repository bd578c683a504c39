// Records from a file through real processes (deploy/examples/file.yaml):
// the Esper query over a CSV file gives exactly the rows it gives over the
// same tuples generated (esper.yaml); a bad row fails the run naming its
// line and column, or is counted and left out; the results appear under
// their name only complete.

#include "tests/pipeline_fixture.h"

namespace {

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

const std::string kExamples = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/";

// A CSV results file's rows after its header, less its first `skip` columns.
std::vector<std::string> rows_of(const std::string& path, size_t skip = 0) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> rows;
  std::getline(in, line);
  while (std::getline(in, line)) {
    size_t at = 0;
    for (size_t i = 0; i < skip; ++i) at = line.find(',', at) + 1;
    rows.push_back(line.substr(at));
  }
  return rows;
}

uint64_t process_field(const RunResult& r, const std::string& name, const char* key) {
  for (const auto& p : r.json["processes"])
    if (p["name"].as<std::string>() == name) return p[key].as<uint64_t>();
  ADD_FAILURE() << "no process " << name;
  return 0;
}

TEST(PipelineFile, EsperOverACsvFileGivesTheRowsOfTheSameTuplesGenerated) {
  const std::vector<std::string> n = {"tuples=300000"};
  // The input: esper.yaml's tuples as CSV (p0,p1), written by a sink.
  RunResult gen = deploy("file-tuples", 19000, n, kExamples + "esper-tuples.yaml");
  ASSERT_EQ(gen.code, 0) << gen.err << gen.out;
  const std::string csv = gen.dir + "/run/esper-tuples.csv";
  ASSERT_TRUE(fs::exists(csv));
  EXPECT_FALSE(fs::exists(csv + ".part"));
  {
    std::ifstream in(csv);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header, "p0,p1");
  }
  RunResult ref = deploy("file-esper", 19400, n, kExamples + "esper.yaml");
  ASSERT_EQ(ref.code, 0) << ref.err << ref.out;
  RunResult r = deploy("file-query", 19800, {"source_file=" + csv}, kExamples + "file.yaml");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_EQ(r.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["corrupt"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["rejected"].as<uint64_t>(), 0u);
  EXPECT_EQ(process_field(r, "loadgen", "tuples_out"), 300000u);
  EXPECT_EQ(process_field(r, "loadgen", "read_bytes"), fs::file_size(csv));
  EXPECT_EQ(r.json["filtered"].as<uint64_t>() + r.json["aggregated"].as<uint64_t>(), 300000u);
  const std::string results = r.dir + "/run/file-results.csv";
  {
    std::ifstream in(results);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header, "window_end,key,sum_p1");
  }
  const std::vector<std::string> want = rows_of(ref.dir + "/run/esper-results.csv", 1);  // less seq
  ASSERT_GT(want.size(), 0u);
  EXPECT_EQ(rows_of(results), want);
  EXPECT_FALSE(fs::exists(results + ".part"));
}

// A CSV file with a non-number in its fourth line: the run fails and says
// where; with bad_records: reject the row is counted and the rest goes
// through.
TEST(PipelineFile, ABadRowFailsTheRunWithItsPositionOrIsCountedAsRejected) {
  const std::string dir = scratch("file-bad-in");
  const std::string csv = dir + "/in.csv";
  {
    std::ofstream out(csv);
    out << "p1,p0\n";
    for (int i = 0; i < 20000; ++i) {
      if (i == 2) out << "x,1\n";        // line 4: p1 not a number
      else if (i == 7) out << "5\n";     // line 9: too few columns
      else out << (i % 1000) << "," << (i % 8) << "\n";
    }
  }
  RunResult r = deploy("file-bad", 19200, {"source_file=" + csv}, kExamples + "file.yaml");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_HAS(run_logs(r), csv + ":4:1: field p1 (i64): 'x' is not an integer");
  EXPECT_FALSE(fs::exists(r.dir + "/run/file-results.csv")) << "a run that failed has no complete results";

  RunResult ok = deploy("file-reject", 19600, {"source_file=" + csv, "bad_records=reject"}, kExamples + "file.yaml");
  ASSERT_EQ(ok.code, 0) << ok.err << ok.out;
  EXPECT_EQ(ok.json["rejected"].as<uint64_t>(), 2u);
  EXPECT_EQ(ok.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(process_field(ok, "loadgen", "tuples_out"), 19998u);
  EXPECT_EQ(ok.json["filtered"].as<uint64_t>() + ok.json["aggregated"].as<uint64_t>(), 19998u);
  EXPECT_HAS(run_logs(ok), "rejected: " + csv + ":9:2: 1 of 2 values: nothing for column 2 (p0)");
}

}  // namespace

// The query graph's other operators through real processes: correlate, the
// stream-to-table join (plain and grace), and the moving average.

#include "tests/pipeline_fixture.h"

// ---- The query graph's other operators through real processes.
namespace query_test {

// Each reads the sink's `results:` CSV: its header, then rows of numbers.
std::vector<std::vector<std::string>> read_rows(const std::string& path, std::string* header) {
  std::ifstream in(path);
  std::getline(in, *header);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cols.push_back(c);
    rows.push_back(cols);
  }
  return rows;
}

void expect_run_clean(const RunResult& r) {
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  ASSERT_TRUE(r.json.IsMap()) << r.out;
  EXPECT_TRUE(r.json["ok"].as<bool>());
  EXPECT_EQ(r.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["corrupt"].as<uint64_t>(), 0u);
}

// The study's aggregate: per transaction, four tuples of increasing event id
// within `within` time units. The generator gives txn and event from hashes
// of seq and time = seq, so which transactions complete is fixed by the
// sequence; a plain model of correlate's rules (correlate.h) over the same
// values says which rows must arrive, in order.
const char* kCorrelate = R"(preset: tcp-opt
schema: txns
schemas:
  txns:
    fields:
      - {name: txn, type: u32, gen: {uniform: 48}}
      - {name: event, type: i32, gen: {uniform: 6}}
      - {name: time, type: u64, gen: sequence}
event_bytes: 2048
tuples: 60000
processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, operators: [{correlate: {txn: txn, event: event, time: time, within: 400, steps: 4, max_open: 4096}}]}
)";

TEST(PipelineQuery, CorrelateDeliversTheMatchesAModelGivesAndLosesNothing) {
  std::string dir = scratch("correlate-in");
  std::string file = dir + "/correlate.yaml";
  const std::string results = dir + "/rows.csv";
  std::ofstream(file) << kCorrelate << "  - {name: sink, role: sink, results: " << results << "}\n";
  RunResult r = deploy("correlate", 18400, {}, file);
  expect_run_clean(r);

  sluice::Deployment d;
  ASSERT_TRUE(sluice::load_deployment(file, {}, &d).ok());
  sluice::FieldFiller fill(*d.find_schema("txns"));
  struct Open { uint64_t first; int64_t last; uint32_t count; };
  std::map<uint64_t, Open> open;
  std::vector<std::array<uint64_t, 3>> want;  // txn, first_time, last_time
  uint64_t restarted = 0, expired = 0;
  for (uint64_t seq = 0; seq < 60000; ++seq) {
    const uint64_t txn = fill.value(0, seq), t = fill.value(2, seq);
    const int64_t ev = fill.value(1, seq);
    for (auto it = open.begin(); it != open.end();) {
      if (t - it->second.first > 400) { it = open.erase(it); ++expired; } else ++it;
    }
    auto it = open.find(txn);
    if (it == open.end()) {
      open[txn] = {t, ev, 1};
    } else if (ev > it->second.last) {
      it->second.last = ev;
      if (++it->second.count == 4) {
        want.push_back({txn, it->second.first, t});
        open.erase(it);
      }
    } else {
      it->second = {t, ev, 1};
      ++restarted;
    }
  }
  ASSERT_GT(want.size(), 10u);  // the fields do make matches
  ASSERT_GT(restarted, 0u);     // and break some orders
  ASSERT_GT(expired, 0u);       // and time some out

  EXPECT_EQ(r.json["aggregated"].as<uint64_t>(), 60000u);
  EXPECT_EQ(r.json["tuples"].as<uint64_t>(), want.size());
  std::string header;
  auto rows = read_rows(results, &header);
  EXPECT_EQ(header, "seq,txn,first_time,last_time");
  ASSERT_EQ(rows.size(), want.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 4u) << i;
    EXPECT_EQ(std::stoull(rows[i][0]), i);  // the derived stream's seq
    const std::array<uint64_t, 3> got{std::stoull(rows[i][1]), std::stoull(rows[i][2]),
                                      std::stoull(rows[i][3])};
    EXPECT_EQ(got, want[i]) << "row " << i;
    EXPECT_LE(got[2] - got[1], 400u);
  }
}

// A stream-to-table join against a CSV table the test writes: keys 1..30 of
// 0..39 have a row, so about a quarter of the tuples find none and are
// dropped; every tuple is counted as joined, and the rows are the matches in
// input order (grace: the same rows, in any order).
void join_through_processes(const std::string& method, int port) {
  SCOPED_TRACE(method);
  std::string dir = scratch("join-in-" + method);
  std::string file = dir + "/join.yaml";
  const std::string results = dir + "/rows.csv";
  const std::string table = dir + "/table.csv";
  {
    std::ofstream t(table);
    t << "extra,w,id\n";  // the header names the columns, in any order
    for (int id = 1; id <= 30; ++id) t << "x," << id * 7 - 100 << "," << id << "\n";
  }
  std::ofstream(file) << "preset: tcp-opt\nschema: orders\nschemas:\n  orders:\n    fields:\n"
                         "      - {name: k, type: u32, gen: {uniform: 40}}\n"
                         "      - {name: v, type: i64, gen: {uniform: 1000}}\n"
                         "event_bytes: 2048\ntuples: 50000\nprocesses:\n"
                         "  - {name: loadgen, role: loadgen}\n"
                         "  - {name: node-a, role: node, operators: [{join: {method: " << method
                      << ", batch_tuples: 1000, partition_bytes: 4096, key: k, fields: \"k, v\", "
                         "table_csv: " << table << ", table_columns: \"id:u64, w:i32\", table_key: id, "
                         "payload: w}}]}\n"
                         "  - {name: sink, role: sink, results: " << results << "}\n";
  RunResult r = deploy("join-" + method, port, {}, file);
  expect_run_clean(r);

  sluice::Deployment d;
  ASSERT_TRUE(sluice::load_deployment(file, {}, &d).ok());
  sluice::FieldFiller fill(*d.find_schema("orders"));
  std::vector<std::array<int64_t, 3>> want;  // k, v, w
  for (uint64_t seq = 0; seq < 50000; ++seq) {
    const int64_t k = fill.value(0, seq), v = fill.value(1, seq);
    if (k >= 1 && k <= 30) want.push_back({k, v, k * 7 - 100});
  }
  ASSERT_GT(want.size(), 0u);
  ASSERT_LT(want.size(), 50000u);  // some find no row

  EXPECT_EQ(r.json["joined"].as<uint64_t>(), 50000u);
  EXPECT_EQ(r.json["tuples"].as<uint64_t>(), want.size());
  std::string header;
  auto rows = read_rows(results, &header);
  EXPECT_EQ(header, "seq,k,v,w");
  ASSERT_EQ(rows.size(), want.size());
  std::vector<std::array<int64_t, 3>> got;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 4u) << i;
    EXPECT_EQ(std::stoull(rows[i][0]), i);
    got.push_back({std::stoll(rows[i][1]), std::stoll(rows[i][2]), std::stoll(rows[i][3])});
  }
  if (method == "grace") {  // batched and partitioned: the order is not promised
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
  }
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "row " << i;
}

TEST(PipelineQuery, JoinWithACsvTableDeliversTheJoinedRowsAndLosesNothing) {
  join_through_processes("hash", 18800);
}

TEST(PipelineQuery, GraceJoinWithACsvTableDeliversTheJoinedRowsAndLosesNothing) {
  join_through_processes("grace", 19800);
}

// A moving average over the last 50 values of a field, after a filter: one
// row per tuple that passed, its input seq, its value and the average of
// the (up to) 50 values that passed last, exactly as a double divides them.
// The cache-aware version (staged block copies) gives the same bits.
void moving_through_processes(const std::string& cache_aware, int port) {
  SCOPED_TRACE(cache_aware);
  std::string dir = scratch("moving-in-" + cache_aware);
  std::string file = dir + "/moving.yaml";
  const std::string results = dir + "/rows.csv";
  std::ofstream(file) << "preset: tcp-opt\nschema: prices\nschemas:\n  prices:\n    fields:\n"
                         "      - {name: price, type: i64, gen: {uniform: 1000}}\n"
                         "event_bytes: 2048\ntuples: 40000\nprocesses:\n"
                         "  - {name: loadgen, role: loadgen}\n"
                         "  - {name: node-a, role: node, operators: [{filter: {field: price, op: ge, value: 200}}]}\n"
                         "  - {name: node-b, role: node, operators: [{moving_avg: {field: price, window: 50, "
                         "staging: 16, cache_aware: " << cache_aware << "}}]}\n"
                         "  - {name: sink, role: sink, results: " << results << "}\n";
  RunResult r = deploy("moving-" + cache_aware, port, {}, file);
  expect_run_clean(r);

  sluice::Deployment d;
  ASSERT_TRUE(sluice::load_deployment(file, {}, &d).ok());
  sluice::FieldFiller fill(*d.find_schema("prices"));
  struct Row { uint64_t in_seq; int64_t value; double avg; };
  std::vector<Row> want;
  std::vector<int64_t> window;
  int64_t sum = 0;
  for (uint64_t seq = 0; seq < 40000; ++seq) {
    const int64_t v = fill.value(0, seq);
    if (v < 200) continue;
    window.push_back(v);
    sum += v;
    if (window.size() > 50) sum -= window[window.size() - 51];
    const uint64_t n = std::min<uint64_t>(window.size(), 50);
    want.push_back({seq, v, static_cast<double>(sum) / static_cast<double>(n)});
  }
  ASSERT_GT(want.size(), 0u);
  EXPECT_EQ(r.json["filtered"].as<uint64_t>(), 40000u - want.size());
  EXPECT_EQ(r.json["aggregated"].as<uint64_t>(), want.size());
  EXPECT_EQ(r.json["tuples"].as<uint64_t>(), want.size());
  std::string header;
  auto rows = read_rows(results, &header);
  EXPECT_EQ(header, "seq,in_seq,value,avg");
  ASSERT_EQ(rows.size(), want.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 4u) << i;
    EXPECT_EQ(std::stoull(rows[i][0]), i);
    EXPECT_EQ(std::stoull(rows[i][1]), want[i].in_seq) << "row " << i;
    EXPECT_EQ(std::stoll(rows[i][2]), want[i].value) << "row " << i;
    // The CSV prints the shortest text that reads back as the same double.
    EXPECT_EQ(std::strtod(rows[i][3].c_str(), nullptr), want[i].avg) << "row " << i;
  }
}

TEST(PipelineQuery, MovingAverageDeliversEachTuplesAverageAndLosesNothing) {
  moving_through_processes("off", 19200);
}

TEST(PipelineQuery, CacheAwareMovingAverageDeliversTheSameAverages) {
  moving_through_processes("on", 20400);
}

}  // namespace query_test

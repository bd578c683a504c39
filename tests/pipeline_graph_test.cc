// Graphs through real processes: union, split (by stream and by key), copy,
// an encoding and a carrier per link, and the graph examples on each carrier.

#include "tests/pipeline_fixture.h"

namespace {

// ---- graphs: union, split, copy, a different carrier mode per link ------------

const std::string kExamples = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/";

uint64_t sum_over(const YAML::Node& procs, const std::string& role, const char* key) {
  uint64_t n = 0;
  for (const auto& p : procs)
    if (p["role"].as<std::string>() == role) n += p[key].as<uint64_t>();
  return n;
}

TEST(PipelineGraph, UnionOfTwoLoadgensDeliversBothStreamsWhole) {
  RunResult r = deploy("union", 22000, {"tuples=30000", "event_bytes=4096"}, kExamples + "union.yaml");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_TRUE(r.json["ok"].as<bool>());
  EXPECT_EQ(r.json["tuples"].as<uint64_t>(), 60000u);  // 30000 from each generator
  EXPECT_EQ(r.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["corrupt"].as<uint64_t>(), 0u);
  EXPECT_EQ(sum_over(r.json["processes"], "loadgen", "tuples_out"), 60000u);
  const YAML::Node node = r.json["processes"][2];
  EXPECT_EQ(node["name"].as<std::string>(), "node-a");
  EXPECT_EQ(node["tuples_in"].as<uint64_t>(), 60000u);
}

TEST(PipelineGraph, SplitByStreamSendsEachStreamWholeToOneSink) {
  RunResult r = deploy("split", 22400, {"tuples=40000", "event_bytes=4096"}, kExamples + "split.yaml");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_EQ(r.json["tuples"].as<uint64_t>(), 40000u);  // the sinks' counts added up
  EXPECT_EQ(r.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["duplicated"].as<uint64_t>(), 0u);
  // Events go round-robin over 4 streams, stream s to sink s % 2: sink-1 gets
  // the even events. 31 tuples of 128 bytes fit a 4096-byte event, so 40000
  // tuples are 1290 full events and a last one of 10 (event 1290, even).
  uint64_t even = 0;
  for (uint64_t e = 0, left = 40000; left > 0; ++e) {
    const uint64_t n = std::min<uint64_t>(31, left);
    if (e % 2 == 0) even += n;
    left -= n;
  }
  const YAML::Node p = r.json["processes"];
  EXPECT_EQ(p[2]["name"].as<std::string>(), "sink-1");
  EXPECT_EQ(p[2]["tuples_in"].as<uint64_t>(), even);
  EXPECT_EQ(p[3]["tuples_in"].as<uint64_t>(), 40000u - even);
}

// split: key through real processes: loadgen -> node-a (split: key over
// `key`) -> sink-1, sink-2. Every tuple reaches exactly one sink, the one of
// its key's hash; each sink ends with lost = 0, its tuples the other sink's
// partitioned count.
TEST(PipelineGraph, SplitByKeySendsEachTupleToItsKeysSinkOnce) {
  const uint64_t kTuples = 30000;
  std::string dir = scratch("split-key-in");
  std::string file = dir + "/split_key.yaml";
  {
    std::ifstream in(kExamples + "split_key.yaml");
    std::ofstream out(file);
    std::string line;
    while (std::getline(in, line)) {
      // Each sink writes what it got (seq, key, value).
      if (line.find("{name: sink-1, role: sink}") != std::string::npos)
        line = "  - {name: sink-1, role: sink, results: " + dir + "/sink-1.csv}";
      if (line.find("{name: sink-2, role: sink}") != std::string::npos)
        line = "  - {name: sink-2, role: sink, results: " + dir + "/sink-2.csv}";
      out << line << "\n";
    }
  }
  // One stream, so a tuple's seq names it; small events, so many are cut.
  RunResult r = deploy("split_key", 21000,
                       {"tuples=" + std::to_string(kTuples), "event_bytes=2048", "streams=1"}, file);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_EQ(r.json["tuples"].as<uint64_t>(), kTuples);  // the sinks' tuples added up
  EXPECT_EQ(r.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["duplicated"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["corrupt"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["filtered"].as<uint64_t>(), 0u);
  const YAML::Node p = r.json["processes"];
  ASSERT_EQ(p.size(), 4u);
  ASSERT_EQ(p[2]["name"].as<std::string>(), "sink-1");
  const uint64_t t1 = p[2]["tuples_in"].as<uint64_t>(), t2 = p[3]["tuples_in"].as<uint64_t>();
  EXPECT_EQ(t1 + t2, kTuples);
  EXPECT_GT(t1, 0u);
  EXPECT_GT(t2, 0u);
  EXPECT_EQ(p[2]["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(p[3]["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(p[2]["partitioned"].as<uint64_t>(), t2);
  EXPECT_EQ(p[3]["partitioned"].as<uint64_t>(), t1);
  EXPECT_EQ(r.json["partitioned"].as<uint64_t>(), kTuples);

  // Each tuple once, at the sink of its key, with the generator's values.
  sluice::Deployment d;
  ASSERT_TRUE(sluice::load_deployment(file, {}, &d).ok());
  sluice::FieldFiller fill(*d.find_schema("keyed"));
  std::vector<int> where(kTuples, -1);
  for (int s = 0; s < 2; ++s) {
    std::ifstream in(dir + "/sink-" + std::to_string(s + 1) + ".csv");
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "seq,key,value");
    uint64_t rows = 0;
    while (std::getline(in, line)) {
      uint64_t seq, key;
      int64_t value;
      ASSERT_EQ(std::sscanf(line.c_str(), "%lu,%lu,%ld", &seq, &key, &value), 3) << line;
      ASSERT_LT(seq, kTuples);
      EXPECT_EQ(where[seq], -1) << "seq " << seq << " twice";
      where[seq] = s;
      EXPECT_EQ(static_cast<int64_t>(key), fill.value(0, seq)) << seq;
      EXPECT_EQ(value, fill.value(1, seq)) << seq;
      EXPECT_EQ(sluice::key_link(key, 2), static_cast<uint32_t>(s)) << "key " << key;
      ++rows;
    }
    EXPECT_EQ(rows, s == 0 ? t1 : t2);
  }
  EXPECT_EQ(std::count(where.begin(), where.end(), -1), 0);
}

TEST(PipelineGraph, CopyGivesEverySinkEveryTuple) {
  RunResult r = deploy("copy", 22800, {"tuples=20000", "event_bytes=4096", "processes.1.split=copy"},
                       kExamples + "split.yaml");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const YAML::Node p = r.json["processes"];
  EXPECT_EQ(p[2]["tuples_in"].as<uint64_t>(), 20000u);
  EXPECT_EQ(p[3]["tuples_in"].as<uint64_t>(), 20000u);
  EXPECT_EQ(r.json["lost"].as<uint64_t>(), 0u);
  EXPECT_EQ(r.json["duplicated"].as<uint64_t>(), 0u);
}

TEST(PipelineGraph, EachLinkItsOwnEncoding) {
  // guarantee: none: original's async send queue cannot carry acks.
  RunResult r = deploy("per_link", 23200,
                       {"guarantee=none", "tuples=20000", "event_bytes=4096", "links.0.encoding=copy",
                        "links.1.preset=original", "links.2.encoding=capnp"});
  expect_clean(r, 20000);
}

// One pipeline, three carriers: tcp, libfabric and UCX links side by side.
TEST(PipelineGraph, EachLinkItsOwnCarrier) {
  RunResult r = deploy("per_link_carrier", 24000,
                       {"tuples=20000", "event_bytes=4096", "links.0.transport=fabric",
                        "links.1.transport=ucx", "links.1.ucx_tls=sm"});
  expect_clean(r, 20000);
}

// The graph examples over each message carrier (pipeline.yaml is in the
// cases above): every link of the file on the carrier the case names.
class ExampleOverCarrier
    : public ::testing::TestWithParam<std::tuple<const char*, const char*, const char*, int>> {};

TEST_P(ExampleOverCarrier, DeliversEveryTupleOnce) {
  const auto& [file, preset, knob, port] = GetParam();
  const bool is_union = std::string(file) == "union";
  RunResult r = deploy(std::string(file) + "_" + preset + "_" + knob, port,
                       {std::string("preset=") + preset, knob, "tuples=10000", "event_bytes=8192"},
                       kExamples + file + ".yaml");
  // union: two generators of 10000 each; split: the sinks' counts added up.
  expect_clean(r, is_union ? 20000 : 10000);
}

INSTANTIATE_TEST_SUITE_P(
    Examples, ExampleOverCarrier,
    ::testing::Values(std::make_tuple("union", "fabric-opt", "fabric_provider=tcp", 25000),
                      std::make_tuple("union", "fabric-opt", "fabric_provider=shm", 25050),
                      std::make_tuple("union", "ucx-opt", "ucx_tls=tcp", 25100),
                      std::make_tuple("union", "ucx-opt", "ucx_tls=sm", 25150),
                      std::make_tuple("split", "fabric-opt", "fabric_provider=tcp", 25200),
                      std::make_tuple("split", "fabric-opt", "fabric_provider=shm", 25250),
                      std::make_tuple("split", "ucx-opt", "ucx_tls=tcp", 25300),
                      std::make_tuple("split", "ucx-opt", "ucx_tls=sm", 25350)),
    [](const auto& info) {
      std::string n = std::string(std::get<0>(info.param)) + "_" + std::get<2>(info.param);
      for (char& c : n)
        if (c == '=' || c == '-') c = '_';
      return n;
    });

}  // namespace

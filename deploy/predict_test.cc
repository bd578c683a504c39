// plan --predict: the cost model's arithmetic on a calibration written by
// hand, every expected number worked out in the comments.
#include "deploy/predict.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace sluice {
namespace {

// Costs in cycles; 2 cores at 2 GHz, tcp-opt pipelines got 0.8 of them.
const char* kCalibration = R"({
 "clock_ghz": 2.0, "host_cores": 2, "event_header_bytes": 64,
 "coefficients": {"send_event:tcp-opt": 1000, "recv_event:tcp-opt": 500, "byte:tcp-opt": 0.5,
   "tuple:tcp-opt": 2, "handoff": 100, "op:filter": 4, "gen_tuple": 10, "gen_byte": 0.25,
   "sink_tuple": 20, "sink_byte": 0.125, "op:partition": 6},
 "alpha": {"tcp-opt": 0.8},
 "runs": ["r1", "r2", "r3"]
})";

std::string write_temp(const std::string& name, const std::string& text) {
  // Per process: ctest runs each case in its own process, two at a time,
  // and two cases writing one file made one read it half written.
  std::string path = ::testing::TempDir() + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

Calibration calibration() {
  Calibration cal;
  Status st = load_calibration(write_temp("predict_cal.json", kCalibration), &cal);
  EXPECT_TRUE(st.ok()) << st.message();
  return cal;
}

Deployment deployment(const std::string& yaml, std::vector<std::string> sets = {}) {
  Deployment d;
  Status st = parse_deployment(yaml, "test.yaml", sets, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

const char* kChain = R"(
preset: tcp-opt
tuple_bytes: 128
event_bytes: 32768
processes:
  - {name: gen, role: loadgen}
  - {name: node, role: node, operators: [{filter: {field: key, op: ge, value: 0}}]}
  - {name: sink, role: sink}
)";

TEST(Predict, ChainByHand) {
  Calibration cal = calibration();
  EXPECT_EQ(cal.runs, 3u);
  Prediction p;
  Status st = predict(deployment(kChain), cal, &p);
  ASSERT_TRUE(st.ok()) << st.message();
  // 255 tuples of 128 B per event, 64 + 255 * 128 = 32704 bytes.
  EXPECT_EQ(p.tuples_per_event, 255);
  ASSERT_EQ(p.processes.size(), 3u);
  // gen:  send 1000 + bytes 0.5 * 32704 + tuples 2 * 255 + gen 10 * 255 + 0.25 * 32704 = 28588
  EXPECT_DOUBLE_EQ(p.processes[0].cycles_per_unit, 28588);
  EXPECT_DOUBLE_EQ(p.processes[0].cpe_p, 28588);
  // node: 500 + 1000 + 0.5 * 65408 + 2 * 510 + 2 hand-offs * 100 + filter 4 * 255 = 36444,
  //       over 2 events (in and out): CPE_p 18222
  EXPECT_DOUBLE_EQ(p.processes[1].cycles_per_unit, 36444);
  EXPECT_DOUBLE_EQ(p.processes[1].cpe_p, 18222);
  // sink: 500 + 0.5 * 32704 + 2 * 255 + 20 * 255 + 0.125 * 32704 = 26550
  EXPECT_DOUBLE_EQ(p.processes[2].cycles_per_unit, 26550);
  // events/s = 0.8 * 2 * 2e9 / 91582; tuples/s = that * 255
  EXPECT_DOUBLE_EQ(p.cycles_per_unit, 91582);
  EXPECT_NEAR(p.events_per_s, 34941.364, 1e-3);
  EXPECT_NEAR(p.tuples_per_s, 8910047.83, 1e-2);
  std::string text = prediction_text(deployment(kChain), cal, p);
  EXPECT_NE(text.find("8.91e+06 tuples/s"), std::string::npos) << text;
  EXPECT_NE(text.find("18222"), std::string::npos) << text;
}

TEST(Predict, OneTuplePerEvent) {
  Prediction p;
  ASSERT_TRUE(predict(deployment(kChain, {"event_bytes=0"}), calibration(), &p).ok());
  EXPECT_EQ(p.tuples_per_event, 1);
  // gen: 1000 + 0.5 * 192 + 2 + 10 + 0.25 * 192 = 1156
  EXPECT_DOUBLE_EQ(p.processes[0].cycles_per_unit, 1156);
}

TEST(Predict, UnionDoublesWhatTheSinkSees) {
  // Two loadgens into one node: per loadgen event the node moves 2 in, 2 out,
  // the sink takes 2: cycles 2 * 28588 + 72888 + 53100 = 183164, events/s per
  // loadgen 0.8 * 4e9 / 183164, tuples/s at the sink twice that * 255: the
  // same 8.91 M as the chain, since every cost scales with the flow.
  Deployment d = deployment(R"(
preset: tcp-opt
processes:
  - {name: g1, role: loadgen}
  - {name: g2, role: loadgen}
  - {name: node, role: node, operators: [{filter: {field: key, op: ge, value: 0}}]}
  - {name: sink, role: sink}
links:
  - {from: g1, to: node}
  - {from: g2, to: node}
  - {from: node, to: sink}
)");
  Prediction p;
  Status st = predict(d, calibration(), &p);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_DOUBLE_EQ(p.processes[2].cycles_per_unit, 72888);
  EXPECT_DOUBLE_EQ(p.processes[3].cycles_per_unit, 53100);
  EXPECT_NEAR(p.tuples_per_s, 8910047.83, 1e-2);
}

TEST(Predict, KeySplitRepacksPerOutput) {
  // A key split to two sinks: each sink gets one event per input event with
  // half its 255 tuples, 64 + 127.5 * 128 = 16384 bytes:
  //   sink: 500 + 0.5 * 16384 + 2 * 127.5 + 20 * 127.5 + 0.125 * 16384 = 13545
  //   node: in 1 event, 255 tuples, 32704 B; out 2 events, 255 tuples, 32768 B:
  //         2 * 1000 + 500 + 0.5 * 65472 + 2 * 510 + 2 * 100 + partition 6 * 255 = 37986,
  //         over 3 events: 12662
  Deployment d = deployment(R"(
preset: tcp-opt
processes:
  - {name: gen, role: loadgen}
  - {name: node, role: node, split: key, split_key: key}
  - {name: s1, role: sink}
  - {name: s2, role: sink}
links:
  - {from: gen, to: node}
  - {from: node, to: s1}
  - {from: node, to: s2}
)");
  Prediction p;
  Status st = predict(d, calibration(), &p);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(p.key_split);
  EXPECT_DOUBLE_EQ(p.processes[1].cycles_per_unit, 37986);
  EXPECT_DOUBLE_EQ(p.processes[1].cpe_p, 12662);
  EXPECT_DOUBLE_EQ(p.processes[2].cycles_per_unit, 13545);
  EXPECT_DOUBLE_EQ(p.processes[3].cycles_per_unit, 13545);
  // 255 tuples reach the sinks per loadgen event: 0.8 * 4e9 / (28588 + 37986 + 2 * 13545) * 255.
  EXPECT_NEAR(p.tuples_per_s, 0.8 * 4e9 / 93664 * 255, 1e-6);
}

TEST(Predict, SaysWhatTheCalibrationLacks) {
  Prediction p;
  // ucx-opt's ucx_tls: auto is shared memory with every process on one host.
  Status st = predict(deployment(kChain, {"preset=ucx-opt"}), calibration(), &p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("carrier ucx-opt/sm is not in calibration"), std::string::npos)
      << st.message();
  st = predict(deployment(kChain, {"preset=ucx-opt", "ucx_tls=tcp"}), calibration(), &p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("carrier ucx-opt is not in calibration"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("tcp-opt"), std::string::npos) << st.message();

  st = predict(deployment(R"(
processes:
  - {name: gen, role: loadgen}
  - {name: node, role: node, operators: [{groupby: {group_by: key, aggregates: count, window: count, size: 10}}]}
  - {name: sink, role: sink}
)"),
               calibration(), &p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no cost for op:groupby"), std::string::npos) << st.message();
}

TEST(Predict, BadCalibrationFiles) {
  Calibration cal;
  Status st = load_calibration(::testing::TempDir() + "no-such-calibration.json", &cal);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no-such-calibration.json: cannot read it"), std::string::npos)
      << st.message();
  st = load_calibration(write_temp("not_cal.json", R"({"clock_ghz": 2})"), &cal);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not a cost model calibration"), std::string::npos) << st.message();
  st = load_calibration(
      write_temp("bad_cal.json", R"({"clock_ghz": 2, "host_cores": 2, "coefficients": {"x": "lots"}, "alpha": {}})"),
      &cal);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not a number"), std::string::npos) << st.message();
}

TEST(Predict, TheCommittedCalibrationLoads) {
  // experiments/calibration.json, written by reproduce.py: the file plan
  // --predict reads by default must parse and know tcp-opt.
  Calibration cal;
  Status st = load_calibration(std::string(SLUICE_SOURCE_DIR) + "/experiments/calibration.json", &cal);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(cal.alpha.count("tcp-opt"));
  Prediction p;
  st = predict(deployment(kChain), cal, &p);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_GT(p.tuples_per_s, 0);
}

}  // namespace
}  // namespace sluice

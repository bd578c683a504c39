// The resolved file written back (dump) parses to the same deployment; the
// shipped example pipeline parses to what the README says.

#include "graph/config_test_util.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Config, DumpRoundTrip) {
  // Every key away from its default (and the preset's), so a key the dump
  // forgot would show.
  std::string y = R"(preset: original
transport: tcp
encoding: copy
send_queue: sync
rx_poll: block
read_bytes: 8192
poll_timeout_us: 250
congestion: cubic
slot_bytes: 131072
slots: 16
credit_batch: 3
connect_timeout_ms: 2500
token: "a \"quoted\": token"
schema: my.schema
tuple_bytes: 96
event_bytes: 65536
data_bytes: 1024
duration_s: 2.75
tuples: 123456789
rate: 1000.5
burst_events: 10
burst_ms: 0.3
streams: 4
instances: 2
wait: spin
ring_slots: 256
loadgen_slots: 512
loadgen_backup: slots
clock_ghz: 3.1
peak_watts: 95.25
progress_s: 0.5
base_port: 21000
host: 10.9.9.9
processes:
  - {name: gen, role: loadgen, cores: 0.5, port: 22000}
  - name: mid
    role: node
    host: null.example
    operators:
      - filter: {field: seq, op: lt, value: 18446744073709551615}
      - filter: {field: key, op: ne, value: 5}
  - {name: "null", role: node}
  - {name: end, role: sink, host: 10.9.9.10}
)";
  Deployment a = parse_ok(y);
  EXPECT_EQ(a.link.token, "a \"quoted\": token");
  EXPECT_EQ(a.processes[2].name, "null");
  std::string text = dump_deployment(a);
  Deployment b = parse_ok(text);
  expect_same(a, b);
  expect_same_links(a, b);
  EXPECT_FALSE(b.chain);  // the dump lists the chain's links
  EXPECT_EQ(dump_deployment(b), text);

  // And the defaults.
  Deployment c = parse_ok(kChain);
  Deployment c2 = parse_ok(dump_deployment(c));
  expect_same(c, c2);
  EXPECT_EQ(c2.link.tcp.congestion, "");
}

// A fabric or ucx link's control connection is TCP and takes the keepalive
// too: the key is read on every carrier, said without a warning, and kept
// in the file the processes read (which left it out as a tcp key, so the
// processes ran with the default whatever the file said).
TEST(Config, TcpKeepaliveReachesFabricAndUcxLinks) {
  for (const char* t : {"fabric", "ucx"}) {
    Deployment a = parse_ok(std::string("tcp_keepalive_s: 0\ntransport: ") + t + "\n" + kChain);
    EXPECT_TRUE(a.warnings.empty()) << t << ": " << a.warnings[0];
    ASSERT_FALSE(a.links.empty());
    EXPECT_EQ(a.links[0].options.tcp.keepalive_s, 0u) << t;
    Deployment b = parse_ok(dump_deployment(a));
    EXPECT_EQ(b.links[0].options.tcp.keepalive_s, 0u) << t << ":\n" << dump_deployment(a);
  }
}

TEST(Config, ExamplePipelineParses) {
  Deployment d;
  Status st = load_deployment(SLUICE_SOURCE_DIR "/deploy/examples/pipeline.yaml", {}, &d);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(d.preset, "tcp-opt");
  EXPECT_EQ(d.link.tcp.encoding, Encoding::kSg);
  EXPECT_EQ(d.link.tcp.congestion, "reno");
  EXPECT_EQ(d.tuple_bytes, 128u);
  EXPECT_EQ(d.event_bytes, 32768u);
  EXPECT_EQ(d.duration_s, 5);
  EXPECT_EQ(d.instances, 1u);
  ASSERT_EQ(d.processes.size(), 4u);
  EXPECT_EQ(d.processes[0].role, Role::kLoadgen);
  EXPECT_EQ(d.processes[1].name, "node-a");
  ASSERT_EQ(d.processes[1].operators.size(), 1u);
  EXPECT_EQ(d.processes[1].operators[0].kind, "filter");
  EXPECT_EQ(d.processes[1].operators[0].get("field"), "key");
  EXPECT_EQ(d.processes[1].operators[0].get("op"), "ge");
  EXPECT_EQ(d.processes[1].operators[0].get("value"), "0");
  EXPECT_EQ(d.processes[2].name, "node-b");
  EXPECT_EQ(d.processes[3].role, Role::kSink);
  // And with the README's variation.
  st = load_deployment(SLUICE_SOURCE_DIR "/deploy/examples/pipeline.yaml",
                       {"preset=original", "tuple_bytes=64"}, &d);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(d.link.tcp.encoding, Encoding::kCapnp);
}

}  // namespace
}  // namespace sluice

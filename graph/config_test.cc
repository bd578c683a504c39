#include "graph/config.h"
#include "graph/operator.h"

#include <gtest/gtest.h>

#include <thread>

namespace sluice {
namespace {

// A minimal valid deployment; tests append keys above `processes`.
const char* kChain = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: sink, role: sink}
)";

Deployment parse_ok(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  Deployment d;
  Status st = parse_deployment(yaml, "test.yaml", sets, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

std::string parse_err(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  Deployment d;
  Status st = parse_deployment(yaml, "test.yaml", sets, &d);
  EXPECT_FALSE(st.ok()) << "expected an error for:\n" << yaml;
  return st.message();
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(Config, DefaultsAreTheStructInitializers) {
  Deployment d = parse_ok(kChain);
  Deployment def;
  EXPECT_EQ(d.preset, "tcp-opt");
  EXPECT_EQ(d.tuple_bytes, def.tuple_bytes);
  EXPECT_EQ(d.event_bytes, def.event_bytes);
  EXPECT_EQ(d.duration_s, def.duration_s);
  EXPECT_EQ(d.link.tcp.encoding, Encoding::kSg);
  EXPECT_FALSE(d.link.tcp.async_send);
  EXPECT_EQ(d.link.slot_bytes, LinkOptions().slot_bytes);
  ASSERT_EQ(d.processes.size(), 3u);
  EXPECT_EQ(d.processes[1].name, "node-a");
  EXPECT_EQ(d.processes[1].role, Role::kNode);
  EXPECT_EQ(d.processes[1].host, "127.0.0.1");
  EXPECT_EQ(d.processes[1].source_line, "test.yaml:3");
  EXPECT_EQ(d.file, "test.yaml");
}

TEST(Config, PresetOriginal) {
  Deployment d = parse_ok(std::string("preset: original\n") + kChain);
  EXPECT_EQ(d.link.tcp.encoding, Encoding::kCapnp);
  EXPECT_TRUE(d.link.tcp.async_send);
  EXPECT_TRUE(d.link.tcp.rx_select);
  EXPECT_EQ(d.link.tcp.read_bytes, 4096u);
  EXPECT_EQ(d.link.tcp.poll_timeout_us, 1000u);
}

TEST(Config, ApplyPreset) {
  LinkOptions l;
  EXPECT_TRUE(apply_preset("original", &l).ok());
  EXPECT_TRUE(apply_preset("tcp-opt", &l).ok());
  EXPECT_EQ(l.tcp.encoding, Encoding::kSg);
  EXPECT_FALSE(l.tcp.rx_select);
  EXPECT_EQ(l.tcp.read_bytes, 65536u);
  EXPECT_TRUE(apply_preset("fabric-opt", &l).ok());
  EXPECT_EQ(l.transport, "fabric");
  EXPECT_TRUE(apply_preset("ucx-opt", &l).ok());
  EXPECT_EQ(l.transport, "ucx");
  Status st = apply_preset("fast", &l);
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "original, tcp-opt, fabric-opt, ucx-opt");
}

TEST(Config, UnknownPresetNamesLine) {
  std::string e = parse_err(std::string("tuple_bytes: 64\npreset: turbo\n") + kChain);
  EXPECT_HAS(e, "test.yaml:2: key 'preset': unknown preset 'turbo'");
  EXPECT_HAS(e, "tcp-opt");
}

TEST(Config, ExplicitKeyBeatsPresetWhateverTheOrder) {
  // encoding before preset in the file: the preset still comes first.
  Deployment d = parse_ok(std::string("encoding: copy\npreset: original\n") + kChain);
  EXPECT_EQ(d.link.tcp.encoding, Encoding::kCopy);
  EXPECT_TRUE(d.link.tcp.async_send);  // the rest of `original` holds
}

TEST(Config, SetBeatsPresetAndFile) {
  Deployment d = parse_ok(std::string("preset: tcp-opt\nencoding: sg\ntuple_bytes: 64\n") + kChain,
                          {"preset=original", "encoding=copy", "tuple_bytes=256"});
  EXPECT_EQ(d.preset, "original");
  EXPECT_EQ(d.link.tcp.encoding, Encoding::kCopy);
  EXPECT_TRUE(d.link.tcp.async_send);
  EXPECT_EQ(d.tuple_bytes, 256u);
  EXPECT_EQ(d.link.tuple_bytes, 256u);

  // The preset alone from --set, over a file without one.
  Deployment o = parse_ok(kChain, {"preset=original"});
  EXPECT_EQ(o.link.tcp.encoding, Encoding::kCapnp);
  // An explicit file key still beats a preset given by --set.
  Deployment f = parse_ok(std::string("encoding: copy\n") + kChain, {"preset=original"});
  EXPECT_EQ(f.link.tcp.encoding, Encoding::kCopy);
}

TEST(Config, DottedOverrides) {
  Deployment d = parse_ok(kChain, {"processes.1.host=10.0.0.2", "processes.0.cores=1.5",
                                   "processes.2.port=9000", "send_queue=async", "rx_poll=select",
                                   "wait=hybrid", "congestion=bbr"});
  EXPECT_EQ(d.processes[1].host, "10.0.0.2");
  EXPECT_EQ(d.processes[0].cores, 1.5);
  EXPECT_EQ(d.processes[2].port, 9000);
  EXPECT_EQ(d.link_port(1, 3), 9003);  // the link into process 2
  EXPECT_TRUE(d.link.tcp.async_send);
  EXPECT_TRUE(d.link.tcp.rx_select);
  EXPECT_EQ(d.wait, Wait::kHybrid);
  EXPECT_EQ(d.link.wait, Wait::kHybrid);
  EXPECT_EQ(d.link.tcp.congestion, "bbr");
  EXPECT_EQ(d.processes[1].source_line, "test.yaml:3");  // the process itself is the file's
}

TEST(Config, OverrideIntoOperatorsAndWholeValues) {
  std::string y = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, operators: [{filter: {field: key, op: ge, value: 0}}]}
  - {name: sink, role: sink}
)";
  Deployment d = parse_ok(y, {"processes.1.operators.0.filter.value=7",
                              "processes.1.operators.0.filter.op=lt"});
  ASSERT_EQ(d.processes[1].operators.size(), 1u);
  EXPECT_EQ(d.processes[1].operators[0].get("value"), "7");
  EXPECT_EQ(d.processes[1].operators[0].get("op"), "lt");

  Deployment w = parse_ok(y, {"processes.1.operators=[{filter: {field: seq, op: ne, value: 3}}]"});
  EXPECT_EQ(w.processes[1].operators[0].get("field"), "seq");
  std::string e = parse_err(y, {"processes.1.operators=[{filter: {field: seq, op: neq}}]"});
  EXPECT_HAS(e, "--set processes.1.operators=[{filter: {field: seq, op: neq}}]: key "
                "'processes.1.operators.0.filter.op': invalid value 'neq' (allowed: lt|le|gt|ge|eq|ne)");
}

TEST(Config, OverrideErrors) {
  EXPECT_HAS(parse_err(kChain, {"tuple_bytes=abc"}),
             "--set tuple_bytes=abc: expected an unsigned integer, got 'abc'");
  EXPECT_HAS(parse_err(kChain, {"tuple_byte=64"}),
             "--set tuple_byte=64: unknown key 'tuple_byte' (did you mean 'tuple_bytes'?)");
  EXPECT_HAS(parse_err(kChain, {"processes.1.hots=x"}),
             "--set processes.1.hots=x: unknown key 'processes.1.hots' (did you mean 'host'?)");
  EXPECT_HAS(parse_err(kChain, {"processes.7.host=x"}), "'processes' has 3 entries");
  EXPECT_HAS(parse_err(kChain, {"processes.one.host=x"}), "not an index");
  EXPECT_HAS(parse_err(kChain, {"tuple_bytes"}), "--set tuple_bytes: expected key=value");
  EXPECT_HAS(parse_err(kChain, {"encoding=json"}),
             "--set encoding=json: invalid value 'json' (allowed: capnp, copy, sg)");
  EXPECT_HAS(parse_err(kChain, {"tuple_bytes=8"}), "--set tuple_bytes=8: must be at least 12");
  EXPECT_HAS(parse_err(kChain, {"processes.2.role=node"}),
             "process 'sink' (role node) has no downstream link (with no links:, the processes form a chain");
  EXPECT_HAS(parse_err(kChain, {"tuple_bytes=[1"}), "--set tuple_bytes=[1: the value is not valid YAML");
}

TEST(Config, UnknownKeyWithSuggestion) {
  std::string e = parse_err(std::string("preset: tcp-opt\ntuple_byte: 64\n") + kChain);
  EXPECT_HAS(e, "test.yaml:2: unknown key 'tuple_byte' (did you mean 'tuple_bytes'?)");
  e = parse_err(std::string("zzzzzzz: 1\n") + kChain);
  EXPECT_HAS(e, "test.yaml:1: unknown key 'zzzzzzz'");
  EXPECT_EQ(e.find("did you mean"), std::string::npos);
  e = parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - name: node-a
    role: node
    cors: 2
  - {name: sink, role: sink}
)");
  EXPECT_HAS(e, "test.yaml:5: unknown key 'processes.1.cors' (did you mean 'cores'?)");
}

TEST(Config, WrongType) {
  std::string y = std::string("preset: tcp-opt\nslots: 8\nduration_s: 2\ntuple_bytes: abc\n") + kChain;
  EXPECT_HAS(parse_err(y), "test.yaml:4: key 'tuple_bytes': expected an unsigned integer, got 'abc'");
  EXPECT_HAS(parse_err(std::string("tuple_bytes: -5\n") + kChain), "got '-5'");
  EXPECT_HAS(parse_err(std::string("tuple_bytes: 1.5\n") + kChain), "got '1.5'");
  EXPECT_HAS(parse_err(std::string("tuple_bytes: [1]\n") + kChain), "got a list");
  EXPECT_HAS(parse_err(std::string("base_port: 70000\n") + kChain),
             "test.yaml:1: key 'base_port': 70000 is out of range (at most 65535)");
  EXPECT_HAS(parse_err(std::string("duration_s: soon\n") + kChain),
             "test.yaml:1: key 'duration_s': expected a number, got 'soon'");
  EXPECT_HAS(parse_err(std::string("rate: -1\n") + kChain), "key 'rate': must not be negative");
  EXPECT_HAS(parse_err(std::string("processes: {a: 1}\n")), "key 'processes': expected a list");
  EXPECT_HAS(parse_err(std::string("- a\n- b\n")), "test.yaml:1: a deployment is a map of keys");
}

TEST(Config, InvalidEnum) {
  EXPECT_HAS(parse_err(std::string("\nwait: sleepy\n") + kChain),
             "test.yaml:2: key 'wait': invalid value 'sleepy' (allowed: block, spin, hybrid)");
  EXPECT_HAS(parse_err(std::string("send_queue: maybe\n") + kChain), "(allowed: sync, async)");
  EXPECT_HAS(parse_err(std::string("rx_poll: epoll\n") + kChain), "(allowed: block, select)");
  EXPECT_HAS(parse_err(std::string("congestion: vegas\n") + kChain),
             "(allowed: , default, reno, cubic, bbr)");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: relay}
  - {name: sink, role: sink}
)"),
             "test.yaml:3: key 'processes.1.role': invalid value 'relay' (allowed: loadgen, node, sink)");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - name: node-a
    role: node
    operators:
      - filter: {field: key, op: ge, value: 0}
      - filter: {field: when, op: ge, value: 0}
  - {name: sink, role: sink}
)"),
             "test.yaml:7: key 'processes.1.operators.1.filter.field': process 'node-a', operator 1 "
             "(filter): no field 'when' in schema default (fields: seq, key)");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, operators: [{map: {}}]}
  - {name: sink, role: sink}
)"),
             "test.yaml:3: unknown key 'processes.1.operators.0.map'");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, operators: [{filter: {}, map: {}}]}
  - {name: sink, role: sink}
)"),
             "exactly one key");
}

TEST(Config, MissingRequired) {
  EXPECT_HAS(parse_err("\n\npreset: tcp-opt\n"), "test.yaml:3: missing required key 'processes'");
  EXPECT_HAS(parse_err(""), "missing required key 'processes'");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - role: node
    host: 127.0.0.1
  - {name: sink, role: sink}
)"),
             "test.yaml:3: processes.1: missing required key 'name'");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a}
  - {name: sink, role: sink}
)"),
             "test.yaml:3: processes.1 ('node-a'): missing required key 'role'");
}

TEST(Config, DuplicateNamesAndKeys) {
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: node-a, role: node}
  - {name: sink, role: sink}
)"),
             "test.yaml:4: duplicate process name 'node-a' (first at test.yaml:3)");
  EXPECT_HAS(parse_err(std::string("slots: 4\nslots: 8\n") + kChain),
             "test.yaml:2: key 'slots' given twice (first at test.yaml:1)");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: "node a", role: node}
  - {name: sink, role: sink}
)"),
             "may hold only letters");
}

TEST(Config, Chain) {
  EXPECT_HAS(parse_err(R"(processes:
  - {name: node-a, role: node}
  - {name: sink, role: sink}
)"),
             "test.yaml:2: process 'node-a' (role node) has no upstream link (with no links:, the "
             "processes form a chain in the order listed: loadgen, node..., sink)");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: l2, role: loadgen}
  - {name: sink, role: sink}
)"),
             "test.yaml:3: process 'l2': 'l2' is a loadgen; a loadgen has no upstream (with no links:");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: sink, role: sink}
  - {name: node-a, role: node}
)"),
             "test.yaml:3: process 'sink': 'sink' is a sink; a sink has no downstream (with no links:");
  EXPECT_HAS(parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
)"),
             "test.yaml:3: process 'node-a' (role node) has no downstream link");
  EXPECT_HAS(parse_err("processes:\n  - {name: sink, role: sink}\n"),
             "test.yaml:1: key 'processes': a pipeline needs at least a loadgen and a sink");
  // Loadgen straight into sink is a valid chain.
  parse_ok("processes:\n  - {name: l, role: loadgen}\n  - {name: s, role: sink}\n");
}

TEST(Config, RangeChecks) {
  EXPECT_HAS(parse_err(std::string("\ntuple_bytes: 11\n") + kChain),
             "test.yaml:2: key 'tuple_bytes': must be at least 12");
  parse_ok(std::string("tuple_bytes: 12\n") + kChain);
  EXPECT_HAS(parse_err(std::string("slots: 0\n") + kChain),
             "test.yaml:1: key 'slots': link 0 (loadgen -> node-a): must be at least 1");
  EXPECT_HAS(parse_err(std::string("ring_slots: 1000\n") + kChain),
             "test.yaml:1: key 'ring_slots': must be a power of two >= 2, got 1000");
  EXPECT_HAS(parse_err(std::string("ring_slots: 1\n") + kChain), "power of two");
  EXPECT_HAS(parse_err(std::string("instances: 0\n") + kChain),
             "test.yaml:1: key 'instances': must be at least 1");
  EXPECT_HAS(parse_err(std::string("streams: 0\n") + kChain), "key 'streams': must be 1..256, got 0");
  EXPECT_HAS(parse_err(std::string("streams: 257\n") + kChain), "key 'streams': must be 1..256, got 257");
  parse_ok(std::string("streams: 256\n") + kChain);
  EXPECT_HAS(parse_err(std::string("duration_s: 0\n") + kChain),
             "test.yaml:1: key 'duration_s': the load generator needs duration_s > 0 or tuples > 0");
  parse_ok(std::string("duration_s: 0\ntuples: 1000\n") + kChain);
  EXPECT_HAS(parse_err(std::string("base_port: 65500\ninstances: 2\n") + kChain),
             "beyond 65535");
  EXPECT_HAS(parse_err(std::string("instances: 101\n") + kChain),
             "test.yaml:5: process 'sink': link 0 (loadgen -> node-a, instance 100, at test.yaml:4) "
             "and link 1 (node-a -> sink, instance 0) would both listen on 127.0.0.1:17300");
}

TEST(Config, EventMustFitSlot) {
  // 32768-byte events fit the default 65536-byte slot...
  parse_ok(std::string("event_bytes: 32768\n") + kChain);
  // ...and exactly: 64 + 511*128 = 65472, + 16 = 65488 <= 65536.
  parse_ok(std::string("event_bytes: 65536\n") + kChain);
  std::string e = parse_err(std::string("slot_bytes: 65536\nevent_bytes: 131072\n") + kChain);
  EXPECT_HAS(e, "test.yaml:2: key 'event_bytes': an event does not fit a slot");
  EXPECT_HAS(e, "slot_bytes 65536");
  // Boundary: 64 + 2*128 = 320 bytes of event + 16 of frame = 336.
  parse_ok(std::string("event_bytes: 320\nslot_bytes: 336\n") + kChain);
  e = parse_err(std::string("event_bytes: 320\nslot_bytes: 335\n") + kChain);
  EXPECT_HAS(e, "test.yaml:1: key 'event_bytes'");
  // Only slot_bytes given: the error points at it.
  e = parse_err(std::string("preset: tcp-opt\nslot_bytes: 1024\n") + kChain);
  EXPECT_HAS(e, "test.yaml:2: key 'slot_bytes': an event does not fit a slot");
  // Array data counts too.
  e = parse_err(std::string("data_bytes: 40000\n") + kChain);
  EXPECT_HAS(e, "test.yaml:1: key 'data_bytes'");
}

TEST(Config, InvalidYaml) {
  std::string e = parse_err("preset: tcp-opt\nprocesses: [\n  {name: a\n");
  EXPECT_HAS(e, "test.yaml:");
  EXPECT_HAS(e, "invalid YAML");
  e = parse_err("preset: tcp-opt\n  tuple_bytes: 12\n bad: [\n");
  EXPECT_HAS(e, "invalid YAML");
}

// An unclosed or mismatched bracket is named at the line that opened it, not
// where the parser gave up (the end of the file, or a later key).
TEST(Config, InvalidYamlNamesTheBracketThatIsNeverClosed) {
  EXPECT_HAS(parse_err("preset: tcp-opt\n"
                       "processes:\n"
                       "  - {name: loadgen, role: loadgen\n"
                       "  - {name: node-a, role: node}\n"
                       "  - {name: sink, role: sink}\n"
                       "duration_s: 5\n"),
             "test.yaml:3: invalid YAML: '{' opened here is never closed (the parser stopped at line ");
  EXPECT_HAS(parse_err("preset: tcp-opt\n"
                       "processes: [\n"
                       "  {name: loadgen, role: loadgen},\n"
                       "  {name: sink, role: sink}\n"
                       "duration_s: 5\n"
                       "tuple_bytes: 64\n"),
             "test.yaml:2: invalid YAML: '[' opened here is never closed");
  // The innermost one, and what it is inside.
  EXPECT_HAS(parse_err("preset: tcp-opt\nprocesses: [\n  {name: a\n"),
             "test.yaml:3: invalid YAML: '{' opened here is never closed, inside the '[' of line 2");
  EXPECT_HAS(parse_err("processes:\n"
                       "  - {name: loadgen, role: loadgen]\n"
                       "  - {name: sink, role: sink}\n"),
             "test.yaml:2: invalid YAML: '{' opened here is closed by ']' on line 2");
  // Brackets in comments, quoted scalars, plain scalars and block scalars
  // are text.
  EXPECT_HAS(parse_err("# a note on [brackets and {braces\n"
                       "token: 'it''s [x'\n"
                       "host: \"a{b\\\"[\"\n"
                       "congestion: a[1]\n"
                       "fabric_provider: |\n"
                       "  text [ with {\n"
                       "processes:\n"
                       "  - {name: loadgen, role: loadgen, host: \"x]\"} # ]\n"
                       "  - [name, sink\n"
                       "  - {name: sink, role: sink}\n"),
             "test.yaml:9: invalid YAML: '[' opened here is never closed");
  // A syntax error that is not a bracket keeps the parser's line.
  std::string e = parse_err("preset: tcp-opt\n  tuple_bytes: 12\nprocesses: [\n");
  EXPECT_HAS(e, "test.yaml:2: invalid YAML: ");
  EXPECT_EQ(e.find("opened here"), std::string::npos) << e;
}

// Two processes given the same port: the error is at the second one's
// `port:` line, and says where the first one's port was given.
TEST(Graph, APortClashNamesThePortLines) {
  const std::string yaml = R"(processes:
  - name: loadgen
    role: loadgen
  - name: node-a
    role: node
    port: 18000
  - name: sink
    role: sink
    port: 18000
)";
  EXPECT_HAS(parse_err(yaml),
             "test.yaml:9: key 'processes.2.port': process 'sink': link 0 (loadgen -> node-a, "
             "instance 0, at test.yaml:6) and link 1 (node-a -> sink, instance 0) would both listen "
             "on 127.0.0.1:18000");
  // The same clash made by --set names the --set.
  const std::string no_port = yaml.substr(0, yaml.rfind("    port: 18000"));
  EXPECT_HAS(parse_err(no_port, {"processes.2.port=18000"}),
             "--set processes.2.port=18000: process 'sink': link 0 (loadgen -> node-a, instance 0, "
             "at test.yaml:6) and link 1");
  // A port that clashes with one from base_port: the first is its process.
  EXPECT_HAS(parse_err("processes:\n  - {name: loadgen, role: loadgen}\n"
                       "  - {name: node-a, role: node}\n"
                       "  - name: sink\n    role: sink\n    port: 17200\n"),
             "test.yaml:6: key 'processes.2.port': process 'sink': link 0 (loadgen -> node-a, "
             "instance 0, at test.yaml:3) and link 1 (node-a -> sink, instance 0) would both listen "
             "on 127.0.0.1:17200");
  // Beyond 65535 with instances: the process's port line too.
  EXPECT_HAS(parse_err("instances: 2\nprocesses:\n  - {name: loadgen, role: loadgen}\n"
                       "  - name: sink\n    role: sink\n    port: 65535\n"),
             "test.yaml:6: key 'processes.1.port': process 'sink': link 0 (loadgen -> sink, "
             "instance 1) would listen on port 65536");
}

// A wildcard address takes the port on every address of its host: 0.0.0.0:P
// by one process and 127.0.0.1:P by another clash on one machine (the second
// would fail to bind at start), and the error names both processes and lines.
TEST(Graph, AWildcardAndASpecificAddressClashOnOneHost) {
  const std::string yaml = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, listen: 0.0.0.0}
  - {name: sink, role: sink}
links:
  - {from: loadgen, to: node-a, port: 18000}
  - {from: node-a, to: sink, port: 18000}
)";
  EXPECT_HAS(parse_err(yaml),
             "test.yaml:7: key 'links.1.port': process 'node-a' (at test.yaml:3) listens on "
             "0.0.0.0:18000 for link 0 (loadgen -> node-a, instance 0, port at test.yaml:6) and "
             "process 'sink' (at test.yaml:4) on 127.0.0.1:18000 for link 1 (node-a -> sink, "
             "instance 0); a wildcard address takes the port on every address of this machine");
  // The other order: the specific address first.
  EXPECT_HAS(parse_err(yaml, {"processes.1.listen=127.0.0.1", "processes.2.listen=0.0.0.0"}),
             "listens on 127.0.0.1:18000 for link 0");
  // Two specific addresses share a port.
  parse_ok(yaml, {"processes.1.listen=127.0.0.2"});
  // Hosts of their own (netns): 0.0.0.0 on one does not take the other's port.
  const std::string hosts = R"(launcher: netns
hosts: [{name: h1, address: 10.77.0.1}, {name: h2, address: 10.77.0.2}]
processes:
  - {name: loadgen, role: loadgen, host: h1}
  - {name: node-a, role: node, host: h1, listen: 0.0.0.0}
  - {name: sink, role: sink, host: h2, listen: 0.0.0.0}
links:
  - {from: loadgen, to: node-a, port: 18000}
  - {from: node-a, to: sink, port: 18000}
)";
  parse_ok(hosts);
  // ...but on one host they clash.
  EXPECT_HAS(parse_err(hosts, {"processes.2.host=h1", "processes.2.listen=10.77.0.1"}),
             "a wildcard address takes the port on every address of host 'h1'");
}

// A top-level carrier key is the default of the links whose carrier reads
// it; when no link's carrier does, the file says something with no effect:
// a warning naming the key and its line (a link's own such key is an error).
TEST(Graph, ATopLevelKeyNoLinkReadsIsAWarning) {
  const std::string yaml = std::string("transport: fabric\nrx_poll: select\n") + kChain;
  Deployment d = parse_ok(yaml);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0], "test.yaml:2: key 'rx_poll': 'rx_poll' is a tcp option and no link's "
                           "transport is tcp (the links are fabric); it has no effect");
  // Set by --set: the --set is named.
  d = parse_ok(kChain, {"transport=ucx", "congestion=cubic"});
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0], "--set congestion=cubic: 'congestion' is a tcp option and no link's "
                           "transport is tcp (the links are ucx); it has no effect");
  // One link reads it: no warning (the others simply do not use it).
  d = parse_ok(std::string("rx_poll: select\n") + R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: sink, role: sink}
links:
  - {from: loadgen, to: node-a, transport: fabric}
  - {from: node-a, to: sink}
)");
  EXPECT_TRUE(d.warnings.empty()) << d.warnings[0];
  // Keys of every carrier, and a tcp file: none.
  EXPECT_TRUE(parse_ok(std::string("rx_poll: select\nslots: 64\n") + kChain).warnings.empty());
}

TEST(Config, LoadDeploymentMissingFile) {
  Deployment d;
  Status st = load_deployment("/nonexistent/x.yaml", {}, &d);
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "/nonexistent/x.yaml: cannot open");
}

TEST(Config, Helpers) {
  Deployment d = parse_ok(std::string("base_port: 20000\ninstances: 2\ntoken: s3cret\n") + R"(processes:
  - {name: loadgen, role: loadgen, cores: 1}
  - {name: node-a, role: node, host: 10.0.0.5}
  - {name: node-b, role: node, port: 31000}
  - {name: sink, role: sink}
)");
  EXPECT_EQ(d.process_index("node-b"), 2);
  EXPECT_EQ(d.process_index("nope"), -1);
  // A chain keeps the ports of before: the link into process i listens on
  // base_port + 100 * i + instance (or the process's own port + instance).
  EXPECT_EQ(d.link_port(0, 1), 20101);
  EXPECT_EQ(d.link_port(1, 1), 31001);
  EXPECT_EQ(d.link_port(2, 0), 20300);

  LinkOptions l = d.link_options(0, 1);
  EXPECT_EQ(l.host, "10.0.0.5");
  EXPECT_EQ(l.port, 20101);
  EXPECT_EQ(l.from, "loadgen");
  EXPECT_EQ(l.to, "node-a");
  EXPECT_EQ(l.link_id, 0u);
  EXPECT_EQ(l.instance, 1u);
  EXPECT_EQ(l.tuple_bytes, d.tuple_bytes);
  EXPECT_EQ(l.token, "s3cret");

  EXPECT_EQ(d.cores_of(0), 1.0);
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_DOUBLE_EQ(d.cores_of(1), std::max(0.25, double(hw)));          // alone on its host
  EXPECT_DOUBLE_EQ(d.cores_of(2), std::max(0.25, double(hw) / 3));      // 3 on 127.0.0.1
  EXPECT_STREQ(role_name(Role::kLoadgen), "loadgen");
  EXPECT_STREQ(role_name(Role::kNode), "node");
  EXPECT_STREQ(role_name(Role::kSink), "sink");
}

TEST(Config, TopLevelHostIsTheProcessDefault) {
  Deployment d = parse_ok(std::string("host: 10.1.1.1\n") + R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, host: 10.1.1.2}
  - {name: sink, role: sink}
)");
  EXPECT_EQ(d.processes[0].host, "10.1.1.1");
  EXPECT_EQ(d.processes[1].host, "10.1.1.2");
  EXPECT_EQ(d.processes[2].host, "10.1.1.1");
}

TEST(Config, MetricsKeys) {
  Deployment on = parse_ok(kChain);
  EXPECT_TRUE(on.metrics);
  EXPECT_EQ(on.metrics_address, "127.0.0.1");  // loopback unless the file says otherwise
  EXPECT_EQ(on.metrics_port, 0);
  Deployment off = parse_ok(std::string("metrics: off\nmetrics_address: 0.0.0.0\nmetrics_port: 9400\n") + kChain);
  EXPECT_FALSE(off.metrics);
  EXPECT_EQ(off.metrics_address, "0.0.0.0");
  EXPECT_EQ(off.metrics_port, 9400);
  EXPECT_HAS(parse_err(std::string("metrics: yes\n") + kChain), "metrics");
  // Process i serves on metrics_port + i: the last one must fit.
  EXPECT_HAS(parse_err(std::string("metrics_port: 65534\n") + kChain),
             "process 2 ('sink') would serve metrics on port 65536, beyond 65535");
  parse_ok(std::string("metrics_port: 65533\n") + kChain);
  parse_ok(std::string("metrics: off\nmetrics_port: 65534\n") + kChain);
}

TEST(Config, MetricsAddress) {
  Deployment d = parse_ok(std::string("host: 10.1.1.1\n") + kChain);
  EXPECT_EQ(metrics_bind_address(d, d.processes[1]), "127.0.0.1");
  Deployment h = parse_ok(std::string("host: 10.1.1.1\nmetrics_address: host\n") + kChain);
  EXPECT_EQ(metrics_bind_address(h, h.processes[1]), "10.1.1.1");
  Deployment a = parse_ok(std::string("metrics_address: 0.0.0.0\n") + kChain);
  EXPECT_EQ(metrics_bind_address(a, a.processes[0]), "0.0.0.0");
  std::string e = parse_err(std::string("metrics_address: localhost\n") + kChain);
  EXPECT_HAS(e, "test.yaml:1");
  EXPECT_HAS(e, "metrics_address");
  EXPECT_HAS(e, "'localhost'");
}

TEST(Config, RestartKeys) {
  Deployment d = parse_ok(kChain);
  EXPECT_EQ(d.restart, "never");
  EXPECT_EQ(d.restart_limit, 3u);
  EXPECT_EQ(d.restart_backoff_ms, 500u);
  for (const auto& p : d.processes) EXPECT_FALSE(restarts_on_failure(d, p)) << p.name;

  Deployment on = parse_ok(R"(restart: on-failure
restart_limit: 5
restart_backoff_ms: 100
processes:
  - {name: loadgen, role: loadgen, restart: never}
  - {name: node-a, role: node}
  - {name: sink, role: sink}
)");
  EXPECT_EQ(on.restart_limit, 5u);
  EXPECT_EQ(on.restart_backoff_ms, 100u);
  EXPECT_FALSE(restarts_on_failure(on, on.processes[0]));  // its own beats the top level's
  EXPECT_TRUE(restarts_on_failure(on, on.processes[1]));
  EXPECT_TRUE(restarts_on_failure(on, on.processes[2]));

  Deployment one = parse_ok(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, restart: on-failure}
  - {name: sink, role: sink}
)");
  EXPECT_FALSE(restarts_on_failure(one, one.processes[0]));
  EXPECT_TRUE(restarts_on_failure(one, one.processes[1]));

  // A typo'd value names the key and its line.
  std::string e = parse_err(std::string("restart: on-failur\n") + kChain);
  EXPECT_HAS(e, "test.yaml:1");
  EXPECT_HAS(e, "restart");
  EXPECT_HAS(e, "on-failure");
  e = parse_err(R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, restart: always}
  - {name: sink, role: sink}
)");
  EXPECT_HAS(e, "test.yaml:3");
  EXPECT_HAS(e, "restart");
  EXPECT_HAS(e, "always");
  e = parse_err(std::string("restart_limit: -1\n") + kChain);
  EXPECT_HAS(e, "test.yaml:1");
  EXPECT_HAS(e, "restart_limit");
  // The resolved file keeps them.
  Deployment again = parse_ok(dump_deployment(on));
  EXPECT_EQ(again.restart, "on-failure");
  EXPECT_EQ(again.restart_limit, 5u);
  EXPECT_EQ(again.restart_backoff_ms, 100u);
  EXPECT_EQ(again.processes[0].restart, "never");
}

void expect_same(const Deployment& a, const Deployment& b) {
  EXPECT_EQ(a.preset, b.preset);
  EXPECT_EQ(a.link.transport, b.link.transport);
  EXPECT_EQ(a.link.tcp.encoding, b.link.tcp.encoding);
  EXPECT_EQ(a.link.tcp.async_send, b.link.tcp.async_send);
  EXPECT_EQ(a.link.tcp.rx_select, b.link.tcp.rx_select);
  EXPECT_EQ(a.link.tcp.read_bytes, b.link.tcp.read_bytes);
  EXPECT_EQ(a.link.tcp.poll_timeout_us, b.link.tcp.poll_timeout_us);
  EXPECT_EQ(a.link.tcp.congestion, b.link.tcp.congestion);
  EXPECT_EQ(a.link.slot_bytes, b.link.slot_bytes);
  EXPECT_EQ(a.link.slots, b.link.slots);
  EXPECT_EQ(a.link.credit_batch, b.link.credit_batch);
  EXPECT_EQ(a.link.connect_timeout_ms, b.link.connect_timeout_ms);
  EXPECT_EQ(a.link.wait, b.link.wait);
  EXPECT_EQ(a.link.token, b.link.token);
  EXPECT_EQ(a.link.tuple_bytes, b.link.tuple_bytes);
  EXPECT_EQ(a.link.schema, b.link.schema);
  EXPECT_EQ(a.tuple_bytes, b.tuple_bytes);
  EXPECT_EQ(a.event_bytes, b.event_bytes);
  EXPECT_EQ(a.data_bytes, b.data_bytes);
  EXPECT_EQ(a.duration_s, b.duration_s);
  EXPECT_EQ(a.tuples, b.tuples);
  EXPECT_EQ(a.rate, b.rate);
  EXPECT_EQ(a.burst_events, b.burst_events);
  EXPECT_EQ(a.burst_ms, b.burst_ms);
  EXPECT_EQ(a.streams, b.streams);
  EXPECT_EQ(a.instances, b.instances);
  EXPECT_EQ(a.wait, b.wait);
  EXPECT_EQ(a.ring_slots, b.ring_slots);
  EXPECT_EQ(a.loadgen_slots, b.loadgen_slots);
  EXPECT_EQ(a.clock_ghz, b.clock_ghz);
  EXPECT_EQ(a.peak_watts, b.peak_watts);
  EXPECT_EQ(a.progress_s, b.progress_s);
  EXPECT_EQ(a.base_port, b.base_port);
  EXPECT_EQ(a.launcher, b.launcher);
  EXPECT_EQ(a.host_rate_bps, b.host_rate_bps);
  EXPECT_EQ(a.subnet, b.subnet);
  ASSERT_EQ(a.hosts.size(), b.hosts.size());
  for (size_t i = 0; i < a.hosts.size(); ++i) {
    EXPECT_EQ(a.hosts[i].name, b.hosts[i].name);
    EXPECT_EQ(a.hosts[i].address, b.hosts[i].address);
    EXPECT_EQ(a.hosts[i].cpus, b.hosts[i].cpus);
    EXPECT_EQ(a.hosts[i].rate_bps, b.hosts[i].rate_bps);
    EXPECT_EQ(a.hosts[i].ssh_user, b.hosts[i].ssh_user);
    EXPECT_EQ(a.hosts[i].ssh_port, b.hosts[i].ssh_port);
  }
  EXPECT_EQ(a.metrics, b.metrics);
  EXPECT_EQ(a.metrics_address, b.metrics_address);
  EXPECT_EQ(a.metrics_port, b.metrics_port);
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (size_t i = 0; i < a.processes.size(); ++i) {
    const auto &p = a.processes[i], &q = b.processes[i];
    EXPECT_EQ(p.name, q.name);
    EXPECT_EQ(p.role, q.role);
    EXPECT_EQ(p.host, q.host);
    EXPECT_EQ(p.host_name, q.host_name);
    EXPECT_EQ(p.listen, q.listen);
    EXPECT_EQ(p.port, q.port);
    EXPECT_EQ(p.cores, q.cores);
    EXPECT_EQ(p.split, q.split);
    ASSERT_EQ(p.operators.size(), q.operators.size());
    for (size_t j = 0; j < p.operators.size(); ++j) {
      EXPECT_EQ(p.operators[j].kind, q.operators[j].kind);
      EXPECT_EQ(p.operators[j].params, q.operators[j].params);
    }
  }
}

void expect_same_links(const Deployment& a, const Deployment& b) {
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t l = 0; l < a.links.size(); ++l) {
    const LinkOptions x = a.link_options(l, 1), y = b.link_options(l, 1);
    EXPECT_EQ(x.transport, y.transport);
    EXPECT_EQ(x.tcp.encoding, y.tcp.encoding);
    EXPECT_EQ(x.tcp.async_send, y.tcp.async_send);
    EXPECT_EQ(x.tcp.rx_select, y.tcp.rx_select);
    EXPECT_EQ(x.tcp.read_bytes, y.tcp.read_bytes);
    EXPECT_EQ(x.tcp.congestion, y.tcp.congestion);
    EXPECT_EQ(x.tcp.poll_timeout_us, y.tcp.poll_timeout_us);
    EXPECT_EQ(x.connect_timeout_ms, y.connect_timeout_ms);
    EXPECT_EQ(x.link_id, y.link_id);
    EXPECT_EQ(a.links[l].preset, b.links[l].preset);
    EXPECT_EQ(x.slots, y.slots);
    EXPECT_EQ(x.slot_bytes, y.slot_bytes);
    EXPECT_EQ(x.credit_batch, y.credit_batch);
    EXPECT_EQ(x.token, y.token);
    EXPECT_EQ(x.from, y.from);
    EXPECT_EQ(x.to, y.to);
    EXPECT_EQ(x.host, y.host);
    EXPECT_EQ(x.listen, y.listen);
    EXPECT_EQ(x.port, y.port);
  }
}

// ---- the graph ---------------------------------------------------------------

const char* kUnion = R"(streams: 2
processes:
  - {name: gen-1, role: loadgen}
  - {name: gen-2, role: loadgen}
  - {name: node-a, role: node, listen: 0.0.0.0}
  - {name: sink, role: sink}
links:
  - {from: gen-1, to: node-a}
  - {from: gen-2, to: node-a, encoding: copy}
  - {from: node-a, to: sink}
)";

TEST(Graph, UnionAndItsHelpers) {
  Deployment d = parse_ok(kUnion);
  EXPECT_FALSE(d.chain);
  EXPECT_EQ(d.inputs_of(2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(d.outputs_of(2), (std::vector<size_t>{2}));
  EXPECT_EQ(d.first_stream(0), 0u);
  EXPECT_EQ(d.first_stream(1), 2u);  // gen-2's streams follow gen-1's
  EXPECT_EQ(d.streams_into(2), 4u);
  EXPECT_EQ(d.streams_into(3), 4u);
  // Receivers start before their senders.
  std::vector<size_t> order = d.start_order();
  auto at = [&](size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
  EXPECT_LT(at(3), at(2));
  EXPECT_LT(at(2), at(0));
  EXPECT_LT(at(2), at(1));
  // The node's two inputs listen on its first port and the next.
  EXPECT_EQ(d.link_port(0, 0), 17300);
  EXPECT_EQ(d.link_port(1, 0), 17301);
  LinkOptions o = d.link_options(1, 0);
  EXPECT_EQ(o.tcp.encoding, Encoding::kCopy);
  EXPECT_EQ(d.link_options(0, 0).tcp.encoding, Encoding::kSg);
  EXPECT_EQ(o.from, "gen-2");
  EXPECT_EQ(o.to, "node-a");
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.bind_address(), "0.0.0.0");
  EXPECT_EQ(o.link_id, 1u);
  std::string g = describe_graph(d);
  EXPECT_HAS(g, "link 1: gen-2 -> node-a  tcp/copy  127.0.0.1:17301");
  EXPECT_HAS(g, "node-a: union of 2 upstreams");
}

TEST(Graph, TheGraphSaysWhichOperatorsEachProcessRuns) {
  Deployment d;
  Status st = load_deployment(std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/esper.yaml", {}, &d);
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string g = describe_graph(d);
  EXPECT_HAS(g, "#   node-a runs: filter\n");
  EXPECT_HAS(g, "#   node-b runs: groupby\n");
  EXPECT_EQ(g.find("loadgen runs"), std::string::npos) << g;
}

TEST(Graph, SplitAndCopy) {
  Deployment d = parse_ok(R"(streams: 4
processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, split: copy}
  - {name: s1, role: sink}
  - {name: s2, role: sink}
links:
  - {from: loadgen, to: node-a}
  - {from: node-a, to: s1}
  - {from: node-a, to: s2, port: 25000}
)");
  EXPECT_EQ(d.processes[1].split, Split::kCopy);
  EXPECT_EQ(d.outputs_of(1), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(d.link_port(2, 1), 25001);
  EXPECT_HAS(describe_graph(d), "node-a: copy to 2 downstreams");
  EXPECT_EQ(parse_ok(R"(processes:
  - {name: l, role: loadgen}
  - {name: s, role: sink}
)").processes[0].split, Split::kStream);
}

TEST(Graph, SplitByKeyNamesANumericFieldOfWhatTheNodeSends) {
  const std::string head = R"(processes:
  - {name: loadgen, role: loadgen}
)";
  const std::string tail = R"(  - {name: s1, role: sink}
  - {name: s2, role: sink}
links:
  - {from: loadgen, to: node-a}
  - {from: node-a, to: s1}
  - {from: node-a, to: s2}
)";
  Deployment d = parse_ok(head + "  - {name: node-a, role: node, split: key, split_key: key}\n" + tail);
  EXPECT_EQ(d.processes[1].split, Split::kKey);
  EXPECT_EQ(d.processes[1].split_key, "key");
  EXPECT_HAS(describe_graph(d), "node-a: split by key key to 2 downstreams");
  EXPECT_EQ(parse_ok(dump_deployment(d)).processes[1].split_key, "key");
  std::string e = parse_err(head + "  - {name: node-a, role: node, split: key, split_key: nope}\n" + tail);
  EXPECT_HAS(e, "test.yaml:3: key 'processes.1.split_key': process 'node-a': 'nope' is no numeric field");
  e = parse_err(head + "  - {name: node-a, role: node, split: key}\n" + tail);
  EXPECT_HAS(e, "test.yaml:3: key 'processes.1.split': process 'node-a': split: key needs split_key");
  e = parse_err(head + "  - {name: node-a, role: node, split_key: key}\n" + tail);
  EXPECT_HAS(e, "key 'processes.1.split_key': process 'node-a': split_key needs split: key");
  // The field is looked up in what the node sends, after its operators.
  e = parse_err("schemas:\n  t: {fields: [{name: k, type: i64}, {name: b, type: bytes, width: 8}]}\n"
                "schema: t\n" + head +
                "  - {name: node-a, role: node, split: key, split_key: b}\n" + tail);
  EXPECT_HAS(e, "'b' is no numeric field of what it sends");
}

TEST(Graph, PrecedenceTopPresetTopKeysLinkPresetLinkKeys) {
  Deployment d = parse_ok(R"(preset: tcp-opt
encoding: copy
slots: 32
processes:
  - {name: l, role: loadgen}
  - {name: n, role: node}
  - {name: s, role: sink}
links:
  - {from: l, to: n}
  - {from: n, to: s, preset: original, read_bytes: 1024}
)");
  LinkOptions a = d.link_options(0, 0), b = d.link_options(1, 0);
  EXPECT_EQ(a.tcp.encoding, Encoding::kCopy);  // top-level key beats the top preset
  EXPECT_EQ(a.slots, 32u);
  EXPECT_EQ(b.tcp.encoding, Encoding::kCapnp);  // the link's preset beats top-level keys
  EXPECT_TRUE(b.tcp.async_send);
  EXPECT_EQ(b.tcp.read_bytes, 1024u);  // the link's own key beats its preset
  EXPECT_EQ(b.slots, 32u);             // a key the link preset does not set stays the top's
}

TEST(Graph, AChainIsTheShorthandOfItsLinks) {
  Deployment chain = parse_ok(kChain);
  Deployment links = parse_ok(std::string(kChain) + "links:\n  - {from: loadgen, to: node-a}\n"
                                                   "  - {from: node-a, to: sink}\n");
  EXPECT_TRUE(chain.chain);
  EXPECT_FALSE(links.chain);
  expect_same(chain, links);
  expect_same_links(chain, links);
}

TEST(Graph, SetReachesTheLinksOfAChainFile) {
  Deployment d = parse_ok(kChain, {"links.1.encoding=capnp", "links.0.slots=8"});
  EXPECT_EQ(d.link_options(1, 0).tcp.encoding, Encoding::kCapnp);
  EXPECT_EQ(d.link_options(0, 0).tcp.encoding, Encoding::kSg);
  EXPECT_EQ(d.link_options(0, 0).slots, 8u);
  // The ports stay the chain's.
  EXPECT_EQ(d.link_port(0, 0), 17200);
  EXPECT_EQ(d.link_port(1, 0), 17300);
  EXPECT_HAS(parse_err(kChain, {"links.2.encoding=copy"}),
             "--set links.2.encoding=copy: 'links' has 2 entries; there is no index 2");
  EXPECT_HAS(parse_err(kChain, {"links.0.encodng=copy"}), "did you mean 'encoding'");
}

TEST(Graph, ErrorsNameFileLineAndKey) {
  const std::string procs = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: node-b, role: node}
  - {name: sink, role: sink}
links:
)";
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: nod-b}\n"),
             "test.yaml:8: key 'links.1.to': no process 'nod-b' (did you mean 'node-b'?)");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: sink}\n"
                               "  - {from: node-b, to: sink}\n"),
             "test.yaml:4: process 'node-b' (role node) has no upstream link");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-b, to: node-a}\n  - {from: node-a, to: sink}\n"),
             "test.yaml:9: key 'links.2': the links form a cycle: node-a -> node-b -> node-a");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-b, to: sink}\n  - {from: sink, to: node-b}\n"),
             "test.yaml:10: key 'links.3.from': 'sink' is a sink; a sink has no downstream");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-b, to: sink}\n  - {from: node-b, to: loadgen}\n"),
             "test.yaml:10: key 'links.3.to': 'loadgen' is a loadgen; a loadgen has no upstream");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-a, to: node-b}\n  - {from: node-b, to: sink}\n"),
             "test.yaml:9: key 'links.2': the link node-a -> node-b is given twice (first at test.yaml:8)");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-b}\n"),
             "test.yaml:9: links.2: missing required key 'to'");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-b, to: sink, transport: fabric, encoding: copy}\n"),
             "test.yaml:9: key 'links.2.encoding': 'encoding' is a tcp option; this link's transport is fabric");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-b, to: sink, slot_bytes: 4096}\n"),
             "test.yaml:9: key 'links.2.slot_bytes': link 2 (node-b -> sink): an event does not fit a slot");
}

TEST(Graph, MoreErrorsNameFileLineAndKey) {
  const std::string procs = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: node-b, role: node}
  - {name: sink, role: sink}
links:
)";
  // A node with no downstream, a sink with no upstream (explicit links).
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-a, to: sink}\n"),
             "test.yaml:4: process 'node-b' (role node) has no downstream link");
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n"
                               "  - {from: node-b, to: node-a}\n"),
             "test.yaml:5: process 'sink' (role sink) has no upstream link");
  // No load generator: two nodes feed each other.
  EXPECT_HAS(parse_err(R"(processes:
  - {name: node-a, role: node}
  - {name: node-b, role: node}
  - {name: sink, role: sink}
links:
  - {from: node-a, to: node-b}
  - {from: node-b, to: node-a}
  - {from: node-b, to: sink}
)"),
             "test.yaml:1: key 'processes': a pipeline needs at least one loadgen and one sink");
  const std::string chain3 = "  - {from: loadgen, to: node-a}\n  - {from: node-a, to: node-b}\n";
  // A tcp option on a link whose transport comes from the link's own preset.
  EXPECT_HAS(parse_err(procs + chain3 + "  - {from: node-b, to: sink, preset: fabric-opt, rx_poll: select}\n"),
             "test.yaml:9: key 'links.2.rx_poll': 'rx_poll' is a tcp option; this link's transport is fabric");
  // ...and on a link made not-tcp by --set.
  EXPECT_HAS(parse_err(procs + chain3 + "  - {from: node-b, to: sink, read_bytes: 4096}\n",
                       {"links.2.transport=ucx"}),
             "test.yaml:9: key 'links.2.read_bytes': 'read_bytes' is a tcp option; this link's transport is ucx");
  // An unknown key of a link.
  EXPECT_HAS(parse_err(procs + chain3 + "  - {from: node-b, to: sink, slotz: 8}\n"),
             "test.yaml:9: unknown key 'links.2.slotz' (did you mean 'slots'?)");
  // Two links on one port: both named, at the line of the port given.
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a, port: 18000}\n"
                               "  - {from: node-a, to: node-b,\n     port: 18000}\n"
                               "  - {from: node-b, to: sink}\n"),
             "test.yaml:9: key 'links.1.port': link 0 (loadgen -> node-a, instance 0, at test.yaml:7) "
             "and link 1 (node-a -> node-b, instance 0) would both listen on 127.0.0.1:18000");
  // Other bind addresses: no clash.
  Deployment d = parse_ok(std::string("instances: 2\n") + R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, listen: 127.0.0.2}
  - {name: sink, role: sink}
links:
  - {from: loadgen, to: node-a, port: 18000}
  - {from: node-a, to: sink, port: 18000}
)");
  EXPECT_EQ(d.link_port(1, 1), 18001);
  // Beyond 65535: the link's own port is named.
  EXPECT_HAS(parse_err(procs + "  - {from: loadgen, to: node-a, port: 65535}\n" +
                           "  - {from: node-a, to: node-b}\n  - {from: node-b, to: sink}\n",
                       {"instances=2"}),
             "test.yaml:7: key 'links.0.port': link 0 (loadgen -> node-a, instance 1) would listen on "
             "port 65536, beyond 65535");
  // The END of the stream on one link's small slot.
  EXPECT_HAS(parse_err(std::string("streams: 100\nevent_bytes: 1024\n") + procs + chain3 +
                       "  - {from: node-b, to: sink, slot_bytes: 2048}\n"),
             "test.yaml:11: key 'links.2.slot_bytes': link 2 (node-b -> sink): the end of the stream "
             "names 100 streams (2408 bytes), more than slot_bytes 2048; raise slot_bytes or lower "
             "streams");
}

TEST(Graph, ErrorsFromSetOnALinkNameTheSet) {
  const std::string links = std::string(kChain) + "links:\n  - {from: loadgen, to: node-a}\n"
                                                  "  - {from: node-a, to: sink}\n";
  for (const std::string& y : {std::string(kChain), links}) {
    EXPECT_HAS(parse_err(y, {"links.1.slot_bytes=1024"}),
               "--set links.1.slot_bytes=1024: link 1 (node-a -> sink): an event does not fit a slot");
    EXPECT_HAS(parse_err(y, {"links.1.port=17200"}),
               "--set links.1.port=17200: link 0 (loadgen -> node-a, instance 0");
    EXPECT_HAS(parse_err(y, {"links.0.slots=0"}),
               "--set links.0.slots=0: link 0 (loadgen -> node-a): must be at least 1");
  }
  // The top level's slot on a chain: the error names the top-level key.
  EXPECT_HAS(parse_err(std::string("slot_bytes: 1024\n") + kChain),
             "test.yaml:1: key 'slot_bytes': an event does not fit a slot");
  // ...and on explicit links too, with the first link that has it.
  EXPECT_HAS(parse_err(kUnion, {"slot_bytes=1024"}),
             "--set slot_bytes=1024: link 0 (gen-1 -> node-a): an event does not fit a slot");
  EXPECT_HAS(parse_err(std::string("event_bytes: 131072\n") + kUnion),
             "test.yaml:1: key 'event_bytes': link 0 (gen-1 -> node-a): an event does not fit a slot");
  EXPECT_HAS(parse_err(kUnion, {"slots=0"}),
             "--set slots=0: link 0 (gen-1 -> node-a): must be at least 1");
}

TEST(Graph, SetOnAChainFileWhateverTheOrder) {
  // The chain's links are written out after the other overrides, so they
  // name the processes as renamed.
  for (const auto& sets : {std::vector<std::string>{"links.0.encoding=copy", "processes.1.name=mid"},
                           std::vector<std::string>{"processes.1.name=mid", "links.0.encoding=copy"}}) {
    Deployment d = parse_ok(kChain, sets);
    ASSERT_EQ(d.links.size(), 2u);
    EXPECT_TRUE(d.chain);
    EXPECT_EQ(d.link_options(0, 0).to, "mid");
    EXPECT_EQ(d.link_options(1, 0).from, "mid");
    EXPECT_EQ(d.link_options(0, 0).tcp.encoding, Encoding::kCopy);
    EXPECT_EQ(d.link_options(1, 0).tcp.encoding, Encoding::kSg);
  }
  // A link's own preset on a chain file, and a key beating it.
  Deployment p = parse_ok(kChain, {"links.1.preset=original", "links.1.encoding=sg"});
  ASSERT_EQ(p.links.size(), 2u);
  EXPECT_EQ(p.links[1].preset, "original");
  EXPECT_TRUE(p.link_options(1, 0).tcp.async_send);
  EXPECT_EQ(p.link_options(1, 0).tcp.encoding, Encoding::kSg);
  EXPECT_FALSE(p.link_options(0, 0).tcp.async_send);
  // Three links: there is no index 5.
  EXPECT_HAS(parse_err(R"(processes:
  - {name: l, role: loadgen}
  - {name: a, role: node}
  - {name: b, role: node}
  - {name: s, role: sink}
)", {"links.5.slots=8"}),
             "--set links.5.slots=8: 'links' has 3 entries; there is no index 5");
}

TEST(Graph, SplitAndDiamondHelpers) {
  // The split example's shape, fed by a union: gen-1, gen-2 -> node-a -> sink-1, sink-2.
  Deployment d = parse_ok(R"(streams: 3
processes:
  - {name: sink-1, role: sink}
  - {name: gen-1, role: loadgen}
  - {name: node-a, role: node}
  - {name: gen-2, role: loadgen}
  - {name: sink-2, role: sink}
links:
  - {from: node-a, to: sink-2}
  - {from: gen-2, to: node-a}
  - {from: node-a, to: sink-1}
  - {from: gen-1, to: node-a}
)");
  EXPECT_EQ(d.inputs_of(2), (std::vector<size_t>{1, 3}));   // file order of the links
  EXPECT_EQ(d.outputs_of(2), (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(d.inputs_of(1).empty());
  EXPECT_TRUE(d.outputs_of(0).empty());
  EXPECT_EQ(d.first_stream(1), 0u);  // file order of the processes
  EXPECT_EQ(d.first_stream(3), 3u);
  EXPECT_EQ(d.streams_into(2), 6u);
  EXPECT_EQ(d.streams_into(0), 6u);
  EXPECT_EQ(d.streams_into(1), 0u);
  // gen-2's link is node-a's first input: node-a's first port; gen-1's the next.
  EXPECT_EQ(d.link_port(1, 0), 17300);
  EXPECT_EQ(d.link_port(3, 0), 17301);
  EXPECT_EQ(d.link_port(2, 0), 17100);
  EXPECT_EQ(d.link_port(0, 0), 17500);
  std::vector<size_t> order = d.start_order();
  ASSERT_EQ(order.size(), 5u);
  auto at = [&](size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
  for (size_t l = 0; l < d.links.size(); ++l) EXPECT_LT(at(d.links[l].to), at(d.links[l].from)) << l;
  EXPECT_HAS(describe_graph(d), "#   node-a: union of 2 upstreams; split by stream to 2 downstreams\n");

  // A diamond: the load generator reaches the sink twice and counts once.
  Deployment m = parse_ok(R"(streams: 2
processes:
  - {name: l, role: loadgen}
  - {name: a, role: node, split: copy}
  - {name: b, role: node}
  - {name: c, role: node}
  - {name: s, role: sink}
links:
  - {from: l, to: a}
  - {from: a, to: b}
  - {from: a, to: c}
  - {from: b, to: s}
  - {from: c, to: s}
)");
  EXPECT_EQ(m.streams_into(4), 2u);
  EXPECT_EQ(m.streams_into(2), 2u);
  EXPECT_EQ(m.link_port(3, 0), 17500);
  EXPECT_EQ(m.link_port(4, 0), 17501);
  order = m.start_order();
  auto mat = [&](size_t i) { return std::find(order.begin(), order.end(), i) - order.begin(); };
  for (size_t l = 0; l < m.links.size(); ++l) EXPECT_LT(mat(m.links[l].to), mat(m.links[l].from)) << l;
  const std::string g = describe_graph(m);
  EXPECT_HAS(g, "#   a: copy to 2 downstreams\n");
  EXPECT_HAS(g, "#   s: union of 2 upstreams\n");
  for (size_t pos = 0, n = 0; pos < g.size(); pos = g.find('\n', pos) + 1, ++n)
    EXPECT_EQ(g.compare(pos, 2, "# "), 0) << "line " << n << " of:\n" << g;
}

TEST(Graph, TheEndMustFitEverySlot) {
  // 256 streams: the END names 256 entries, 6152 bytes.
  EXPECT_HAS(parse_err(std::string("streams: 256\nevent_bytes: 1024\nslot_bytes: 4096\n") + kChain),
             "the end of the stream names 256 streams (6152 bytes), more than slot_bytes 4096");
  EXPECT_HAS(parse_err(kUnion, {"streams=200"}),
             "2 load generators x 200 streams = 400 streams, more than the 256");
}

TEST(Graph, UnionAndSplitRoundTrip) {
  Deployment a = parse_ok(kUnion, {"links.2.slots=16", "links.1.preset=original",
                                   "links.0.port=19000", "processes.2.split=copy",
                                   "metrics=off", "metrics_port=9400"});
  EXPECT_EQ(a.links[1].preset, "original");
  EXPECT_FALSE(a.metrics);
  const std::string text = dump_deployment(a);
  Deployment b = parse_ok(text);
  expect_same(a, b);
  expect_same_links(a, b);
  EXPECT_EQ(b.links[0].port, 19000);
  EXPECT_EQ(b.links[1].options.tcp.encoding, Encoding::kCopy);  // its key, over its preset
  EXPECT_TRUE(b.links[1].options.tcp.async_send);               // its preset
  EXPECT_EQ(dump_deployment(b), text);
}

TEST(Graph, ExampleFilesParse) {
  for (const char* f : {"pipeline.yaml", "union.yaml", "split.yaml", "split_key.yaml"}) {
    Deployment d;
    Status st = load_deployment(std::string(SLUICE_SOURCE_DIR "/deploy/examples/") + f, {}, &d);
    EXPECT_TRUE(st.ok()) << f << ": " << st.message();
  }
}

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

// ---------------------------------------------------------------- hosts

// Four hosts, each process on its own (the study's cluster).
const char* kHosts = R"(launcher: netns
host_rate: 10gbit
hosts:
  - {name: h1, address: 10.77.0.1, cores: 0-1}
  - {name: h2, address: 10.77.0.2, cores: [0, 2-3], rate: 1gbit}
  - name: h3
    address: 10.77.0.3
    ssh_user: me
    ssh_port: 2222
processes:
  - {name: loadgen, role: loadgen, host: h1}
  - {name: node-a, role: node, host: h2}
  - {name: node-b, role: node, host: h2}
  - {name: sink, role: sink, host: h3}
)";

// pin_stages: off by default, on (spread), or CPUs; a CPU its host's cores
// lack is an error at the key; the dump reads back the same.
TEST(ConfigHosts, PinStages) {
  Deployment d = parse_ok(kHosts, {"processes.1.pin_stages=on", "processes.2.pin_stages=[0, 3]"});
  EXPECT_FALSE(d.processes[0].pin_stages);
  EXPECT_TRUE(d.processes[1].pin_stages);
  EXPECT_TRUE(d.processes[1].stage_cpus.empty());
  EXPECT_TRUE(d.processes[2].pin_stages);
  EXPECT_EQ(d.processes[2].stage_cpus, (std::vector<unsigned>{0, 3}));
  Deployment back;
  ASSERT_TRUE(parse_deployment(dump_deployment(d), "dump", {}, &back).ok());
  EXPECT_EQ(back.processes[1].pin_stages, true);
  EXPECT_EQ(back.processes[2].stage_cpus, (std::vector<unsigned>{0, 3}));
  EXPECT_EQ(back.processes[3].pin_stages, false);
  EXPECT_HAS(parse_err(kHosts, {"processes.2.pin_stages=1"}),
             "CPU 1 is not one of its host 'h2''s cores (0,2-3)");
  EXPECT_HAS(parse_err(kHosts, {"processes.0.pin_stages=sometimes"}),
             "--set processes.0.pin_stages=sometimes: expected off, on");
}

TEST(ConfigHosts, ProcessesNameTheirHostAndAreReachedAtItsAddress) {
  Deployment d = parse_ok(kHosts);
  EXPECT_EQ(d.launcher, "netns");
  ASSERT_EQ(d.hosts.size(), 3u);
  EXPECT_EQ(d.hosts[0].cpus, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(d.hosts[1].cpus, (std::vector<unsigned>{0, 2, 3}));
  EXPECT_EQ(d.hosts[0].rate_bps, 10'000'000'000u);  // host_rate
  EXPECT_EQ(d.hosts[1].rate_bps, 1'000'000'000u);   // its own
  EXPECT_EQ(d.hosts[2].ssh_user, "me");
  EXPECT_EQ(d.hosts[2].ssh_port, 2222);
  EXPECT_EQ(d.processes[1].host_name, "h2");
  EXPECT_EQ(d.processes[1].host, "10.77.0.2");
  EXPECT_EQ(d.processes[1].bind_address(), "10.77.0.2");
  EXPECT_EQ(d.host_of(3)->name, "h3");
  EXPECT_EQ(d.link_options(0, 0).host, "10.77.0.2");  // loadgen connects to node-a's host
  EXPECT_EQ(d.link_options(2, 0).host, "10.77.0.3");
}

TEST(ConfigHosts, CoresAreCountedPerHost) {
  Deployment d = parse_ok(kHosts);
  EXPECT_DOUBLE_EQ(d.cores_of(0), 2.0);  // h1 pins to 2 CPUs, one process on it
  EXPECT_DOUBLE_EQ(d.cores_of(1), 1.5);  // h2: 3 CPUs, two processes
  EXPECT_DOUBLE_EQ(d.cores_of(2), 1.5);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_DOUBLE_EQ(d.cores_of(3), std::max(0.25, double(hw)));  // h3: not pinned, alone
}

TEST(ConfigHosts, DumpParsesToTheSame) {
  Deployment d = parse_ok(kHosts);
  Deployment again = parse_ok(dump_deployment(d));
  expect_same(d, again);
  EXPECT_HAS(dump_deployment(d), "host: \"h2\"");
}

TEST(ConfigHosts, FilesWithoutHostsAreAsBefore) {
  Deployment d = parse_ok(kChain);
  EXPECT_TRUE(d.hosts.empty());
  EXPECT_EQ(d.launcher, "local");
  EXPECT_EQ(d.processes[0].host, "127.0.0.1");
  EXPECT_EQ(d.processes[0].host_name, "");
  EXPECT_EQ(d.host_of(0), nullptr);
}

TEST(ConfigHosts, TopLevelHostNamesTheDefaultHost) {
  Deployment d = parse_ok(R"(host: h1
hosts: [{name: h1, address: 10.0.0.1}, {name: h2, address: 10.0.0.2}]
processes:
  - {name: loadgen, role: loadgen}
  - {name: sink, role: sink, host: h2}
)");
  EXPECT_EQ(d.processes[0].host, "10.0.0.1");
  EXPECT_EQ(d.processes[1].host, "10.0.0.2");
}

TEST(ConfigHosts, OverridesReachHosts) {
  Deployment d = parse_ok(kHosts, {"hosts.2.address=10.77.0.9", "processes.3.host=h1",
                                   "launcher=local", "hosts.0.rate=0"});
  EXPECT_EQ(d.hosts[2].address, "10.77.0.9");
  EXPECT_EQ(d.processes[3].host, "10.77.0.1");
  EXPECT_EQ(d.launcher, "local");
  EXPECT_EQ(d.hosts[0].rate_bps, 0u);
  EXPECT_EQ(parse_err(kHosts, {"hosts.0.adress=x"}),
            "--set hosts.0.adress=x: unknown key 'hosts.0.adress' (did you mean 'address'?)");
}

TEST(ConfigHosts, ErrorsNameFileLineAndKey) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string y = kHosts;
    const size_t at = y.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return y.replace(at, from.size(), to);
  };
  // A process naming an unknown host: at its `host` key.
  EXPECT_EQ(parse_err(with("host: h3}", "host: h4}")),
            "test.yaml:14: key 'processes.3.host': process 'sink': no host 'h4' in hosts: (h1, "
            "h2, h3) (did you mean 'h1'?)");
  EXPECT_HAS(parse_err(with("host: h3}", "host: 10.77.0.3}")),
             "(that is the address of 'h3': name the host)");
  // Two hosts with one address: at the second's `address`, naming the first's.
  EXPECT_EQ(parse_err(with("address: 10.77.0.3", "address: 10.77.0.1")),
            "test.yaml:7: key 'hosts.2.address': hosts 'h1' and 'h3' have one address, 10.77.0.1 "
            "(first at test.yaml:4); each host is reached at its own");
  EXPECT_EQ(parse_err(with("name: h3", "name: h1")),
            "test.yaml:6: key 'hosts.2.name': duplicate host name 'h1' (first at test.yaml:4)");
  EXPECT_HAS(parse_err(with("cores: 0-1", "cores: 1-0")), "test.yaml:4: key 'hosts.0.cores': expected the CPUs");
  EXPECT_HAS(parse_err(with("cores: 0-1", "cores: [0, 0]")), "key 'hosts.0.cores'");
  EXPECT_HAS(parse_err(with("rate: 1gbit", "rate: 1gb")),
             "test.yaml:5: key 'hosts.1.rate': expected a rate like 10gbit");
  EXPECT_HAS(parse_err(with("host_rate: 10gbit", "host_rate: fast")),
             "test.yaml:2: key 'host_rate': expected a rate");
  EXPECT_HAS(parse_err(with("launcher: netns", "launcher: sssh")),
             "test.yaml:1: key 'launcher': invalid value 'sssh' (allowed: local, netns, ssh)");
  // The ssh launcher's keys, and their round trip.
  Deployment ssh = parse_ok(with("launcher: netns", "launcher: ssh"),
                            {"ssh_key=/k/id", "ssh_options=-o Port=2 -q", "remote_dir=/opt/sluice",
                             "copy_binaries=on"});
  EXPECT_EQ(ssh.launcher, "ssh");
  EXPECT_EQ(ssh.ssh_options, "-o Port=2 -q");
  EXPECT_TRUE(ssh.copy_binaries);
  Deployment back = parse_ok(dump_deployment(ssh));
  EXPECT_EQ(back.ssh_key, "/k/id");
  EXPECT_EQ(back.ssh_options, "-o Port=2 -q");
  EXPECT_EQ(back.remote_dir, "/opt/sluice");
  EXPECT_TRUE(back.copy_binaries);
  EXPECT_HAS(parse_err(kHosts, {"copy_binaries=yes"}), "copy_binaries");
  EXPECT_HAS(parse_err(with("ssh_port: 2222", "ssh_port: 70000")), "key 'hosts.2.ssh_port'");
  EXPECT_HAS(parse_err(with("{name: h1, address: 10.77.0.1, cores: 0-1}", "{name: h1}")),
             "test.yaml:4: hosts.0 ('h1'): missing required key 'address'");
  EXPECT_HAS(parse_err(with("{name: h1,", "{name: 'h 1',")),
             "key 'hosts.0.name': 'h 1': a host name may hold only");
  EXPECT_HAS(parse_err(std::string("subnet: 10.77.0.0\n") + kHosts),
             "test.yaml:1: key 'subnet': expected an IPv4 subnet a.b.c.d/n");
  // With hosts:, a process that names none.
  EXPECT_HAS(parse_err(with("{name: sink, role: sink, host: h3}", "{name: sink, role: sink}")),
             "test.yaml:14: process 'sink': names no host; with hosts:, every process names one "
             "(h1, h2, h3)");
}

TEST(ConfigHosts, RatesAndCpuLists) {
  uint64_t bps = 0;
  EXPECT_TRUE(parse_rate("10gbit", &bps));
  EXPECT_EQ(bps, 10'000'000'000u);
  EXPECT_TRUE(parse_rate("2.5Gbit", &bps));
  EXPECT_EQ(bps, 2'500'000'000u);
  EXPECT_TRUE(parse_rate("1000000", &bps));
  EXPECT_EQ(bps, 1'000'000u);
  EXPECT_TRUE(parse_rate("0", &bps));
  EXPECT_EQ(bps, 0u);
  for (const char* bad : {"", "10gb", "-1gbit", "gbit", "1bit", "inf"})
    EXPECT_FALSE(parse_rate(bad, &bps)) << bad;
  EXPECT_EQ(rate_name(10'000'000'000u), "10gbit");
  EXPECT_EQ(rate_name(2'500'000'000u), "2500mbit");
  std::vector<unsigned> c;
  EXPECT_TRUE(parse_cpu_list("4,0-2", &c));
  EXPECT_EQ(c, (std::vector<unsigned>{0, 1, 2, 4}));
  EXPECT_EQ(cpu_list_name(c), "0-2,4");
  for (const char* bad : {"", "a", "1-", "3-1", "1,1", "1024", "0,,1"})
    EXPECT_FALSE(parse_cpu_list(bad, &c)) << bad;
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

const char* kSchemaFile = R"(schema: trades
schemas:
  trades:
    fields:
      - {name: sym, type: u32, gen: {uniform: 16}}
      - {name: price, type: i64, gen: {zipf: 100, s: 1.1}}
      - {name: tag, type: bytes, width: 6}
processes:
  - {name: gen, role: loadgen}
  - name: mid
    role: node
    operators:
      - filter: {field: price, op: ge, value: 10}
      - groupby: {group_by: sym, aggregates: 'count, sum(price)', window: count, size: 100}
  - {name: end, role: sink}
)";

TEST(ConfigSchemas, NamedSchemaFlowsThroughOperatorsAndIntoTheHandshake) {
  Deployment d;
  ASSERT_TRUE(parse_deployment(kSchemaFile, "s.yaml", {}, &d).ok());
  ASSERT_EQ(d.schemas.size(), 1u);
  EXPECT_EQ(d.tuple_bytes, 8u + 4 + 8 + 6);
  EXPECT_EQ(d.schemas[0].gens[1].kind, FieldGen::Kind::kZipf);
  EXPECT_EQ(d.schemas[0].gens[2].kind, FieldGen::Kind::kRandom);
  // Link 0 carries trades, link 1 the aggregate's rows.
  EXPECT_EQ(d.link_options(0, 0).schema, "trades{seq:u64,sym:u32,price:i64,tag:bytes[6];tuple_bytes=26}");
  EXPECT_EQ(d.link_options(1, 0).schema, d.processes[1].out_schema.describe());
  EXPECT_EQ(d.link_options(1, 0).tuple_bytes, 40u);
  EXPECT_EQ(d.processes[1].operators[1].derived_stream, 1u);  // after the loadgen's stream 0
  // Dumped and parsed again: the same schema.
  Deployment e;
  ASSERT_TRUE(parse_deployment(dump_deployment(d), "dump", {}, &e).ok()) << dump_deployment(d);
  EXPECT_EQ(e.link_options(0, 0).schema, d.link_options(0, 0).schema);
  EXPECT_EQ(e.schemas[0].gens[1].cardinality, 100u);
}

TEST(ConfigSchemas, ErrorsNameFileLineKeyAndOperator) {
  Deployment d;
  std::string y = kSchemaFile;
  auto err = [&](const std::string& from, const std::string& to) {
    std::string t = y;
    t.replace(t.find(from), from.size(), to);
    Status st = parse_deployment(t, "s.yaml", {}, &d);
    EXPECT_FALSE(st.ok()) << t;
    return st.message();
  };
  EXPECT_HAS(err("type: u32", "type: u31"), "s.yaml:5: key 'schemas.trades.fields.0.type': invalid value 'u31'");
  EXPECT_HAS(err("{uniform: 16}", "{uniformm: 16}"), "did you mean 'uniform'");
  EXPECT_HAS(err("field: price", "field: prise"),
             "s.yaml:13: key 'processes.1.operators.0.filter.field': process 'mid', operator 0 "
             "(filter): no field 'prise' in schema trades");
  EXPECT_HAS(err("size: 100", "sise: 100"),
             "unknown key 'processes.1.operators.1.groupby.sise' (did you mean 'size'?)");
  EXPECT_HAS(err("size: 100", "size: many"),
             "key 'processes.1.operators.1.groupby.size': expected an unsigned integer, got 'many'");
  // After the group-by, the stream is its rows: a filter on price no longer fits.
  EXPECT_HAS(err("size: 100}", "size: 100}\n      - filter: {field: price}"),
             "operator 2 (filter): no field 'price' in schema aggregate");
}

// One group-by operator: `aggregate` is refused with the groupby to write.
TEST(ConfigSchemas, AggregateIsNowGroupBy) {
  std::string y = kSchemaFile;
  const std::string gb = "groupby: {group_by: sym, aggregates: 'count, sum(price)', window: count, size: 100}";
  y.replace(y.find(gb), gb.size(), "aggregate: {group_by: sym, sum: price, window: 100}");
  Deployment d;
  Status st = parse_deployment(y, "s.yaml", {}, &d);
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "s.yaml:14: key 'processes.1.operators.1.aggregate': 'aggregate' is now "
                           "'groupby' (one group-by operator): write {groupby: {group_by: FIELD, "
                           "aggregates: \"count, sum(FIELD)\"");
  EXPECT_EQ(find_operator_spec("aggregate"), nullptr);
}

// Test-only operators are in no shipped program's registry: a test binary
// registers its own, and only then may a deployment name it.
TEST(ConfigSchemas, TestOnlyOperatorsAreRegisteredByTheTestBinary) {
  EXPECT_EQ(find_operator_spec("miscount"), nullptr);
  const std::string y = "processes:\n  - {name: g, role: loadgen}\n"
                        "  - {name: n, role: node, operators: [{passthrough_for_test: {}}]}\n"
                        "  - {name: s, role: sink}\n";
  Deployment d;
  EXPECT_FALSE(parse_deployment(y, "t.yaml", {}, &d).ok());
  OperatorSpec spec{"passthrough_for_test", "test only", {}};
  spec.output = [](const OperatorConfig&, const Schema& in, Schema* out) {
    *out = in;
    return Status();
  };
  ASSERT_TRUE(register_operator(spec));
  EXPECT_FALSE(register_operator(spec));  // once
  Status st = parse_deployment(y, "t.yaml", {}, &d);
  EXPECT_TRUE(st.ok()) << st.message();
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// The query graph's newer operators in a deployment: each key is checked
// against the operator's declaration and each field against the schema
// that reaches it; errors name file:line, the key, the process and the
// operator.
const char* kQueryFile = R"(schema: txns
schemas:
  txns:
    fields:
      - {name: txn, type: u32, gen: {uniform: 16}}
      - {name: event, type: i32, gen: {uniform: 4}}
      - {name: time, type: u64}
      - {name: amount, type: i64, gen: {uniform: 1000}}
processes:
  - {name: gen, role: loadgen}
  - name: mid
    role: node
    operators:
      - OPERATOR
  - {name: end, role: sink}
)";

// The file with one operator at line 14 of process 'mid'.
std::string query_file(const std::string& op) {
  std::string t = kQueryFile;
  t.replace(t.find("OPERATOR"), 8, op);
  return t;
}

const char* kMoving = "moving_avg: {field: amount, window: 8}";
const char* kCorrelate = "correlate: {txn: txn, event: event, time: time, within: 100}";
const char* kGroupBy = "groupby: {group_by: event, aggregates: \"sum(amount), count\", window: count, "
                       "size: 50, having: \"sum(amount) > 10\"}";

// `op` with `from` replaced by `to`, parsed: its error.
std::string query_err(const std::string& op, const std::string& from, const std::string& to) {
  std::string o = op;
  const size_t at = o.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos) return "";
  o.replace(at, from.size(), to);
  Deployment d;
  Status st = parse_deployment(query_file(o), "q.yaml", {}, &d);
  EXPECT_FALSE(st.ok()) << o;
  return st.message();
}

TEST(ConfigOperators, TheQueryFilesParse) {
  for (const char* op : {kMoving, kCorrelate, kGroupBy}) {
    Deployment d;
    Status st = parse_deployment(query_file(op), "q.yaml", {}, &d);
    ASSERT_TRUE(st.ok()) << op << ": " << st.message();
  }
  Deployment d;
  ASSERT_TRUE(parse_deployment(query_file(kMoving), "q.yaml", {}, &d).ok());
  EXPECT_EQ(d.processes[1].out_schema.name(), "moving_avg");  // the node's stream is its rows
}

TEST(ConfigOperators, AnUnknownKeyGetsFileLineOperatorAndDidYouMean) {
  const std::string e = query_err(kCorrelate, "within: 100", "withn: 100");
  EXPECT_HAS(e, "q.yaml:14:");
  EXPECT_HAS(e, "processes.1.operators.0.correlate.withn");
  EXPECT_HAS(e, "did you mean 'within'?");
  const std::string m = query_err(kMoving, "window: 8", "windo: 8");
  EXPECT_HAS(m, "q.yaml:14:");
  EXPECT_HAS(m, "moving_avg.windo");
  EXPECT_HAS(m, "did you mean 'window'?");
  const std::string g = query_err(kGroupBy, "having:", "havin:");
  EXPECT_HAS(g, "q.yaml:14:");
  EXPECT_HAS(g, "groupby.havin");
  EXPECT_HAS(g, "did you mean 'having'?");
}

TEST(ConfigOperators, AnOperatorKindNotKnownIsNamedWithDidYouMean) {
  const std::string e = query_err(kCorrelate, "correlate:", "corelate:");
  EXPECT_HAS(e, "q.yaml:14:");
  EXPECT_HAS(e, "corelate");
  EXPECT_HAS(e, "did you mean 'correlate'?");
}

TEST(ConfigOperators, AFieldNotInTheInputSchemaIsNamed) {
  const std::string m = query_err(kMoving, "field: amount", "field: amout");
  EXPECT_HAS(m, "q.yaml:14:");
  EXPECT_HAS(m, "process 'mid', operator 0 (moving_avg)");
  EXPECT_HAS(m, "'amout'");
  const std::string c = query_err(kCorrelate, "txn: txn,", "txn: tx,");
  EXPECT_HAS(c, "q.yaml:14:");
  EXPECT_HAS(c, "process 'mid', operator 0 (correlate)");
  EXPECT_HAS(c, "'tx'");
  // An aggregate's field, inside its text.
  const std::string g = query_err(kGroupBy, "sum(amount), count", "sum(amont), count");
  EXPECT_HAS(g, "q.yaml:14:");
  EXPECT_HAS(g, "process 'mid', operator 0 (groupby)");
  EXPECT_HAS(g, "amont");
  const std::string p = query_err("project: {fields: \"txn, amount\"}", "amount", "amonut");
  EXPECT_HAS(p, "process 'mid', operator 0 (project)");
  EXPECT_HAS(p, "amonut");
  // The stream after moving_avg is its rows: `amount` is no longer there.
  const std::string after =
      query_err(kMoving, "window: 8}", "window: 8}\n      - filter: {field: amount, op: ge, value: 1}");
  EXPECT_HAS(after, "operator 1 (filter): no field 'amount' in schema moving_avg");
}

TEST(ConfigOperators, AHavingOverAnAggregateNotListedIsRefused) {
  const std::string e = query_err(kGroupBy, "having: \"sum(amount) > 10\"", "having: \"max(amount) > 10\"");
  EXPECT_HAS(e, "q.yaml:14:");
  EXPECT_HAS(e, "process 'mid', operator 0 (groupby)");
  EXPECT_HAS(e, "max(amount)");
  // And one over a field that is not there at all.
  EXPECT_HAS(query_err(kGroupBy, "having: \"sum(amount) > 10\"", "having: \"sum(nope) > 10\""), "sum(nope)");
}

}  // namespace
}  // namespace sluice

// Validation of a deployment file: unknown keys, wrong types and values,
// missing and duplicate names, ranges, YAML errors, port clashes, warnings.

#include "graph/config_test_util.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

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
             "test.yaml:3: key 'processes.1.role': invalid value 'relay' (allowed: loadgen, node, sink, publisher, subscriber)");
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
  EXPECT_HAS(parse_err(std::string("tcp_rto_max_ms: 500\n") + kChain),
             "test.yaml:1: key 'tcp_rto_max_ms': link 0 (loadgen -> node-a): 500 is outside 1000-120000");
  EXPECT_HAS(parse_err(std::string("tcp_rto_max_ms: 120001\n") + kChain), "120001 is outside 1000-120000");
  parse_ok(std::string("tcp_rto_max_ms: 0\n") + kChain);
  parse_ok(std::string("tcp_rto_max_ms: 120000\n") + kChain);
  EXPECT_HAS(parse_err(std::string("tcp_keepalive_s: 7201\n") + kChain),
             "test.yaml:1: key 'tcp_keepalive_s': link 0 (loadgen -> node-a): 7201 is beyond 7200");
  parse_ok(std::string("tcp_keepalive_s: 0\n") + kChain);
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

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

const char* const kEsperFile = R"(schema: esper
schemas:
  esper:
    fields:
      - {name: p0, type: i64}
      - {name: p1, type: f64}
      - {name: tag, type: bytes, width: 4}
)";

// kChain with a loadgen that reads a file.
const char* const kFileChain = R"(processes:
  - {name: loadgen, role: loadgen, source: file}
  - {name: node-a, role: node}
  - {name: sink, role: sink}
)";

TEST(ConfigFileSource, KeysReadAndDumpedBack) {
  Deployment d = parse_ok(std::string(kEsperFile) + R"(source_file: /data/in.jsonl
bad_records: reject
source_time_field: p1
source_time_unit: ms
source_speedup: 10
processes:
  - {name: loadgen, role: loadgen, source: file, record_format: jsonl}
  - {name: sink, role: sink, results: out.bin, results_format: binary, results_fields: [p1, seq]}
)");
  EXPECT_EQ(d.processes[0].source, "file");
  EXPECT_EQ(d.source_file, "/data/in.jsonl");
  EXPECT_EQ(d.processes[0].record_format, "jsonl");
  EXPECT_EQ(d.bad_records, "reject");
  EXPECT_EQ(d.source_time_field, "p1");
  EXPECT_EQ(d.source_time_unit, "ms");
  EXPECT_EQ(d.source_speedup, 10);
  EXPECT_EQ(d.processes[1].results_format, "binary");
  EXPECT_EQ(d.processes[1].results_fields, (std::vector<std::string>{"p1", "seq"}));
  const Deployment again = parse_ok(dump_deployment(d));
  EXPECT_EQ(again.source_file, d.source_file);
  EXPECT_EQ(again.processes[0].source, "file");
  EXPECT_EQ(again.processes[0].record_format, "jsonl");
  EXPECT_EQ(again.source_time_field, "p1");
  EXPECT_EQ(again.processes[1].results_fields, d.processes[1].results_fields);
  EXPECT_EQ(again.processes[1].results_format, "binary");
  // --set gives the fields as one string.
  d = parse_ok(std::string(kEsperFile) + "source_file: in.csv\n" + kFileChain,
               {"processes.2.results=r.csv", "processes.2.results_fields=p0, p1"});
  EXPECT_EQ(d.processes[2].results_fields, (std::vector<std::string>{"p0", "p1"}));
}

TEST(ConfigFileSource, WhatAFileSourceCannotDoIsAnError) {
  const std::string base = std::string(kEsperFile);
  EXPECT_HAS(parse_err(base + kFileChain), "process 'loadgen' (source: file): source_file names no file");
  const std::string file = base + "source_file: in.csv\n";
  EXPECT_HAS(parse_err(file + "streams: 2\n" + kFileChain), "a file is one stream per instance, not streams: 2");
  EXPECT_HAS(parse_err(file + "burst_events: 10\nburst_ms: 5\n" + kFileChain), "bursts are the generator's");
  EXPECT_HAS(parse_err(file + "source_time_field: tag\n" + kFileChain), "source_time_field 'tag' is no numeric field");
  EXPECT_HAS(parse_err(file + "source_time_field: nope\n" + kFileChain), "source_time_field 'nope' is no numeric field");
  EXPECT_HAS(parse_err(file + "source_time_field: p0\nrate: 100\n" + kFileChain),
             "a time field and a rate both pace it: give one");
  EXPECT_HAS(parse_err(file + "source_speedup: 0\n" + kFileChain), "source_speedup 0 is not above 0");
  EXPECT_HAS(parse_err(file + kFileChain, {"processes.0.record_format=xml"}),
             "invalid value 'xml' (allowed: csv, jsonl, binary)");
  EXPECT_HAS(parse_err(file + kFileChain, {"processes.2.results=r.csv", "processes.2.results_fields=p0,p2"}),
             "process 'sink': results_fields names 'p2', no field of what it receives (seq, p0, p1, tag)");
  EXPECT_HAS(parse_err(file + kFileChain, {"processes.2.results_format=xml"}), "invalid value 'xml' (allowed: csv, jsonl, binary)");
}

}  // namespace
}  // namespace sluice

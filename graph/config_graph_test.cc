// The query graph in a deployment: union, split and copy, chains and links,
// precedence, errors naming file, line and key, and the example graphs.

#include "graph/config_test_util.h"

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/operator.h"

namespace sluice {
namespace {

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

// restart: on-failure on a process that could not go on once started
// again is refused when the file is read, naming the key given and the key
// to set, not found out at its first death: without acks on its links (its
// death would break its neighbours' links too), or, for a sink or a node
// whose operators keep state, without snapshots (the runtime refuses such
// a restart with the same reason). A load generator and a filter restart
// with acks alone; the default guarantee sets all it takes.
TEST(Graph, ARestartThatCouldNotGoOnIsRefused) {
  const std::string esper = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/esper.yaml";
  auto error_of = [&](const std::vector<std::string>& sets) {
    Deployment d;
    Status st = load_deployment(esper, sets, &d);
    EXPECT_FALSE(st.ok()) << fmt::format("{}", fmt::join(sets, " "));
    return st.message();
  };
  std::string e = error_of({"guarantee=none", "restart=on-failure"});
  EXPECT_HAS(e, "--set restart=on-failure: process 'loadgen' has restart: on-failure, but link 0 "
                "(loadgen -> node-a) has acks: off");
  EXPECT_HAS(e, "set acks: on, or restart: never");
  e = error_of({"guarantee=none", "restart=on-failure", "acks=on"});
  EXPECT_HAS(e, "--set restart=on-failure: process 'node-b' has restart: on-failure, but without "
                "checkpoint_interval_ms operator 0 (groupby) loses its state");
  EXPECT_HAS(e, "set checkpoint_interval_ms");
  e = error_of({"guarantee=none", "acks=on", "processes.3.restart=on-failure"});
  EXPECT_HAS(e, "--set processes.3.restart=on-failure: process 'sink' has restart: on-failure, but "
                "without checkpoint_interval_ms a sink's counts and positions die with its process");
  Deployment d;
  ASSERT_TRUE(load_deployment(esper, {"guarantee=none"}, &d).ok());
  EXPECT_TRUE(restart_loses_state(d, 0).ok());  // loadgen
  EXPECT_TRUE(restart_loses_state(d, 1).ok());  // node-a: a filter keeps nothing
  EXPECT_FALSE(restart_loses_state(d, 2).ok());
  EXPECT_FALSE(restart_loses_state(d, 3).ok());
  Status st = load_deployment(
      esper, {"guarantee=none", "acks=on", "processes.0.restart=on-failure", "processes.1.restart=on-failure"}, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  // The default: every process restarts, and every one can.
  st = load_deployment(esper, {}, &d);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(d.warnings.empty()) << d.warnings[0];
  for (size_t i = 0; i < d.processes.size(); ++i) {
    EXPECT_TRUE(restarts_on_failure(d, d.processes[i])) << i;
    EXPECT_TRUE(restart_loses_state(d, i).ok()) << i;
  }
}

// A sink's snapshots release acknowledgements. Whether anything upstream
// waits on them (runtime/process.cc then snapshots the sink less often
// where nothing does): a node that snapshots its own state does, before
// each snapshot; so does a node that keeps copies (node_backup: copies, a
// union) and a load generator that keeps slots; a load generator that
// keeps headers and a node that only forwards do not.
TEST(Graph, WhetherAnythingUpstreamWaitsForASinksSnapshots) {
  const std::string dir = std::string(SLUICE_SOURCE_DIR) + "/deploy/examples/";
  const std::vector<std::string> acks = {"acks=on", "checkpoint_interval_ms=50"};
  Deployment d;
  ASSERT_TRUE(load_deployment(dir + "pipeline.yaml", acks, &d).ok());
  EXPECT_FALSE(upstream_waits_for_snapshots(d, 3));  // filters that forward, a load generator
  EXPECT_FALSE(upstream_waits_for_snapshots(d, 1));  // node-a: the load generator alone
  std::vector<std::string> copies = acks;
  copies.push_back("node_backup=copies");
  ASSERT_TRUE(load_deployment(dir + "pipeline.yaml", copies, &d).ok());
  EXPECT_TRUE(upstream_waits_for_snapshots(d, 3));
  EXPECT_FALSE(upstream_waits_for_snapshots(d, 1));
  std::vector<std::string> slots = acks;
  slots.push_back("loadgen_backup=slots");
  ASSERT_TRUE(load_deployment(dir + "pipeline.yaml", slots, &d).ok());
  EXPECT_TRUE(upstream_waits_for_snapshots(d, 3)) << "a load generator that keeps its slots";
  ASSERT_TRUE(load_deployment(dir + "esper.yaml", acks, &d).ok());
  EXPECT_TRUE(upstream_waits_for_snapshots(d, 3)) << "node-b's groupby waits before each snapshot";
  EXPECT_FALSE(upstream_waits_for_snapshots(d, 2));  // node-b itself: a filter and a load generator
  d = parse_ok(std::string(kUnion) + "acks: on\n");
  EXPECT_TRUE(upstream_waits_for_snapshots(d, 3)) << "a union keeps copies";
  EXPECT_FALSE(upstream_waits_for_snapshots(d, 2));
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
  // Its links must not meet again: a sink checks a stream on one path.
  e = parse_err(head + "  - {name: node-a, role: node, split: key, split_key: key}\n"
                "  - {name: b, role: node}\n  - {name: c, role: node}\n  - {name: s, role: sink}\n"
                "links:\n  - {from: loadgen, to: node-a}\n  - {from: node-a, to: b}\n"
                "  - {from: node-a, to: c}\n  - {from: b, to: s}\n  - {from: c, to: s}\n");
  EXPECT_HAS(e, "key 'processes.1.split': process 'node-a': split: key sends each key down one of its links, "
                "and the links to 'b' and 'c' meet again at 's'");
  // Unless what is on each path consumes the parts (a group-by): past it go
  // its own derived stream and the accounts of the parts, which add up.
  const std::string by_key = "      - groupby: {group_by: key, aggregates: count}\n";
  parse_ok(head + "  - {name: node-a, role: node, split: key, split_key: key}\n"
           "  - name: b\n    role: node\n    operators:\n" + by_key +
           "  - name: c\n    role: node\n    operators:\n" + by_key + "  - {name: s, role: sink}\n"
           "links:\n  - {from: loadgen, to: node-a}\n  - {from: node-a, to: b}\n"
           "  - {from: node-a, to: c}\n  - {from: b, to: s}\n  - {from: c, to: s}\n");
  // Restarted, a key split needs snapshots: its accounts are state.
  e = parse_err("guarantee: none\nrestart: on-failure\nacks: on\n" + head +
                "  - {name: node-a, role: node, split: key, split_key: key}\n" + tail);
  EXPECT_HAS(e, "key 'processes.1.split': process 'node-a': split: key with restart: on-failure needs "
                "checkpoint_interval_ms");
  e = parse_err("guarantee: none\nacks: on\n" + head +
                "  - {name: node-a, role: node, split: key, split_key: key, restart: on-failure}\n" + tail);
  EXPECT_HAS(e, "needs checkpoint_interval_ms");
  parse_ok("guarantee: none\nrestart: on-failure\nacks: on\ncheckpoint_interval_ms: 100\n" + head +
           "  - {name: node-a, role: node, split: key, split_key: key}\n" + tail);
}

TEST(Graph, PrecedenceTopPresetTopKeysLinkPresetLinkKeys) {
  Deployment d = parse_ok(R"(preset: tcp-opt
guarantee: none
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
             "test.yaml:1: key 'processes': a pipeline needs at least one source (a loadgen or a publisher) "
             "and one end (a sink or a subscriber)");
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
             "it carries is 2408 bytes (8 + 24 x 100 streams), more than slot_bytes 2048; raise "
             "slot_bytes to at least 2408 or lower streams");
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
  Deployment p = parse_ok(kChain, {"guarantee=none", "links.1.preset=original", "links.1.encoding=sg"});
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
  // 256 streams: the END names 256 entries, 6152 bytes, on every link of
  // the chain; the first is named, and the top level's slot_bytes is the key
  // to raise.
  EXPECT_HAS(parse_err(std::string("streams: 256\nevent_bytes: 1024\nslot_bytes: 4096\n") + kChain),
             "test.yaml:3: key 'slot_bytes': link 0 (loadgen -> node-a): the end of the stream it "
             "carries is 6152 bytes (8 + 24 x 256 streams), more than slot_bytes 4096; raise "
             "slot_bytes to at least 6152 or lower streams");
  EXPECT_HAS(parse_err(kUnion, {"streams=200"}),
             "2 load generators x 200 streams = 400 streams, more than the 256");
}

// The END a link carries is what its sender writes (EndOfStream's layouts),
// not only its streams' entries: a key split sends each link every stream
// with the accounts and the partitioned count (8 + 56 x streams), and an
// operator that consumes its input adds its accounts and its derived stream
// (8 + 48 x streams). A split by stream sends each link only its streams.
TEST(Graph, TheEndALinkCarriesIsSizedAsItsSenderWritesIt) {
  const std::string split_key = R"(streams: 100
event_bytes: 1024
slot_bytes: 4096
processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, split: key, split_key: key}
  - {name: sink-1, role: sink}
  - {name: sink-2, role: sink}
links:
  - {from: loadgen, to: node-a}
  - {from: node-a, to: sink-1}
  - {from: node-a, to: sink-2}
)";
  // 8 + 24 x 100 fits 4096; what the key split sends does not.
  EXPECT_HAS(parse_err(split_key),
             "test.yaml:3: key 'slot_bytes': link 1 (node-a -> sink-1): the end of the stream it "
             "carries is 5608 bytes (8 + 56 x 100 streams, each with the accounts of a key split "
             "upstream), more than slot_bytes 4096; raise slot_bytes to at least 5608 or lower "
             "streams");
  parse_ok(split_key, {"slot_bytes=5608"});
  EXPECT_HAS(parse_err(split_key, {"slot_bytes=5607"}), "raise slot_bytes to at least 5608");

  // A split by stream: each sink's link carries half the streams.
  const std::string by_stream = R"(streams: 200
event_bytes: 1024
processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: sink-1, role: sink}
  - {name: sink-2, role: sink}
links:
  - {from: loadgen, to: node-a, slot_bytes: 8192}
  - {from: node-a, to: sink-1, slot_bytes: 2408}
  - {from: node-a, to: sink-2, slot_bytes: 2408}
)";
  parse_ok(by_stream);
  EXPECT_HAS(parse_err(by_stream, {"links.2.slot_bytes=2400"}),
             "--set links.2.slot_bytes=2400: link 2 (node-a -> sink-2): the end of the stream it "
             "carries is 2408 bytes (8 + 24 x 100 streams)");

  // An aggregate: its accounts and its derived stream.
  const std::string aggregate = R"(streams: 100
event_bytes: 1024
processes:
  - {name: loadgen, role: loadgen}
  - name: node-a
    role: node
    operators:
      - groupby: {group_by: key, aggregates: count}
  - {name: sink, role: sink}
links:
  - {from: loadgen, to: node-a, slot_bytes: 8192}
  - {from: node-a, to: sink, slot_bytes: 4096}
)";
  EXPECT_HAS(parse_err(aggregate),
             "test.yaml:12: key 'links.1.slot_bytes': link 1 (node-a -> sink): the end of the "
             "stream it carries is 4856 bytes (8 + 48 x 101 streams, each with the accounts of "
             "operators upstream), more than slot_bytes 4096; raise slot_bytes to at least 4856");
  parse_ok(aggregate, {"links.1.slot_bytes=4856"});
  // The node writes its operators' accounts into END's slot, one of its
  // inputs': that must hold them too.
  EXPECT_HAS(parse_err(aggregate, {"links.0.slot_bytes=4096", "links.1.slot_bytes=8192"}),
             "--set links.0.slot_bytes=4096: process 'node-a': the end of the stream after its "
             "operators is 4856 bytes (8 + 48 x 101 streams, each with the accounts of operators "
             "upstream), more than its slot of 4096 bytes (the largest slot_bytes of its input "
             "links); raise slot_bytes of link 0 (loadgen -> node-a) to at least 4856");
}

TEST(Graph, UnionAndSplitRoundTrip) {
  Deployment a = parse_ok(kUnion, {"guarantee=none", "links.2.slots=16", "links.1.preset=original",
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

// `parallelism`: a process runs as replicas NAME.0..N-1 in its place; a
// link between sides of as many replicas without a key split is one link
// per replica, any other is a link for every pair; a sink keeps 1 unless it
// says otherwise; the result parses back to itself, not expanded again.
TEST(Graph, ParallelismMakesReplicasAndTheirLinks) {
  const std::string kFile = R"(parallelism: 3
processes:
  - {name: gen, role: loadgen}
  - {name: a, role: node}
  - {name: b, role: node, split: key, split_key: key, parallelism: 2}
  - {name: c, role: node, operators: [{groupby: {group_by: key, aggregates: count}}]}
  - {name: s, role: sink}
)";
  Deployment d = parse_ok(kFile);
  std::vector<std::string> names;
  for (const auto& p : d.processes) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"gen.0", "gen.1", "gen.2", "a.0", "a.1", "a.2", "b.0", "b.1",
                                             "c.0", "c.1", "c.2", "s"}));
  std::vector<std::string> links;
  for (const auto& l : d.links) links.push_back(d.processes[l.from].name + ">" + d.processes[l.to].name);
  EXPECT_EQ(links, (std::vector<std::string>{
                       "gen.0>a.0", "gen.1>a.1", "gen.2>a.2",                           // as many: pointwise
                       "a.0>b.0", "a.0>b.1", "a.1>b.0", "a.1>b.1", "a.2>b.0", "a.2>b.1",  // 3 to 2
                       "b.0>c.0", "b.0>c.1", "b.0>c.2", "b.1>c.0", "b.1>c.1", "b.1>c.2",  // by key
                       "c.0>s", "c.1>s", "c.2>s"}));
  EXPECT_FALSE(d.chain);
  // Each load generator replica has streams of its own.
  EXPECT_EQ(d.first_stream(1), d.streams);
  EXPECT_EQ(d.streams_into(11), 3 * d.streams);
  // Every program reads the dumped file: the same processes, none expanded again.
  Deployment back = parse_ok(dump_deployment(d));
  ASSERT_EQ(back.processes.size(), d.processes.size());
  EXPECT_EQ(back.links.size(), d.links.size());
  EXPECT_EQ(back.processes[7].name, "b.1");
  // One process each: nothing changes.
  EXPECT_EQ(parse_ok(kFile, {"parallelism=1", "processes.2.parallelism=1"}).processes.size(), 5u);
}

TEST(Graph, ParallelismRefusesWhatReplicasCannotDo) {
  const std::string head = "parallelism: 2\nprocesses:\n  - {name: gen, role: loadgen}\n";
  // A port of its own: each replica needs its own ports.
  EXPECT_HAS(parse_err(head + "  - {name: a, role: node, port: 30000}\n  - {name: s, role: sink}\n"),
             "key 'processes.1.port': process 'a': its 2 replicas each listen on ports of their own");
  // One results file for two sinks.
  EXPECT_HAS(parse_err(head + "  - {name: s, role: sink, results: r.csv, parallelism: 2}\n"),
             "2 replicas would write one file; put {replica} in its name");
  Deployment d = parse_ok(head + "  - {name: s, role: sink, results: \"r{replica}.csv\", parallelism: 2}\n");
  EXPECT_EQ(d.processes[3].results, "r1.csv");
  // A group-by's replicas need every tuple of their keys: a key split on its group_by.
  const std::string gb = "  - name: b\n    role: node\n    operators:\n"
                         "      - groupby: {group_by: key, aggregates: count}\n  - {name: s, role: sink}\n";
  EXPECT_HAS(parse_err(head + "  - {name: a, role: node}\n" + gb),
             "process 'b' runs its groupby as 2 replicas, so each must get all of a key's tuples: its "
             "upstream 'a' must split: key with split_key: key");
  parse_ok(head + "  - {name: a, role: node, split: key, split_key: key}\n" + gb);
  // A moving average over every tuple in order runs once.
  EXPECT_HAS(parse_err(head + "  - name: m\n    role: node\n    operators:\n"
                              "      - moving_avg: {field: key}\n  - {name: s, role: sink}\n"),
             "its moving_avg averages every tuple in order and runs as one process");
  parse_ok(head + "  - name: m\n    role: node\n    parallelism: 1\n    operators:\n"
                  "      - moving_avg: {field: key}\n  - {name: s, role: sink}\n");
}

// pin: spread: each process's stage threads get the next CPUs of its host,
// three per instance, in the order the processes are listed.
TEST(Graph, PinSpreadGivesEachStageItsCore) {
  Deployment d = parse_ok(R"(pin: spread
parallelism: 2
hosts:
  - {name: h, address: 127.0.0.1, cores: 0-11}
host: h
processes:
  - {name: gen, role: loadgen}
  - {name: a, role: node, pin_stages: [10]}
  - {name: s, role: sink}
)");
  ASSERT_EQ(d.processes.size(), 5u);
  EXPECT_EQ(d.processes[0].stage_cpus, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(d.processes[1].stage_cpus, (std::vector<unsigned>{3, 4, 5}));
  EXPECT_EQ(d.processes[2].stage_cpus, (std::vector<unsigned>{10}));  // its own choice
  EXPECT_EQ(d.processes[4].stage_cpus, (std::vector<unsigned>{6, 7, 8}));
  EXPECT_EQ(parse_ok(dump_deployment(d)).processes[4].stage_cpus, d.processes[4].stage_cpus);
}

}  // namespace
}  // namespace sluice

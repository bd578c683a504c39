// Defaults, presets and --set overrides: which value wins, and the errors
// of a bad override.

#include "graph/config_test_util.h"

#include <gtest/gtest.h>

#include "transport/carrier_cases.h"

namespace sluice {
namespace {

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
  EXPECT_FALSE(d.link.adaptive_credits) << "the study's configuration: every slot's credit";
  EXPECT_TRUE(parse_ok(kChain).link.adaptive_credits) << "the default";
  EXPECT_FALSE(parse_ok(std::string("credits: fixed\n") + kChain).link.adaptive_credits);
}

TEST(Config, ApplyPreset) {
  LinkOptions l;
  EXPECT_TRUE(apply_preset("original", &l).ok());
  EXPECT_FALSE(l.adaptive_credits);
  EXPECT_TRUE(apply_preset("tcp-opt", &l).ok());
  EXPECT_TRUE(l.adaptive_credits);
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

// A link with acks that nothing sized gets kAckedLinkSlots where its
// receiver holds the slots until the sinks acknowledge (a node that keeps
// copies: its choice, a merge, or operators that emit), and the default
// where it lets them go once sent or checked (a sink, a node that only
// forwards); a value given anywhere (top level, the link, --set) is kept,
// and a dump parses back to the same.
TEST(Config, ALinkWithAcksGetsMoreSlotsWhereItsReceiverHoldsThem) {
  auto slots = [](const Deployment& d) {
    std::vector<uint32_t> v;
    for (const auto& l : d.links) v.push_back(l.options.slots);
    return v;
  };
  using V = std::vector<uint32_t>;
  const uint32_t def = LinkOptions().slots;
  const uint32_t more = kAckedLinkSlots;
  ASSERT_GT(more, def);
  EXPECT_EQ(slots(parse_ok(kChain)), (V{def, def}));
  // node-a only forwards: it claims frames and lets their slots go once sent.
  const Deployment acked = parse_ok(kChain, {"acks=on"});
  EXPECT_EQ(slots(acked), (V{def, def}));
  const std::string filtered = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, operators: [{filter: {field: key, op: ne, value: 5}}]}
  - {name: sink, role: sink}
)";
  EXPECT_EQ(slots(parse_ok(filtered, {"acks=on"})), (V{def, def}));
  // It keeps copies: by choice, or behind the original preset's handover.
  EXPECT_EQ(slots(parse_ok(kChain, {"acks=on", "node_backup=copies"})), (V{more, def}));
  EXPECT_EQ(slots(parse_ok(kChain, {"acks=on", "preset=original", "send_queue=sync"})), (V{more, def}));
  // A group-by emits what it folded: its input's slots wait.
  const std::string grouped = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node, operators: [{groupby: {group_by: key, aggregates: count}}]}
  - {name: sink, role: sink}
)";
  EXPECT_EQ(slots(parse_ok(grouped, {"acks=on"})), (V{more, def}));
  // Its output without acks: a slot comes back once its frame is sent.
  EXPECT_EQ(slots(parse_ok(kChain, {"guarantee=none", "acks=on", "node_backup=copies", "links.1.acks=off"})),
            (V{def, def}));
  const std::string merged = R"(acks: on
processes:
  - {name: a, role: loadgen}
  - {name: b, role: loadgen}
  - {name: node-a, role: node}
  - {name: sink, role: sink}
links:
  - {from: a, to: node-a}
  - {from: b, to: node-a}
  - {from: node-a, to: sink, slots: 16}
)";
  EXPECT_EQ(slots(parse_ok(merged)), (V{more, more, 16}));
  EXPECT_EQ(slots(parse_ok(merged, {"guarantee=none", "links.2.acks=off"})), (V{def, def, 16}));
  EXPECT_EQ(slots(parse_ok(std::string("acks: on\nslots: 32\n") + grouped)), (V{32, 32}));
  EXPECT_EQ(slots(parse_ok(grouped, {"acks=on", "slots=96"})), (V{96, 96}));
  EXPECT_EQ(slots(parse_ok(dump_deployment(parse_ok(merged)))), (V{more, more, 16}));
  EXPECT_EQ(slots(parse_ok(dump_deployment(acked))), slots(acked));
}

// Every mode of the conformance suite is a deployment's keys away: the
// keys its line names give the options its setup makes, field by field of
// what selects a carrier. The client library's ends run on those keys
// (client/client_test.cc), so this is what ties them to the suite.
TEST(Config, EveryConformanceCarrierIsSelectedByItsKeys) {
  for (const testing::CarrierCase& c : testing::kCarriers) {
    SCOPED_TRACE(c.name);
    LinkOptions want;
    c.setup(want);
    const Deployment d = parse_ok(std::string("guarantee: none\n") + c.keys + kChain);
    LinkOptions got = d.link_options(0, 0);
    if (want.transport == "ucx") resolve_ucx_tls(&want.msg, true);
    EXPECT_EQ(got.transport, want.transport);
    if (want.transport == "tcp") {
      EXPECT_EQ(got.tcp.encoding, want.tcp.encoding);
      EXPECT_EQ(got.tcp.rx_select, want.tcp.rx_select);
      EXPECT_EQ(got.tcp.async_send, want.tcp.async_send);
    } else {
      if (want.transport == "fabric") {
        EXPECT_EQ(got.msg.fabric_provider, want.msg.fabric_provider);
      } else {
        EXPECT_EQ(got.msg.ucx_tls, want.msg.ucx_tls);
      }
      EXPECT_EQ(got.msg.sync_completion, want.msg.sync_completion);
      EXPECT_EQ(got.msg.rma_set, want.msg.rma_set);
      if (want.msg.rma_set) {
        EXPECT_EQ(got.msg.rma, want.msg.rma);
      }
    }
  }
}

TEST(Config, DottedOverrides) {
  Deployment d = parse_ok(kChain, {"guarantee=none", "processes.1.host=10.0.0.2", "processes.0.cores=1.5",
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

}  // namespace
}  // namespace sluice

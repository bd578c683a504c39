// Single keys and helpers: a missing file, the helpers, the top-level host,
// the metrics keys, the restart keys and the guarantee.

#include "graph/config_test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>
#include <tuple>

namespace sluice {
namespace {

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
  // The default guarantee restarts every process; guarantee: none, none.
  Deployment d = parse_ok(kChain);
  EXPECT_EQ(d.restart, "on-failure");
  EXPECT_EQ(d.restart_limit, 3u);
  EXPECT_EQ(d.restart_backoff_ms, 500u);
  for (const auto& p : d.processes) EXPECT_TRUE(restarts_on_failure(d, p)) << p.name;
  Deployment never = parse_ok(std::string("guarantee: none\n") + kChain);
  EXPECT_EQ(never.restart, "never");
  for (const auto& p : never.processes) EXPECT_FALSE(restarts_on_failure(never, p)) << p.name;

  Deployment on = parse_ok(R"(guarantee: none
acks: on
checkpoint_interval_ms: 100
restart: on-failure
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

  Deployment one = parse_ok(R"(guarantee: none
acks: on
processes:
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

// guarantee sets acks, restart and checkpoint_interval_ms; `original`
// implies none. A key given beside it wins where it keeps the promise; one
// that breaks it is an error naming the key given, the guarantee and where
// that came from, and what to set.
TEST(Config, TheGuaranteeSetsItsKeysAndRefusesOneThatBreaksIt) {
  auto keys_of = [](const Deployment& d) {
    std::vector<bool> acks;
    for (const auto& l : d.links) acks.push_back(l.options.acks);
    return std::make_tuple(acks, d.restart, d.checkpoint_interval_ms);
  };
  using K = std::tuple<std::vector<bool>, std::string, uint32_t>;
  const K keeps{{true, true}, "on-failure", kGuaranteeCheckpointMs};
  const Deployment def = parse_ok(kChain);
  EXPECT_EQ(def.guarantee, Guarantee::kExactlyOnce);
  EXPECT_EQ(keys_of(def), keeps);
  EXPECT_TRUE(commits_outputs_with_snapshots(def));
  const Deployment alo = parse_ok(std::string("guarantee: at-least-once\n") + kChain);
  EXPECT_EQ(keys_of(alo), keeps);
  EXPECT_FALSE(commits_outputs_with_snapshots(alo));
  const K none{{false, false}, "never", 0};
  EXPECT_EQ(keys_of(parse_ok(std::string("guarantee: none\n") + kChain)), none);
  // The study's preset keeps the study's set-up unless told otherwise.
  const Deployment orig = parse_ok(std::string("preset: original\n") + kChain);
  EXPECT_EQ(orig.guarantee, Guarantee::kNone);
  EXPECT_EQ(keys_of(orig), none);
  EXPECT_EQ(keys_of(parse_ok(kChain, {"preset=original", "guarantee=at-least-once", "send_queue=sync"})), keeps);
  std::string e = parse_err(kChain, {"preset=original", "guarantee=at-least-once"});
  EXPECT_HAS(e, "--set preset=original: preset: original (send_queue: async) cannot carry the acks that "
                "guarantee: at-least-once (--set guarantee=at-least-once) needs");
  EXPECT_HAS(e, "set send_queue: sync beside it");
  // Keys that keep the promise win; under none every key is the file's.
  const Deployment mine = parse_ok(kChain, {"checkpoint_interval_ms=1000", "restart_limit=5", "node_backup=copies"});
  EXPECT_EQ(mine.checkpoint_interval_ms, 1000u);
  EXPECT_EQ(mine.restart_limit, 5u);
  EXPECT_EQ(keys_of(parse_ok(kChain, {"guarantee=none", "acks=on"})), (K{{true, true}, "never", 0}));
  // Keys that break it: at the top level, a link's own, a process's own.
  e = parse_err(std::string("acks: off\n") + kChain);
  EXPECT_HAS(e, "test.yaml:1: key 'acks': acks: off breaks guarantee: exactly-once (the default)");
  EXPECT_HAS(e, "leave acks out (the guarantee sets it on); or set guarantee: none");
  e = parse_err(std::string("guarantee: at-least-once\nrestart: never\n") + kChain);
  EXPECT_HAS(e, "test.yaml:2: key 'restart': restart: never breaks guarantee: at-least-once (at test.yaml:1)");
  e = parse_err(kChain, {"processes.2.restart=never"});
  EXPECT_HAS(e, "--set processes.2.restart=never: process 'sink': restart: never breaks guarantee: exactly-once");
  e = parse_err(std::string(kChain) + "links:\n  - {from: loadgen, to: node-a}\n"
                                      "  - {from: node-a, to: sink, acks: off}\n");
  EXPECT_HAS(e, "test.yaml:7: key 'links.1.acks': link 1 (node-a -> sink): acks: off breaks guarantee");
  e = parse_err(kChain, {"checkpoint_interval_ms=0"});
  EXPECT_HAS(e, "--set checkpoint_interval_ms=0: checkpoint_interval_ms: 0 breaks guarantee: exactly-once");
  EXPECT_HAS(e, fmt::format("leave it out (the guarantee sets {}) or give it a positive value",
                            kGuaranteeCheckpointMs));
  e = parse_err(kChain, {"restart_limit=0"});
  EXPECT_HAS(e, "--set restart_limit=0: restart_limit: 0 breaks guarantee: exactly-once");
  e = parse_err(kChain, {"send_queue=async"});
  EXPECT_HAS(e, "--set send_queue=async: send_queue: async cannot carry the acks");
  // A sink's Kafka rows without transactions may come twice: not exactly once.
  const std::vector<std::string> kafka = {"kafka_bootstrap=127.0.0.1:9092", "processes.2.kafka_topic=out",
                                          "kafka_transactions=off"};
  e = parse_err(kChain, kafka);
  EXPECT_HAS(e, "--set kafka_transactions=off: kafka_transactions: off breaks guarantee: exactly-once "
                "(the default): sink 'sink', restarted");
  std::vector<std::string> alo_kafka = kafka;
  alo_kafka.push_back("guarantee=at-least-once");
  parse_ok(kChain, alo_kafka);
  // The resolved file says the guarantee, and reads back the same.
  for (const char* g : {"none", "at-least-once", "exactly-once"}) {
    const Deployment d = parse_ok(std::string("guarantee: ") + g + "\n" + kChain);
    EXPECT_HAS(dump_deployment(d), std::string("guarantee: ") + g);
    expect_same(d, parse_ok(dump_deployment(d)));
  }
}

// kafka_key: a field of what the sink writes, on a sink with kafka_topic;
// anything else is refused, naming the process.
TEST(Config, KafkaKeyIsAFieldOfASinksKafkaRows) {
  std::vector<std::string> keyed = {"kafka_bootstrap=127.0.0.1:9092", "processes.2.kafka_topic=out"};
  keyed.push_back("processes.2.kafka_key=key");
  const Deployment kd = parse_ok(kChain, keyed);
  EXPECT_EQ(kd.processes[2].kafka_key, "key");
  expect_same(kd, parse_ok(dump_deployment(kd)));
  keyed.back() = "processes.2.kafka_key=nope";
  EXPECT_HAS(parse_err(kChain, keyed), "process 'sink': kafka_key names 'nope', no field the sink writes (key)");
  EXPECT_HAS(parse_err(kChain, {"processes.2.kafka_key=key"}),
             "process 'sink': kafka_key keys the records a sink with kafka_topic writes");
  EXPECT_HAS(parse_err(kChain, {"processes.1.kafka_key=key"}),
             "process 'node-a': kafka_key keys the records a sink with kafka_topic writes");
  EXPECT_HAS(parse_err(kChain, {"processes.0.kafka_key=key"}),
             "process 'loadgen': kafka_key keys the records a sink with kafka_topic writes; a loadgen has none");
}

}  // namespace
}  // namespace sluice

// Single keys and helpers: a missing file, the helpers, the top-level host,
// the metrics keys and the restart keys.

#include "graph/config_test_util.h"

#include <gtest/gtest.h>

#include <thread>

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

}  // namespace
}  // namespace sluice

// Shared by the graph_config_test files (graph/config_*_test.cc): a minimal
// deployment, parse helpers, and field-by-field comparison of two deployments.
#pragma once

#include "graph/config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {

// A minimal valid deployment; tests append keys above `processes`.
inline const char* const kChain = R"(processes:
  - {name: loadgen, role: loadgen}
  - {name: node-a, role: node}
  - {name: sink, role: sink}
)";

inline Deployment parse_ok(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  Deployment d;
  Status st = parse_deployment(yaml, "test.yaml", sets, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

inline std::string parse_err(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  Deployment d;
  Status st = parse_deployment(yaml, "test.yaml", sets, &d);
  EXPECT_FALSE(st.ok()) << "expected an error for:\n" << yaml;
  return st.message();
}

inline void expect_same(const Deployment& a, const Deployment& b) {
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
  EXPECT_EQ(a.loadgen_backup_slots, b.loadgen_backup_slots);
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
  EXPECT_EQ(a.guarantee, b.guarantee);
  EXPECT_EQ(a.link.acks, b.link.acks);
  EXPECT_EQ(a.restart, b.restart);
  EXPECT_EQ(a.checkpoint_interval_ms, b.checkpoint_interval_ms);
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

inline void expect_same_links(const Deployment& a, const Deployment& b) {
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

}  // namespace sluice

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// The deployment: one schema, one parser, one place where defaults live.
//
// Every program (sluice-deploy, -node, -loadgen, -sink) reads the same YAML
// file the same way: load_deployment() parses it, applies `--set key=value`
// overrides, applies the preset, and checks it. A typo, a wrong type or a
// missing field is an error that names the file, the line and the key.
//
// Example (deploy/examples/pipeline.yaml):
//
//   preset: tcp-opt
//   tuple_bytes: 128
//   event_bytes: 32768
//   duration_s: 5
//   processes:
//     - {name: loadgen, role: loadgen}
//     - {name: node-a, role: node, operators: [{filter: {field: key, op: ge, value: 0}}]}
//     - {name: node-b, role: node, operators: [{filter: {field: key, op: ge, value: 0}}]}
//     - {name: sink, role: sink}
//
// The processes form a chain in the order listed: loadgen first, sink last.
// Process i listens on base_port + 100*i + instance (or its own `port`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/ring.h"
#include "base/status.h"
#include "transport/transport.h"

namespace sluice {

enum class Role { kLoadgen, kNode, kSink };
const char* role_name(Role r);

struct OperatorConfig {
  std::string kind = "filter";  // the operators issue adds more
  std::string field = "key";    // key | seq
  std::string op = "ge";        // lt le gt ge eq ne
  uint64_t value = 0;
};

struct ProcessConfig {
  std::string name;
  Role role = Role::kNode;
  std::string host = "127.0.0.1";  // where it listens; its upstream connects here
  uint16_t port = 0;               // 0: base_port + 100 * index
  double cores = 0;                // N in the CPE formulas; 0: host cores / processes on host
  std::vector<OperatorConfig> operators;
  std::string source_line;         // "file:line" where it was declared, for errors
};

struct Deployment {
  std::string preset = "tcp-opt";  // original | tcp-opt (| fabric-opt | ucx-opt later)
  LinkOptions link;                // the preset's choices, then any explicit keys

  // The stream.
  uint32_t tuple_bytes = 128;      // >= 12
  uint32_t event_bytes = 32768;    // bytes per event; 0: one tuple per event
  uint32_t data_bytes = 0;         // array data per event
  double duration_s = 5;           // how long the load generator runs...
  uint64_t tuples = 0;             // ...or, if non-zero, how many tuples it sends
  double rate = 0;                 // events/s per instance; 0: as fast as possible
  uint32_t burst_events = 0;       // bursts: burst_events every burst_ms
  double burst_ms = 0;
  uint32_t streams = 1;            // streams per instance, events round-robin
  uint32_t instances = 1;          // independent pipelines through each process

  // The node.
  Wait wait = Wait::kBlock;        // descriptor rings: block | spin | hybrid
  bool handover_copy = false;      // handover: copy (original: the process stage
                                   // copies each event into a fresh slot) | descriptor
  uint32_t ring_slots = 1024;      // descriptors per ring (power of two)
  uint32_t loadgen_slots = 1024;   // generator pool slots, at most (about 4 MiB of events)

  // Accounting.
  double clock_ghz = 2.6;          // nominal clock F
  double peak_watts = 200;         // P in the energy model
  double progress_s = 1;           // progress line period in logs, 0: off

  uint16_t base_port = 17100;
  std::vector<ProcessConfig> processes;

  std::string file;                // where it came from

  // Index of a process by name, or -1.
  int process_index(const std::string& name) const;
  // Port process i listens on for instance k.
  uint16_t listen_port(size_t i, uint32_t instance) const;
  // Link options for the link into process i (i >= 1), instance k.
  LinkOptions link_into(size_t i, uint32_t instance) const;
  // Cores given to process i (resolves 0 to this host's share).
  double cores_of(size_t i) const;
};

// Parses `path`, applies the overrides ("key=value", the key a top-level key
// or a dotted path like processes.1.host), applies the preset and validates.
Status load_deployment(const std::string& path,
                       const std::vector<std::string>& overrides, Deployment* out);

// The same from a YAML string (tests); `name` stands in for the file name.
Status parse_deployment(const std::string& yaml, const std::string& name,
                        const std::vector<std::string>& overrides, Deployment* out);

// Applies a preset's choices to `link`. Unknown preset: error.
Status apply_preset(const std::string& preset, LinkOptions* link);

// The deployment as YAML, with every key resolved (what a run really used).
std::string dump_deployment(const Deployment& d);

}  // namespace sluice

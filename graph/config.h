// graph/: may include base/ and transport/.
//
// The deployment: one schema, one parser, one place where defaults live.
//
// Every program (sluice-deploy, -node, -loadgen, -sink) reads the same YAML
// file the same way: load_deployment() parses it, applies `--set key=value`
// overrides, applies the presets, and checks it. A typo, a wrong type or a
// missing field is an error that names the file, the line and the key.
//
// A deployment is a graph: processes (where each runs, what it binds) and
// links (from, to, and the link's transport and options). Top-level link keys
// (transport, encoding, slots, ...) are the defaults of every link; a link may
// set any of them, and its own `preset`, for itself alone. With no `links:`
// the processes form a chain in the order listed (the shorthand of the
// simplest graph); `--set links.N.key=value` still reaches those links.
//
// Example (deploy/examples/union.yaml; split.yaml has the other shape):
//
//   preset: tcp-opt
//   processes:
//     - {name: gen-1, role: loadgen}
//     - {name: gen-2, role: loadgen}
//     - {name: node-a, role: node}
//     - {name: sink, role: sink}
//   links:
//     - {from: gen-1, to: node-a}
//     - {from: gen-2, to: node-a, encoding: copy}
//     - {from: node-a, to: sink}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/ring.h"
#include "base/status.h"
#include "graph/schema.h"
#include "transport/transport.h"

namespace sluice {

// A publisher and a subscriber are an application's ends of the graph
// (include/sluice/): a source and an end of streams as a loadgen and a sink
// are, that sluice-deploy does not start; an application connects as them
// (client/).
enum class Role { kLoadgen, kNode, kSink, kPublisher, kSubscriber };
const char* role_name(Role r);
// Where streams begin (no upstream): a loadgen or a publisher.
inline bool is_source(Role r) { return r == Role::kLoadgen || r == Role::kPublisher; }
// Where streams end (no downstream): a sink or a subscriber.
inline bool is_end(Role r) { return r == Role::kSink || r == Role::kSubscriber; }
// An application's end, not a program sluice-deploy starts.
inline bool is_app(Role r) { return r == Role::kPublisher || r == Role::kSubscriber; }

// How a process with several downstream links divides its events.
enum class Split {
  kStream,  // stream s goes to downstream link s % n: each stream stays whole
  kCopy,    // every event to every downstream link
  kKey,     // each tuple to link hash(split_key) % n (graph/partition.h): a partitioned group-by
};
const char* split_name(Split s);

// An operator as the deployment gives it: its kind and every declared
// parameter as text, defaults filled in by the parser, in declaration order.
struct OperatorConfig {
  std::string kind = "filter";
  std::vector<std::pair<std::string, std::string>> params;
  std::string source_line;  // "file:line", for errors
  std::string path;         // "processes.1.operators.0.filter", for errors
  std::vector<std::string> param_lines;  // where each param was given ("" = default)
  uint32_t derived_stream = 0;  // the stream id of what it emits (Deployment assigns)
  uint32_t max_event_tuples = 0;  // rows per emitted event at most (Deployment assigns)

  const std::string& get(std::string_view key) const;  // "" when absent
  uint64_t u64(std::string_view key) const;
  int64_t i64(std::string_view key) const;
  double f64(std::string_view key) const;
  std::vector<std::string> list(std::string_view key) const;  // "a,b" or "[a, b]"
  // A filter (tests, and the shorthand of older files).
  static OperatorConfig filter(const std::string& field, const std::string& op, int64_t value);
  void set(const std::string& key, const std::string& value);
};

// How the load generator fills one field of a named schema
// (schemas.NAME.fields.I.gen). Every value is a function of the tuple's
// sequence number, so a test computes what a pipeline must deliver.
struct FieldGen {
  enum class Kind {
    kSequence,  // the sequence number (+ `value`); the default for numbers
    kUniform,   // a hash of seq and the field, uniform in [0, cardinality)
    kZipf,      // Zipf(s) over [0, cardinality): rank 0 the most frequent
    kConstant,  // `value`
    kRandom,    // bytes (or numbers) from a hash of seq and the field; the default for bytes
  };
  Kind kind = Kind::kSequence;
  uint64_t cardinality = 0;
  double s = 1.0;
  int64_t value = 0;
};
const char* field_gen_name(FieldGen::Kind k);

// One schema of `schemas:`, with its fields' generators.
struct SchemaConfig {
  Schema schema;
  std::vector<FieldGen> gens;  // one per declared field (schema.fields()[1..])
  std::string source_line;
};

// A machine of `hosts:`: where processes run. A process names its host
// (`host: h1`) and is reached at, and binds, the host's address.
struct HostConfig {
  std::string name;                // [A-Za-z0-9._-]: also names its namespace (netns)
  std::string address;             // where its processes are reached; unique among hosts
  std::vector<unsigned> cpus;      // `cores`: the CPUs its processes are pinned to; empty: not pinned
  uint64_t rate_bps = 0;           // `rate` (else `host_rate`): its link speed in bit/s; 0: no limit
  std::string ssh_user;            // for the ssh launcher; "": ssh's own choice
  uint16_t ssh_port = 22;
  std::string source_line;         // "file:line" where it was declared, for errors
};

struct ProcessConfig {
  std::string name;
  Role role = Role::kNode;
  std::string host = "127.0.0.1";  // where it runs; its upstreams connect to this address
                                   // (with `hosts:`, its host's address)
  std::string host_name;           // with `hosts:`, the host it names; "" without
  std::string listen;              // the address it binds; "" = host
  uint16_t port = 0;               // first port it listens on; 0: base_port + 100 * index
  double cores = 0;                // N in the CPE formulas; 0: host cores / processes on host
  Split split = Split::kStream;    // with several downstream links
  std::string split_key;           // split: key: the numeric field of out_schema to hash
  // `pin_stages`: off (stage threads float over the process's CPUs), on
  // (spread: stage t = 3 * instance + stage index on CPU t mod n of its
  // host's cores, else of the CPUs it may use), or a list: stage t on
  // stage_cpus[t mod size].
  bool pin_stages = false;
  std::vector<unsigned> stage_cpus;
  std::vector<OperatorConfig> operators;
  std::string schema;              // a loadgen's or publisher's stream schema; "": the top-level `schema`
  std::string results;             // a sink: write every tuple it receives to this file (results_format)
                                   // ({instance} is replaced by the instance's number)
  // Kafka (kafka/, docs/DESIGN.md "Kafka"): a loadgen with source: kafka
  // reads kafka_topic instead of making tuples; a sink with kafka_topic
  // produces every row it receives to it. record_format: how a record's
  // value maps to a tuple of the stream's schema.
  std::string source = "generator";  // generator | kafka | file
  std::string kafka_topic;
  // A sink's kafka_topic: the field whose value keys each record (records
  // partitioned by its murmur2 hash, as Kafka's Java producer does); "": no
  // key, the rows of input stream s go to partition s % partitions.
  std::string kafka_key;
  std::string record_format = "csv";  // csv | jsonl | binary (codec/record.h)
  std::string results_format = "csv";      // csv | jsonl | binary (codec/record.h)
  std::vector<std::string> results_fields;  // the columns, by name; empty: seq and every field
  std::string restart;             // `restart`: never | on-failure; "": the top-level `restart`
  std::string threads;             // `threads`: auto | dedicated | shared | adaptive; "": the top-level
  // `parallelism`: the processes it runs as; 0: the top-level's (a sink: 1).
  // Expanded while parsing into replicas NAME.0, NAME.1, ..., each with 1.
  uint32_t parallelism = 0;
  // Resolved: the schema of the stream into it (a loadgen: none) and out of
  // it (after its operators).
  Schema in_schema, out_schema;
  std::string source_line;         // "file:line" where it was declared, for errors

  const std::string& bind_address() const { return listen.empty() ? host : listen; }
};

struct LinkConfig {
  size_t from = 0;            // index into processes: the sender
  size_t to = 0;              // index into processes: the receiver
  std::string preset;         // the link's own preset; "" = the top-level one
  uint16_t port = 0;          // first port (instance 0); 0 = automatic (Deployment::link_port)
  LinkOptions options;        // every link key resolved (defaults < top-level preset <
                              // top-level keys < link preset < link keys); names and
                              // endpoint are filled by Deployment::link_options()
  std::string source_line;    // "file:line" of the link (or of `processes` for the chain)
};

// What a run promises when one of its processes dies (`guarantee`). Each
// level sets acks, restart and checkpoint_interval_ms (apply_guarantee); a
// key given beside it wins unless it breaks the promise, which the parser
// refuses (config_validate.cc, validate_guarantee).
//   kNone         nothing: acks off, restart never, no snapshots; a death
//                 fails the run (the study's set-up).
//   kAtLeastOnce  a killed process (any role) is started again and loses
//                 nothing: acks on every link, restart on-failure,
//                 snapshots of every sink and of every operator that keeps
//                 state. Each sink counts every tuple once; an output that
//                 cannot be taken back (a Kafka topic) may get again what a
//                 restarted sink wrote after its last snapshot.
//   kExactlyOnce  the same, and each sink's external outputs are committed
//                 with its snapshots: the results file is cut back to its
//                 snapshot on restore, an output that cannot be cut back
//                 commits with the snapshot (commits_outputs_with_snapshots).
enum class Guarantee { kNone, kAtLeastOnce, kExactlyOnce };
const char* guarantee_name(Guarantee g);  // "none", "at-least-once", "exactly-once"

// The snapshot interval a guarantee sets where the file does not set
// checkpoint_interval_ms. At full rate a sink snapshots every so many input
// frames whatever the interval (runtime/process.cc, checkpoint_hold); the
// interval is the bound at lower rates and when idle.
inline constexpr uint32_t kGuaranteeCheckpointMs = 200;

// Receiver slots of a link with acks whose file does not set `slots`, where
// its receiver holds a slot until the sinks acknowledge what its frame
// became, not only while the frame is in flight (a node that keeps copies:
// by choice, a merge, a split, operators that emit): twice the default, or
// its upstream waits for credits for the whole path's round trip. Where
// the slot comes back once its frame is sent on or checked (a node that
// only forwards claims it instead, a sink), the default is enough and
// cheaper: 128 there only doubles what is in flight and the bytes every
// process touches (experiments/acks_cost.py --variant s128:slots=128
// measures it against acks off).
inline constexpr uint32_t kAckedLinkSlots = 128;

struct Deployment {
  std::string preset = "tcp-opt";  // original | tcp-opt | fabric-opt | ucx-opt
  // What the run promises (above); a file that leaves it out gets this, or
  // kNone with preset: original (the study had no acks and no restarts).
  Guarantee guarantee = Guarantee::kExactlyOnce;
  LinkOptions link;                // top-level link keys: the defaults of every link

  // The stream.
  uint32_t tuple_bytes = 128;      // >= 12
  uint32_t event_bytes = 32768;    // bytes per event; 0: one tuple per event
  uint32_t data_bytes = 0;         // array data per event
  double duration_s = 5;           // how long each load generator runs...
  uint64_t tuples = 0;             // ...or, if non-zero, how many tuples it sends
  double rate = 0;                 // events/s per instance; 0: as fast as possible
  uint32_t burst_events = 0;       // bursts: burst_events every burst_ms
  double burst_ms = 0;
  uint32_t burst_head_events = 0;  // the sink's head of a burst: its first k events (0: a tenth, >= 1)
  uint32_t streams = 1;            // streams per load generator and instance, round-robin
  // A loadgen with source: file (loadgen/file_source.h): the file, and
  // the pace of a time field.
  std::string source_file;            // the file's path
  std::string source_time_field;      // "": no pacing by a time field
  std::string source_time_unit = "ns";  // ns | us | ms | s: the time field's unit
  double source_speedup = 1;          // the time field's pace, sped up this much
  uint32_t instances = 1;          // independent copies of the whole graph
  // Processes each load generator and node runs as (a sink: 1), unless it
  // sets its own: expanded while parsing into NAME.0, NAME.1, ... and their
  // links (config_parallel.cc); after that every process's is 1.
  uint32_t parallelism = 1;
  // off | spread: every process's stage threads pinned to its host's CPUs
  // in turn, in the order the processes are listed (config_parallel.cc).
  std::string pin = "off";

  // The node.
  Wait wait = Wait::kBlock;        // descriptor rings: block | spin | hybrid
  bool handover_copy = false;      // handover: copy (original) | descriptor
  std::string threads = "auto";       // auto | dedicated | shared | adaptive: every process's unless it sets its own
  uint32_t ring_slots = 1024;      // descriptors per ring (power of two)
  uint32_t loadgen_slots = 1024;   // generator pool slots, at most (about 4 MiB of events)
  // With acks, what a load generator keeps of each event until it is
  // acknowledged: its 64-byte header (the event is made again for a replay,
  // transport/link.h Remaker) or, as every other sender, its slot.
  bool loadgen_backup_slots = false;
  // With acks, what a node that only forwards keeps of each frame until the
  // next hop acknowledges it: nothing (its upstream's backup covers it:
  // AckLedger, transport/link.h) or, as every other node, its slot.
  bool node_backup_copies = false;

  // Accounting.
  double clock_ghz = 2.6;          // nominal clock F
  double peak_watts = 200;         // P in the energy model
  double progress_s = 1;           // progress line period in logs, 0: off

  // The Prometheus endpoint of every process (http://ADDRESS:PORT/metrics).
  bool metrics = true;                        // metrics: on | off
  // Loopback unless the file says otherwise; "host": the address the process
  // binds (its host's), for a Prometheus that scrapes from another machine or
  // network namespace.
  std::string metrics_address = "127.0.0.1";
  uint16_t metrics_port = 0;                  // process i on metrics_port + i; 0: any free port

  // The supervisor of `run` and `up`: a process that dies (non-zero status or
  // a signal) with restart on-failure is started again on its host, at most
  // restart_limit times, after restart_backoff_ms doubling per attempt (<= 10 s).
  std::string restart = "never";   // never | on-failure: every process's unless it sets its own
  uint32_t restart_limit = 3;
  uint32_t restart_backoff_ms = 500;
  // An application's end (role publisher or subscriber) is not started by
  // sluice-deploy: run and up wait this long for it to connect, and a link
  // into a subscriber keeps trying to connect for as long (its
  // connect_timeout_ms, if shorter).
  double app_wait_s = 60;
  // Operator snapshots: a node whose operators keep state writes it to
  // state_dir ("": the run's directory) every checkpoint_interval_ms (0:
  // never) and reads it back when restarted. run_token names the run a
  // snapshot belongs to (set by the programs, not a key): run_id and the
  // summary's path; sluice-deploy sets a new run_id for every run.
  uint32_t checkpoint_interval_ms = 0;
  std::string state_dir;
  // on: each snapshot is on disk (fdatasync) before the input it holds is
  // acknowledged, so it survives the machine, not only the process.
  std::string snapshot_sync = "off";
  std::string run_id;
  std::string run_token;

  // Kafka endpoints (a loadgen with source: kafka, a sink with kafka_topic).
  std::string kafka_bootstrap;     // HOST:PORT,...: required once a process uses Kafka
  std::string kafka_group;         // the source's consumer group; "": sluice-RUN_ID (one per run)
  // auto: a sink with snapshots writes in Kafka transactions (exactly once
  // for read_committed readers), one without with the idempotent producer.
  std::string kafka_transactions = "auto";  // auto | on | off
  std::string bad_records = "fail";         // fail | reject: a record that does not decode

  uint16_t base_port = 17100;
  // Where the processes run. Without `hosts:` every process's `host` is an
  // address and the launcher is `local`.
  std::vector<HostConfig> hosts;
  std::string launcher = "local";  // local | netns | ssh | slurm: how sluice-deploy run starts them
  // The ssh launcher: each process started on its host over ssh.
  std::string ssh_key;             // `ssh_key`: the identity file (-i); "": ssh's own choice
  std::string ssh_options;         // `ssh_options`: more options for ssh and scp, split at spaces
  std::string remote_dir;          // `remote_dir`: the programs' and the run's folder on the hosts;
                                   // "": the same paths as here (a shared or mirrored tree)
  bool copy_binaries = false;      // `copy_binaries`: scp the programs to remote_dir/bin first
  uint64_t host_rate_bps = 0;      // `host_rate`: every host's `rate` unless it sets one
  std::string subnet;              // `subnet` (a.b.c.d/n) the netns hosts share; "": the /24 of the first
  // `schemas:` (name -> fields); `schema` (link.schema) names the loadgens'
  // one, else the default schema (seq, key, payload) goes by that name.
  std::vector<SchemaConfig> schemas;
  std::vector<ProcessConfig> processes;
  std::vector<LinkConfig> links;   // explicit, or the chain of processes in order
  bool chain = false;              // true when `links:` was left out

  std::string file;                // where it came from
  // What the file says that has no effect, one "file:line: ..." each (a
  // top-level carrier key no link's carrier reads); sluice-deploy prints them.
  std::vector<std::string> warnings;
  // Set by a program run from flags (--listen/--connect) rather than a file:
  // it knows only its own links, so each is link 0 and a Hello names no
  // receiver. Not a key of the file.
  bool standalone = false;

  const SchemaConfig* find_schema(const std::string& name) const;
  // The schema the loadgen process i generates (its own `schema`, else the
  // top-level one), with its generators; nullptr: the default schema.
  const SchemaConfig* loadgen_schema(size_t i) const;
  // Index of a process by name, or -1.
  int process_index(const std::string& name) const;
  // Links into / out of process i, as indices into `links`, in file order.
  std::vector<size_t> inputs_of(size_t i) const;
  std::vector<size_t> outputs_of(size_t i) const;
  // How process i's stages share threads: its own `threads`, else the
  // top-level one, with auto resolved: shared where every link of the
  // process is over shared memory (ucx sm, posix or sysv; fabric shm),
  // where no frame crosses the kernel and a hand-off between stage
  // threads (a futex wake) costs more than the stages' work; adaptive
  // where a link's frames cross the kernel, which dedicated threads overlap.
  std::string threads_of(size_t i) const;
  // The port link l's receiver listens on for instance k: the link's `port`
  // + k, else the receiver's first port + j * instances + k, where j is the
  // link's place among the receiver's inputs (so a chain keeps today's ports).
  uint16_t link_port(size_t l, uint32_t instance) const;
  // Everything both ends of link l need for instance k: its resolved options
  // with from/to names, host (the receiver's host), listen (the receiver's
  // bind address), port, link_id = l, instance = k, tuple_bytes, schema, wait.
  LinkOptions link_options(size_t l, uint32_t instance) const;
  // The first stream id of load generator i: load generators number their
  // streams one after another in file order (gen-1: 0..streams-1, gen-2:
  // streams..2*streams-1, ...), so a union of them never mixes two streams.
  uint32_t first_stream(size_t i) const;
  // Streams that reach process i (the sum over the load generators upstream
  // of it, each counted once).
  uint32_t streams_into(size_t i) const;
  // Processes downstream first (sinks first, load generators last): the
  // order in which to start them so every listener is up before its
  // upstream connects.
  std::vector<size_t> start_order() const;
  // Cores given to process i: its `cores`, else its host's cores (the CPUs
  // it is pinned to, else this machine's) shared among the processes on
  // that host.
  double cores_of(size_t i) const;
  // The host process i runs on, or nullptr without `hosts:`.
  const HostConfig* host_of(size_t i) const;
};

// Parses `path`, applies the overrides ("key=value", the key a top-level key
// or a dotted path like processes.1.host or links.0.encoding), applies the
// presets and validates.
Status load_deployment(const std::string& path,
                       const std::vector<std::string>& overrides, Deployment* out);

// The same from a YAML string (tests); `name` stands in for the file name.
Status parse_deployment(const std::string& yaml, const std::string& name,
                        const std::vector<std::string>& overrides, Deployment* out);

// "10gbit", "500mbit", "1e9bit", "1000000" (bit/s) -> bit/s; tc's decimal
// units bit, kbit, mbit, gbit, tbit. False for anything else or 0.
bool parse_rate(const std::string& text, uint64_t* bps);
std::string rate_name(uint64_t bps);  // "10gbit"
// "10.77.0.1" -> host-order address; "10.77.0.0/24" -> network and prefix (1..30).
bool parse_ipv4(const std::string& text, uint32_t* addr);
bool parse_subnet(const std::string& text, uint32_t* network, unsigned* prefix);
// "0-3", "0,2,4-5" -> CPUs, sorted; false on a bad range or a repeat.
bool parse_cpu_list(const std::string& text, std::vector<unsigned>* cpus);
std::string cpu_list_name(const std::vector<unsigned>& cpus);  // "0-3,6"

// The address process `p`'s metrics endpoint binds: metrics_address, or with
// "host" (or "") the address the process binds.
inline const std::string& metrics_bind_address(const Deployment& d, const ProcessConfig& p) {
  return d.metrics_address.empty() || d.metrics_address == "host" ? p.bind_address()
                                                                  : d.metrics_address;
}
// Whether the supervisor restarts process `p` when it dies (its own `restart`,
// else the top level's).
inline bool restarts_on_failure(const Deployment& d, const ProcessConfig& p) {
  return (p.restart.empty() ? d.restart : p.restart) == "on-failure";
}

// Applies a preset's choices to `link`. Unknown preset: error.
Status apply_preset(const std::string& preset, LinkOptions* link);
// Applies what guarantee `g` sets: acks of the top-level link keys, restart,
// checkpoint_interval_ms. The parser calls it after the preset and before
// the keys the file gives, which then beat it.
void apply_guarantee(Guarantee g, Deployment* d);
// Whether each sink must commit what it writes outside sluice (a results
// file, a Kafka topic) with its snapshots, so that a restart never shows a
// reader an output twice: guarantee: exactly-once.
inline bool commits_outputs_with_snapshots(const Deployment& d) {
  return d.guarantee == Guarantee::kExactlyOnce;
}

// The deployment as YAML, with every key resolved (what a run really used):
// processes and an explicit links list. Dumped text parses to the same Deployment.
std::string dump_deployment(const Deployment& d);

// The graph in words, for `sluice-deploy validate`: one line per link (index,
// from -> to, transport and its encoding, receiver address:port) and one per
// process with several inputs (union) or outputs (split by stream / copy).
std::string describe_graph(const Deployment& d);

}  // namespace sluice

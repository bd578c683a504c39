// Operators: the query work of the process stage.
//
// An operator sees every descriptor of its stream, in order, on the process
// stage's thread, and may:
//   (a) rewrite the events in place: drop tuples by compacting the survivors
//       towards the front of the run, reseal each changed event and shrink
//       the descriptor (filter). An event whose tuples are all dropped stays,
//       with no tuples, so its tuple span still tells the sink which sequence
//       numbers were filtered;
//   (b) consume the run (return kConsumed: the stage frees its slot) and emit
//       new events into slots taken from the node's pool, through an Emitter.
//       Those slots are the pool's reserve (transport/pool.h), sized when the
//       node starts from what its operators declare: the same memory bound and
//       the same credits downstream. When none is free the process stage waits
//       for the send stage to free one; it never allocates;
//   (c) flush at END: emit what it still holds before END goes downstream, and
//       add to END its accounts (tuples it took out of each stream on purpose)
//       and the totals of the streams it made, so the sink still counts exact;
//   (d) act on time: on_time() is called with the watermark, the largest
//       event timestamp (send_ts_ns) seen so far less the operator's declared
//       lateness (`lateness_ns` of its Spec), once per descriptor when it
//       advances. Events older than the watermark are still given to
//       process(): an operator decides whether a late tuple joins a closed
//       window or is counted on its own. END moves the watermark to infinity
//       (on_time(UINT64_MAX) before flush());
//   (e) keep state whose size is known when it is made: state_bytes() says
//       how much; nothing is allocated after make();
//   (f) with checkpoints (node/checkpoint.h), write that state between two
//       descriptors (save) and read it back when its node restarts (load),
//       so the node continues where the snapshot was taken: state() says
//       whether it keeps any and whether it can. save() is called only
//       between descriptors, when every event it emitted was committed.
//
// Each operator kind declares itself once, in an OperatorSpec: its parameters
// (key, type, default, doc), how its output schema follows from its input
// schema, and how to make it. The deployment parser validates every
// operator's keys from that declaration (graph/config_parse.cc), and the runtime
// makes the chain from it. operator_specs() lists every kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/snapshot.h"
#include "base/status.h"
#include "graph/config.h"
#include "graph/schema.h"
#include "transport/event.h"
#include "transport/transport.h"

namespace sluice {

// Where an operator's new events go. The process stage implements it.
class Emitter {
 public:
  virtual ~Emitter() = default;
  // A free slot of the node's pool to write events into, its usable bytes in
  // *capacity. Waits while none is free; nullptr once the instance stops.
  virtual std::byte* acquire(uint32_t* capacity) = 0;
  // The events written into the slot acquired last go downstream (through
  // the operators after this one). `events` whole sealed events, `bytes` in
  // all; events 0 gives the slot back unused.
  virtual void commit(uint32_t bytes, uint32_t events, uint32_t tuples) = 0;
  // The same, bound for downstream link `link` only (a key split). An
  // emitter with no links to choose from ignores the link.
  virtual void commit_to(uint32_t link, uint32_t bytes, uint32_t events, uint32_t tuples) {
    commit(bytes, events, tuples);
  }
};

// Tuples an operator that consumes event `h` counts filtered: those dropped
// inside it upstream. A part of a key split's event has none of its own: its
// missing tuples are the split's partitioned account.
inline uint32_t filtered_inside(const EventHeader& h) {
  return (h.flags & kEventPart) ? 0 : h.tuple_span - h.tuple_count;
}

// Writes rows of one schema as events of one derived stream into emitted
// slots: numbers them (seq from 0), fills the header and seals each event.
// The sink checks a derived stream like a generated one: checksums,
// sequence, and its totals, which end() adds to END.
class EventWriter {
 public:
  EventWriter() = default;
  EventWriter(uint32_t stream, uint32_t tuple_bytes, uint32_t max_tuples_per_event)
      : stream_(stream), tuple_bytes_(tuple_bytes),
        max_tuples_(max_tuples_per_event ? max_tuples_per_event : UINT32_MAX) {}
  // Room for one row (its seq already written), in the open event; `ts_ns`
  // becomes the event's timestamp if it opens one. nullptr once stopping.
  std::byte* append(Emitter& out, uint64_t ts_ns);
  // Seals the open event and sends its slot on.
  void flush(Emitter& out);
  // This stream's totals, added to END.
  void end(EndOfStream* eos) const;
  uint64_t rows() const { return next_seq_; }
  // The numbering, between descriptors (no event open): a restored writer
  // continues the derived stream's seq and event_seq where it was saved.
  void save(SnapshotOut& out) const;
  void load(SnapshotIn& in);

 private:
  void seal_open();
  uint32_t stream_ = 0, tuple_bytes_ = 0, max_tuples_ = 0;
  std::byte* slot_ = nullptr;  // the slot being filled
  uint32_t capacity_ = 0, used_ = 0, events_in_slot_ = 0, tuples_in_slot_ = 0;
  std::byte* event_ = nullptr;  // the open event in it
  uint32_t open_tuples_ = 0;
  uint64_t next_seq_ = 0, events_ = 0;
};

// Tuples an operator took out of each stream on purpose, sized up front.
struct StreamAccounts {
  EndOfStreamAccount of[kMaxStreams] = {};
  bool any = false;
  void filtered(uint32_t stream, uint64_t n) { add(stream).filtered += n; }
  void aggregated(uint32_t stream, uint64_t n) { add(stream).aggregated += n; }
  void joined(uint32_t stream, uint64_t n) { add(stream).joined += n; }
  void partitioned(uint32_t stream, uint64_t n) { add(stream).partitioned += n; }
  // Adds these to END's entries of the same streams.
  void add_to(EndOfStream* eos) const;
  void save(SnapshotOut& out) const;
  void load(SnapshotIn& in);

 private:
  EndOfStreamAccount& add(uint32_t stream) {
    any = true;
    return of[stream < kMaxStreams ? stream : kMaxStreams - 1];
  }
};

class Operator {
 public:
  enum Result { kKeep, kConsumed };
  virtual ~Operator() = default;
  virtual const char* name() const = 0;
  // Bytes of state it holds, fixed when made.
  virtual size_t state_bytes() const { return 0; }
  // What it keeps from one descriptor to the next (see (f) above): nothing
  // (filter, project), state it saves and loads, or state it cannot save
  // yet, which a node that checkpoints refuses.
  enum class State { kNone, kSaved, kUnsaved };
  virtual State state() const { return State::kNone; }
  virtual void save(SnapshotOut& out) const {}
  // Error: the bytes are not a snapshot of an operator made alike.
  virtual Status load(SnapshotIn& in) { return {}; }
  // One descriptor's events (`run` points at the first). kKeep: the (maybe
  // rewritten) run goes on; kConsumed: the stage frees its slot.
  virtual Result process(std::byte* run, Descriptor& d, Emitter& out) = 0;
  // The watermark advanced (see the top of this file).
  virtual void on_time(uint64_t watermark_ns, Emitter& out) {}
  // END arrived: emit what is still open.
  virtual void flush(Emitter& out) {}
  // END goes downstream: add this operator's accounts and derived streams.
  virtual void end(EndOfStream* eos) {}
  // Not ok: the operator met what its declared state cannot hold; the
  // process stage fails the instance with this error.
  virtual Status status() const { return {}; }
};

// ---- declaration

enum class ParamType { kU64, kI64, kF64, kString, kEnum, kField, kFieldList };
const char* param_type_name(ParamType t);

struct ParamSpec {
  const char* key;
  ParamType type;
  const char* def;      // default as text; nullptr: required
  const char* doc;
  const char* choices;  // kEnum: "lt|le|gt|ge|eq|ne"
};

struct OperatorSpec {
  const char* kind;
  const char* doc;
  std::vector<ParamSpec> params;
  bool emits = false;       // needs emit slots (consumes its input)
  uint32_t emit_slots = 0;  // reserve slots it needs at most in flight
  uint64_t lateness_ns = 0; // watermark = max event time - lateness
  // Checks the parameters against the input schema; the output schema.
  Status (*output)(const OperatorConfig& cfg, const Schema& in, Schema* out) = nullptr;
  std::unique_ptr<Operator> (*make)(const OperatorConfig& cfg, const Schema& in, Status* st) =
      nullptr;
};

// Every operator kind sluice knows.
const std::vector<OperatorSpec>& operator_specs();
const OperatorSpec* find_operator_spec(std::string_view kind);
std::vector<std::string> operator_kinds();
// The kinds, kept current as kinds are registered (the parser's list).
const std::vector<std::string>& operator_kind_list();
// Adds a kind to the registry: for test binaries (an operator that
// miscounts on purpose, say) so that shipped programs never offer them.
// Call before any deployment is read; false if the kind exists or the
// registry is full (specs never move once registered).
bool register_operator(const OperatorSpec& spec);

// One operator from its configuration, over a stream of schema `in`.
std::unique_ptr<Operator> make_operator(const OperatorConfig& cfg, const Schema& in, Status* st);

// Checks one parameter's text against its declared type (and the input
// schema, for fields). "" when good, else what is wrong.
std::string check_param(const ParamSpec& p, const std::string& text, const Schema* in);

// The operators of one process stage, applied in order, with their costs.
class OperatorChain {
 public:
  struct Cost {
    uint64_t events_in = 0, events_out = 0, tuples_in = 0, tuples_out = 0;
    double cpu_s = 0;
  };
  // `in`: the schema of the stream into the chain.
  static Status make(const std::vector<OperatorConfig>& cfgs, const Schema& in, OperatorChain* out);
  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  Operator& op(size_t i) { return *ops_[i]; }
  const Operator& op(size_t i) const { return *ops_[i]; }
  const OperatorSpec& spec(size_t i) const { return *specs_[i]; }
  uint32_t emit_slots() const;
  // One more operator at the end, made by the runtime (a key split's partition).
  void append(const OperatorSpec* spec, std::unique_ptr<Operator> op) {
    ops_.push_back(std::move(op));
    specs_.push_back(spec);
    costs_.push_back(Cost{});
  }
  Cost& cost(size_t i) { return costs_[i]; }
  const Cost& cost(size_t i) const { return costs_[i]; }

 private:
  std::vector<std::unique_ptr<Operator>> ops_;
  std::vector<const OperatorSpec*> specs_;
  std::vector<Cost> costs_;
};

// Why process `index` could not go on if it were started again after a
// death: without snapshots (checkpoint_interval_ms 0) a sink's counts and
// positions, or the state of an operator that keeps some, die with the
// process. Ok for a load generator, a node whose operators keep no state,
// and any process with snapshots. The runtime refuses such a restart
// (exit 2); render --k8s does not ask the kubelet for one; a deployment
// that sets restart: on-failure on such a process gets a warning.
Status restart_loses_state(const Deployment& d, size_t index);

// Whether node p, whose operators are `chain`, forwards without keeping
// copies when it has acks (node_backup: upstream): one link in and one
// out, both with acks, operators that keep no state, no node_backup:
// copies and no handover copy. Its upstream's backup covers what it sends.
bool forwards_without_copies(const Deployment& d, size_t p, const OperatorChain& chain);
// Its links' part of that, from the file alone: a node, one link in and one
// out, both with acks, no node_backup: copies and no handover copy.
bool links_let_forward_without_copies(const Deployment& d, size_t p);

// Whether some process upstream of process `index` waits on the
// acknowledgements that index's snapshots release, beyond the room in its
// replay log: a node whose operators keep state (each of its snapshots
// waits until what it sent was acknowledged) or a node that keeps copies
// (node_backup: copies, a handover copy, a union or a split: its slots
// wait), or a load generator that keeps slots (loadgen_backup: slots, or
// operators). Load generators that keep headers and nodes that only
// forward (forwards_without_copies) wait for nothing else, so a sink with
// only those upstream may snapshot less often (runtime/process.cc). Chains that cannot be made
// count as waiting (the runtime reports them).
bool upstream_waits_for_snapshots(const Deployment& d, size_t index);

}  // namespace sluice

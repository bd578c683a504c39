// loadgen/: may include base/, transport/, graph/, node/ and codec/.
//
// The load generator: a Source that makes events instead of receiving them.
//
// Each event goes into its own slot of a pool sized once at start (the pool's
// owner is this generator; senders release into it): the tuple
// payload pattern is written into every slot then, and the constant header
// fields into a header template, so making an event writes only what varies:
// the header (from its template), each tuple's sequence number and key, and
// the checksum. With the default schema an event is a template event
// (kEventTemplate, transport/event.h): its checksum covers the payload through
// one hash of the template body made once per tuple count, so making one
// reads none of its payload; the sink hashes it all. A named schema's
// fields vary per tuple, so its events carry the full checksum.
// Streams take events round-robin; each stream numbers its tuples
// from 0. The run ends after `duration_s` or `tuples`, or on stop(), with an
// END descriptor that tells the sink, per stream, how many tuples and events
// there were, so a lost tail is seen.
//
// Tuple keys are a multiplicative hash of the sequence number, uniform in
// [0, 1024), so a filter on key selects a predictable fraction.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "graph/config.h"
#include "node/node.h"
#include "transport/event.h"

namespace sluice {

inline uint32_t tuple_key_for(uint64_t seq) { return template_key(seq); }

// The values a named schema's field generators give (FieldGen), as a
// function of the tuple's sequence number: what the load generator writes and
// what a test expects. Tables (zipf) are made once, in the constructor.
class FieldFiller {
 public:
  explicit FieldFiller(const SchemaConfig& sc);
  // Writes every declared field of the tuple with sequence number `seq`.
  void fill(std::byte* tuple, uint64_t seq) const;
  // Field i's (0: the first declared) numeric value for `seq`.
  int64_t value(size_t i, uint64_t seq) const;

 private:
  struct Field {
    FieldRef ref;
    FieldGen gen;
    uint64_t salt;
    std::vector<double> cdf;  // zipf
  };
  std::vector<Field> fields_;
};

// With acks, a generator is also its links' Remaker (transport/link.h): an
// event is a function of its header, so a link keeps the header and frees
// the slot once sent, and a replay makes the event again in the pool's
// reserve. The pool then holds the queue alone, not the links' windows.
class Generator;

// Where a restarted load generator may resume (runtime/process.cc,
// Position): how many of its events, from the first, are all safe
// downstream, given the events each of its links has acknowledged since
// this start, which resumed at event `base` (0: at the stream's start).
// Event i is stream first_stream + i % streams (round-robin), and goes to
// the one link of `acked`, or with several by `split`: stream (stream s to
// link s % n; a link's events are its streams' in generator order), copy
// (every event to every link). The answer is the most P such that every
// event before P was acknowledged on each link it went to; what a restart
// at P makes again that a link had already acknowledged, its sinks drop.
// Not for split: key (a link gets parts of events, not whole ones).
uint64_t events_safe_downstream(Split split, uint32_t first_stream, uint32_t streams, uint64_t base,
                                std::span<const uint64_t> acked);

// A load generator's pool (the generator's, a file source's): its slots,
// for the queue of events made and not yet sent and, with acks and
// without `remakes` (events kept by their slots), the links' windows; and
// a slot's bytes (an event, or END).
size_t loadgen_pool_slots(const Deployment& d, bool remakes);
size_t loadgen_slot_bytes(const Deployment& d);

class Generator final : public Source, public Remaker {
 public:
  // Streams first_stream .. first_stream + d.streams - 1 (Deployment::first_stream).
  // `schema`: a named schema's fields and their generators; nullptr: the
  // default schema (seq, key, payload), the fast path. `remakes`: its
  // events reach its links as made (no operators, handover: descriptor),
  // so with acks and loadgen_backup: headers they may keep them by header;
  // the caller then gives it to them (NetDestination::set_remaker) where
  // remakes() says so.
  Generator(const Deployment& d, uint32_t instance, uint32_t first_stream = 0,
            const SchemaConfig* schema = nullptr, bool remakes = false);
  bool remakes() const { return pool_.reserved() > 0; }
  uint32_t room() const override { return static_cast<uint32_t>(pool_.reserved()); }
  Status remake(const EventHeader& h, uint32_t* slot) override;
  Status next(std::span<Descriptor> out, size_t* n) override;
  SlotPool& pool() override { return pool_; }
  void shutdown() override;
  // The last next() waited for its schedule (rate or bursts): not backed up.
  bool waited() const override { return waited_; }
  // With a rate or bursts: how long it waited for a free slot (held back
  // by what is downstream: credits, acknowledgements, a stalled receiver),
  // and the events its schedule called for by the end and it did not make.
  void report(ProcessSummary& s) const override;
  // Ends the stream early but cleanly (SIGINT): END goes out after what was made.
  void stop() { stop_.store(true, std::memory_order_relaxed); }
  // A restarted generator whose first `events` events were acknowledged
  // downstream (its position file, runtime/process.cc) makes the stream
  // from there: every stream's sequence numbers and event counts as they
  // were after them, the schedule (rate, bursts) as if they were made on
  // time, and without one the clock at `elapsed_s` of duration_s. Before
  // the first next().
  void resume_at(uint64_t events, double elapsed_s);
  // Where resume_at put the clock (0 without it).
  double resumed_s() const { return resumed_s_; }
  uint32_t first_stream() const { return first_stream_; }
  uint32_t streams() const { return streams_; }
  // Makes the next event in `slot` with send timestamp `ts` (exposed for
  // benchmarks: what next() does per event, without the schedule or the pool).
  Descriptor make_event(uint32_t slot, uint64_t ts);

 private:
  bool paced() const { return rate_ > 0 || burst_events_ > 0; }  // a rate or bursts
  size_t allowed_now(double now);
  uint64_t scheduled_by(double now) const;
  uint32_t acquire_slot();
  uint32_t wait_for_slot();
  Descriptor make_end(uint32_t slot);
  // The payload pattern of `count` tuples and the data block after them.
  void fill_payload(std::byte* event, uint32_t count) const;

  uint32_t tuple_bytes_, tuples_per_event_, data_bytes_, streams_, first_stream_;
  uint64_t tuple_limit_;
  double duration_s_, rate_, burst_ms_;
  uint32_t burst_events_;
  Wait wait_;
  SlotPool pool_;
  std::vector<uint64_t> next_seq_;     // per stream
  std::vector<uint64_t> events_;       // per stream
  uint64_t generated_events_ = 0;
  uint64_t generated_tuples_ = 0;
  double t0_ = -1;
  double resumed_s_ = 0;  // resume_at: where the clock starts
  bool ended_ = false;
  bool waited_ = false;
  double held_back_s_ = 0;     // paced: waiting for a free slot
  uint64_t behind_events_ = 0;  // paced: scheduled by the end and not made
  std::atomic<bool> stop_{false};
  std::unique_ptr<FieldFiller> filler_;
  EventHeader header_{};                 // the constant fields of every event
  uint32_t body_count_ = UINT32_MAX;     // the tuple count body_hash_ is for
  uint64_t body_hash_ = 0;               // template_body_hash of the template body
};

}  // namespace sluice

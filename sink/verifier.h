// sink/: may include base/, transport/, graph/, node/ and codec/.
//
// The sink's verifier: a Destination that checks every event instead of
// sending it on.
//
// Per event: the checksum (a template event's, kEventTemplate: its seq and
// key fields one by one and one XXH3 of its body, transport/event.h; a
// mismatch makes its tuples corrupt, and the gap
// they leave in their stream is not counted lost as well), the stream's
// tuple sequence (a gap is lost tuples, an overlap duplicated ones, tuples
// dropped by operators upstream are counted as filtered), each tuple's
// sequence number (inside the event's span, increasing), and the latency from
// the generator's send timestamp. At END, the generator's per-stream totals
// reveal a lost tail, and the operators' accounts in END (tuples filtered
// inside events an operator consumed, aggregated, joined) explain the gaps
// they made: those are no longer lost. Behind a key split (split: key) an
// event arrives as a part (kEventPart) holding this link's tuples of it: what
// its span lacks, and the gaps of events none of whose tuples came this way,
// are explained by the split's `partitioned` account; what of a part's span
// the account does not claim was dropped inside it, counted filtered. All state is sized at start; nothing is allocated per
// event.
#pragma once

#include <array>
#include <optional>
#include <cstdio>
#include <string>
#include <vector>

#include "graph/schema.h"
#include <memory>

#include "node/node.h"
#include "sink/bursts.h"
#include "sink/kafka_rows.h"
#include "sink/results.h"
#include "transport/event.h"

namespace sluice {

struct VerifyCounts {
  uint64_t events = 0, tuples = 0;
  uint64_t lost = 0, duplicated = 0, corrupt = 0, filtered = 0;
  // Taken out upstream on purpose, from the operators' own accounts in END.
  uint64_t aggregated = 0, joined = 0;
  // Sent to other links by a key split upstream (its END account).
  uint64_t partitioned = 0;
  // Tuples operators claimed to take out that no stream missed (also corrupt).
  uint64_t miscounted = 0;
  // Tuples of events that came again after a replay (acks) and were dropped.
  uint64_t deduplicated = 0;
  // Bytes of the events counted, and when the first and the last of them
  // came (CLOCK_REALTIME ns; 0: none yet). Saved with the rest, so over every
  // run of a restarted sink: its stream's interval, not the last run's.
  uint64_t bytes = 0, first_ns = 0, last_ns = 0;
  bool end_seen = false;
};

class Verifier final : public Destination {
 public:
  // Checks events in `pool`'s slots and releases each slot into it.
  explicit Verifier(SlotPool& pool) : pool_(pool), end_(std::make_unique<EndOfStream>()) {}
  // Also writes every intact tuple to `path` (sink/results.h: csv, jsonl
  // or binary records of `fields`; empty: seq and every field), the
  // results of a query, for whoever checks them: through one buffer,
  // complete under its name once END was consumed (finish()).
  Status write_results(const std::string& path, const Schema& schema, RecordFormat format = RecordFormat::kCsv,
                       std::vector<std::string> fields = {});
  // Also produces every intact row it takes in to a Kafka topic
  // (sink/kafka_rows.h): made ready in start(), brought up to date in
  // Kafka before each snapshot (save()) and at END (finish()).
  void write_kafka(std::unique_ptr<KafkaRows> k);
  ~Verifier() override;
  Status start() override;
  // After END: every row produced to Kafka is there (its final snapshot
  // waits for it).
  bool settled() const override;
  Status consume(std::span<const Descriptor> descs) override;
  Status finish() override;
  // After a failure: the results file is left as PATH.part.
  void abort() override;
  void report(ProcessSummary& s) const override;
  // A restarted sink continues from its snapshot: its counts, each stream's
  // position, its latency histogram and its results file (cut back to what
  // the snapshot had written). Burst statistics start again. Its last
  // snapshot, taken after END, comes back ended (stream_ended()).
  bool saves_state() const override { return true; }
  void save(SnapshotOut& out) const override;
  Status load(SnapshotIn& in) override;
  bool stream_ended() const override { return c_.end_seen; }

  // Arrivals, for each recovery's time (ProcessSummary::stalls_s): a batch
  // of events at `now_ns` (CLOCK_REALTIME) after a pause of at least
  // kStallNs is kept, the longest kMaxStalls of them. Called by consume.
  void arrived(uint64_t now_ns);
  static constexpr uint64_t kStallNs = 100'000'000;

  const VerifyCounts& counts() const { return c_; }
  const LatencyHistogram& latency() const { return latency_; }
  const LiveHistogram* live_latency() const override { return &live_latency_; }
  // Burst mode: bursts of the generator, one every period_ns (bursts.h).
  void track_bursts(uint64_t period_ns, uint32_t head) { bursts_.emplace(period_ns, head); }
  // Upstream links with acks replay what they were not sure of: drop an
  // event whose stream already had an event_seq as high (each stream travels
  // one path, in order; a key split's parts too, those of one link).
  void dedupe(bool on) { dedupe_ = on; }
  bool dedupes() const { return dedupe_; }
  const BurstStats* bursts() const { return bursts_ ? &*bursts_ : nullptr; }

  // Checks one run of events (exposed for tests). A template event's seq and
  // key fields are zeroed while its body is hashed and written back after:
  // the bytes are as they came when it returns.
  void verify_run(std::byte* run, const Descriptor& d, uint64_t now_ns);
  // One event of a run, checked and counted as verify_run does: whether it
  // is intact and new, corrupt (counted, nothing in it to be trusted), or a
  // replay's duplicate (counted deduplicated). A subscriber hands the
  // application the intact ones alone (client/).
  enum class Verdict { kIntact, kCorrupt, kDuplicate };
  Verdict verify_event(std::byte* event, uint64_t now_ns);
  // Where `stream` already reached, as its last reader was told (a
  // subscriber whose application keeps its own position): events before
  // next_event_seq are replays, dropped, and its tuples go on from
  // next_seq. Turns dedupe on. Before the first event.
  void resume(uint32_t stream, uint64_t next_event_seq, uint64_t next_seq);
  void verify_end(const std::byte* p, uint32_t bytes);

 private:
  uint64_t gap(uint32_t stream, uint64_t missing);
  bool template_intact(std::byte* p, const EventHeader& h);

  SlotPool& pool_;
  VerifyCounts c_;
  LatencyHistogram latency_;
  LiveHistogram live_latency_;  // the same samples, for the exporter while it runs
  std::optional<BurstStats> bursts_;
  std::array<uint64_t, kMaxStreams> next_seq_{};
  uint64_t first_arrival_ns_ = 0, last_arrival_ns_ = 0;  // this run of the process
  // Loaded from a snapshot: its bytes and its stream's first arrival (0: none).
  uint64_t restored_bytes_ = 0, restored_first_ns_ = 0;
  std::array<std::array<uint64_t, 2>, ProcessSummary::kMaxStalls> stalls_{};
  size_t n_stalls_ = 0;
  bool dedupe_ = false;
  std::array<uint64_t, kMaxStreams> last_event_{};  // highest event_seq + 1 per stream (dedupe)
  std::array<bool, kMaxStreams> seen_{};
  std::array<uint64_t, kMaxStreams> corrupt_unseen_{};  // corrupt tuples not yet met as a gap
  std::array<uint64_t, kMaxStreams> missing_{};  // gaps counted lost, until END's accounts explain them
  std::array<uint64_t, kMaxStreams> part_missing_{};  // span - count of key-split parts, until END
  uint32_t zero_body_count_ = UINT32_MAX;  // 12-byte tuples, no data: the body hash for
  uint64_t zero_body_hash_ = 0;            // this many tuples (all zeros once masked)
  std::unique_ptr<EndOfStream> end_;
  // The results file opens with the first event (or END): fresh, with its
  // header, or, after a restore, cut back to results_keep_ bytes.
  Status open_results();
  // mutable: save() writes the buffer out, so that the length it records
  // is in the file.
  mutable ResultsFile results_;
  int64_t results_keep_ = -1;
  // A write that failed (while checking events, or in save()): the next
  // consume() or finish() says so.
  mutable Status results_error_;
  std::unique_ptr<KafkaRows> kafka_;
  Status kafka_error_;
};

}  // namespace sluice

// sink/: may include base/, transport/, graph/, kafka/ and node/.
//
// A sink's Kafka output (`kafka_topic` on a sink): every row the verifier
// takes in (intact, not a replay it already had) becomes one record of the
// topic, its value the row's fields after seq as CSV (no header), produced
// with librdkafka's idempotent producer (no duplicates from its own
// retries, order kept per partition).
//
// Partitions: with `kafka_key`, a record's key is that field's text and
// its partition the key's murmur2 hash (librdkafka's murmur2_random, the
// Java producer's default: a reader keyed the same way agrees); without
// it, the rows of input stream s go to partition s % the topic's
// partitions (one stream's rows stay in order in one partition). Under
// transactions, librdkafka adds each partition to the open transaction as
// it is first written, and the commit covers them all.
//
// Delivery, in the terms of the `guarantee` key (docs/DESIGN.md, "Kafka"):
//   - without snapshots: rows are produced as they come and flushed at END;
//     a killed node loses none (its upstream replays, the sink drops what it
//     had), a killed sink cannot restart (as without Kafka);
//   - with snapshots, transactions off (at least once): before each snapshot
//     of the sink every row produced is delivered (flush), so a snapshot
//     never holds a row Kafka lacks; a sink killed after a flush and before
//     its snapshot produces the rows between again;
//   - with snapshots, transactions on (exactly once): rows go in a Kafka
//     transaction that is committed before each snapshot; the commit carries
//     the sink's position (per input stream, the next event_seq) as an
//     offset commit of a group of its own, in the same transaction. A
//     restarted sink reads that position back and produces no row of an
//     event before it, so the rows between its last commit and its last
//     snapshot (which its upstream replays) are not written twice. A
//     read_committed reader sees each row once.
//
// Back pressure: librdkafka's queue is bounded (queue.buffering.max.*); a
// full queue makes event() wait for deliveries, so a slow or absent broker
// holds the sink's send stage, and through credits the whole pipeline.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/config.h"
#include "graph/schema.h"
#include "transport/event.h"

namespace sluice {

class KafkaRows {
 public:
  // Process `index` of `d` (a sink with kafka_topic), instance k. Writes in
  // transactions if `transactions`. `restarted`: a supervisor's restart of
  // it, which reads its committed position back.
  static std::unique_ptr<KafkaRows> make(const Deployment& d, size_t index, uint32_t instance,
                                         const Schema& schema, bool transactions, uint32_t restarted,
                                         Status* st);
  ~KafkaRows();
  // On the send thread, before the first event.
  Status start();
  // One intact, fresh event of the verifier: its rows.
  Status event(const std::byte* event, const EventHeader& h);
  // Before a snapshot of the sink holds what it took in: every row produced
  // so far is in Kafka (delivered; committed with transactions). Blocks
  // while the broker is away. A failure it cannot retry ends the process
  // before the snapshot is written (nothing acknowledged upstream that
  // Kafka lacks), for the supervisor to restart.
  void checkpoint();
  // At END (and before the final snapshot): the same as checkpoint().
  Status finish();
  // Everything produced so far is in Kafka (any thread).
  bool settled() const { return pending_.load(std::memory_order_acquire) == 0; }
  uint64_t rows() const { return rows_; }
  uint64_t commits() const { return commits_; }
  // Rows of events an earlier life of this sink had committed, not written again.
  uint64_t skipped_rows() const { return skipped_; }

 private:
  KafkaRows() = default;
  Status commit_locked();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<FieldRef> fields_;
  int key_field_ = -1;  // index in fields_ of kafka_key; -1: none
  int32_t partitions_ = 1;
  struct RowSpan {
    size_t at, end, key_at, key_end;  // in text_
  };
  std::string text_;             // an event's rows' text, reused
  std::vector<RowSpan> spans_;   // each row's place in it
  std::array<uint64_t, kMaxStreams> next_event_{};       // per stream: past the last event produced
  std::array<uint64_t, kMaxStreams> committed_event_{};  // restored: rows before these are in Kafka
  std::mutex mu_;  // checkpoint() from the process thread against event() on the send thread
  std::atomic<uint64_t> pending_{0};  // rows produced, not yet delivered or committed
  uint64_t rows_ = 0, commits_ = 0, skipped_ = 0, in_txn_ = 0;
  bool transactions_ = false;
};

}  // namespace sluice

// loadgen/: may include base/, transport/, graph/, kafka/, codec/ and node/.
//
// The Kafka source: a Source that reads a topic's partitions instead of
// making tuples (a loadgen with `source: kafka`). One stream per partition;
// each record's value decodes into one tuple of the stream's schema
// (record_format, decoded by codec/record.h as a file's records are: a
// record holds the schema's fields after seq, in order), numbered from 0 in its stream as the generator numbers
// its own.
//
// Lifecycle:
//   1. start(): a consumer in kafka_group, the topic's partitions assigned
//      (not subscribed: a rebalance would move a stream to another path
//      mid-stream), each from its committed offset, else the topic's start;
//   2. next(): records, in offset order per partition, into events of at most
//      tuples_per_event tuples each, one partition per event; an event goes
//      out full, or short when no more of its partition came within 2 ms;
//   3. commit() (the process's main thread, every 100 ms and at the end):
//      each partition's offset past the last event every link acknowledged
//      (acks: safe at the sinks), with the stream's next event and tuple
//      numbers in the commit's metadata.
//
// What a restart needs (docs/DESIGN.md, "Kafka"). A restarted source
// resumes from the committed offsets with the committed numbers, and makes
// every event that its last life made after them again, byte for byte in
// its tuples, so the sinks' replay dedupe (per stream event_seq) drops the
// ones they have. Records are the same on the topic, but an event's end
// depends on timing (a short event went out when its partition paused), so
// the end of every event is written to a small ring file in state_dir
// (NAME.K.kafka-ends) before the event is handed on, and a restarted source
// ends its replayed events there. The file is a ring of as many entries as
// events can be unacknowledged; entries of older commits are passed over.
//
// Memory: the pool (its events, and with acks every event until it is
// acknowledged: a replay sends the slot again), librdkafka's fetch queue
// (at most 2,000,000 records and 256 MiB: a second of the pipeline's rate,
// see start()), and the ring of events not yet committed.
// A full pool stops reading: back pressure reaches the broker as a consumer
// that does not fetch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "codec/record.h"
#include "graph/config.h"
#include "node/node.h"
#include "transport/event.h"

namespace sluice {

class KafkaSource final : public Source {
 public:
  // Process `index` of `d` (role loadgen, source: kafka), instance k of
  // d.instances: it takes the partitions p with p % instances == k, as
  // streams first_stream, first_stream + 1, ... `acks`: its links have acks,
  // so offsets are committed once acknowledged (else once handed on).
  // `restarted`: a supervisor's restart of it, which resumes from the
  // committed numbers.
  KafkaSource(const Deployment& d, size_t index, uint32_t instance, uint32_t first_stream, bool acks,
              uint32_t restarted);
  ~KafkaSource() override;
  Status start() override;
  Status next(std::span<Descriptor> out, size_t* n) override;
  SlotPool& pool() override { return *pool_; }
  void shutdown() override;
  void report(ProcessSummary& s) const override;
  bool waited() const override { return waited_; }
  // Ends the stream after the records read so far (SIGINT).
  void stop() { stop_.store(true, std::memory_order_relaxed); }
  // From the process's main thread: commits, per partition, the offset past
  // the last event acknowledged on every link it went to. `acked`: per
  // link, the events acknowledged since this start, in the order handed on
  // (NetDestination::acked_events); empty: without acks, every event handed
  // on. `sync`: waits for the broker's answer (the last one).
  Status commit(std::span<const uint64_t> acked, bool sync);
  uint32_t links() const { return links_; }
  void set_links(uint32_t n, Split split) {
    links_ = n;
    split_ = split;
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<SlotPool> pool_;
  uint32_t links_ = 1;
  Split split_ = Split::kStream;
  bool waited_ = false;
  std::atomic<bool> stop_{false};
};

}  // namespace sluice

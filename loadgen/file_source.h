// loadgen/: may include base/, transport/, graph/, node/ and codec/.
//
// The file source: a load generator whose tuples come from a file of
// records (`source: file`) instead of being made up.
//
//   file ──RecordFile──► record ──RecordDecoder──► tuple, in place in its slot
//                                                  ──► event ──► send stage
//
// It is a Source like the generator, so it has the runtime's credits, acks
// (its links keep each event's slot until it is acknowledged: a replay
// sends the slot again), metrics and summary. Each record is decoded
// straight into its tuple's place in an event slot and numbered (`seq`,
// one stream per instance); nothing is copied or allocated per record.
// The stream ends with END at the end of the file, after `tuples` records
// if set, or on stop().
//
// Pace: as fast as the pipeline takes events, `rate` events/s, or the pace
// of a time field (source_time_field, in source_time_unit, sped up by
// source_speedup): a record is sent (value - first value) / speedup after
// the first. Events are then cut where the next record is not due yet.
//
// A record that does not decode: with bad_records: fail, the run fails
// with its position and reason ("in.csv:17:3: field p1 (i64): 'x' is not an
// integer"); with reject it is counted (`rejected` in the summary), the
// first ones logged, and the stream goes on without it.
//
// A restart resumes where a position says (position(), resume()): the
// file offset, line and counts after the first N events, kept for the
// events not yet acknowledged.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/snapshot.h"
#include "codec/file_reader.h"
#include "codec/record.h"
#include "graph/config.h"
#include "node/node.h"

namespace sluice {

class FileSource final : public Source {
 public:
  // Instance `instance` of a load generator of stream schema `schema`, its
  // one stream numbered `stream`, reading records of `record_format`
  // (csv, jsonl or binary).
  FileSource(const Deployment& d, uint32_t instance, uint32_t stream, const Schema& schema,
             std::string record_format);
  // Opens the file (csv: reads its header) and resolves its columns: a
  // file that cannot be read, or whose columns miss a field, fails here.
  Status start() override;
  Status next(std::span<Descriptor> out, size_t* n) override;
  SlotPool& pool() override { return pool_; }
  void shutdown() override;
  bool waited() const override { return waited_; }
  void report(ProcessSummary& s) const override;
  // Ends the stream early but cleanly (SIGINT): END after what was read.
  void stop() { stop_.store(true, std::memory_order_relaxed); }

  uint32_t stream() const { return stream_; }
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

  // Restarts (runtime/process.cc, Position). From any thread: where the
  // file stands after its first `events` events of this stream (false: not
  // known any more: more events were made since than it keeps). Its bytes:
  // file offset, line, tuples, rejected.
  bool position(uint64_t events, SnapshotOut* out) const;
  // Before start(): go on after the first `events` events, from a
  // position() read back. The clock goes on from `elapsed_s`.
  Status resume(uint64_t events, double elapsed_s, SnapshotIn& in);

 private:
  // Reads and decodes the next record into t. False: none (the end, or
  // *st an error).
  bool read_tuple(std::byte* t, Status* st);
  // The time field's value of the tuple at t, in ns.
  double time_ns(const std::byte* t) const;
  size_t allowed_now(double now);
  uint32_t acquire_slot();
  Descriptor make_end(uint32_t slot);
  void remember(uint64_t events);

  const Deployment& d_;
  std::string record_format_;
  Schema schema_;
  uint32_t tuple_bytes_, tuples_per_event_, stream_;
  uint64_t tuple_limit_;
  double rate_;
  Wait wait_;
  SlotPool pool_;
  RecordFile file_;
  RecordDecoder decoder_;
  bool reject_ = false;
  bool has_time_ = false;
  FieldRef time_field_;
  double time_scale_ = 1;  // ns per unit of the time field, over speedup
  double time0_ = 0;       // the first record's time
  bool time0_set_ = false;
  // A record decoded but not yet due (time pacing), kept for the next event.
  std::vector<std::byte> pending_;
  bool has_pending_ = false;

  uint64_t next_seq_ = 0, events_ = 0;
  double t0_ = -1, resumed_s_ = 0;
  bool ended_ = false, eof_ = false, waited_ = false;
  Status error_;  // a bad record or a read error, returned once what came before it went out
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rejected_{0};
  uint64_t logged_ = 0;

  // Positions of the last events made, for restarts: after event i, ring
  // entry i % size. Written by next(), read by position() under mu_.
  struct Mark {
    uint64_t events = 0, offset = 0, line = 0, tuples = 0, rejected = 0;
  };
  mutable std::mutex mu_;
  std::vector<Mark> marks_;
  Mark resume_{};
  bool resuming_ = false;
};

}  // namespace sluice

// The study's aggregate (Akram et al., DEBS 2012, section 5.2.4): per
// transaction id, collect `steps` (four) tuples with increasing event ids and
// check a timing constraint on their arrival; emit a match when all have come,
// in order, within `within` time units of the first.
//
// Per tuple (txn, event, time), time non-decreasing:
//   1. expire: open transactions whose first tuple is more than `within`
//      before this tuple's time can no longer match; they are dropped, oldest
//      first (timed_out());
//   2. an open transaction whose last event id is below this one takes the
//      tuple; at `steps` tuples it is a match: one output row, and it closes;
//   3. an event id not above the last one breaks the order (out_of_order()):
//      the transaction starts again from this tuple;
//   4. a new transaction opens with this tuple. When max_open are open
//      already, the oldest (the one whose current first tuple is earliest) is
//      evicted to make room (evicted()).
// So the state never holds more than max_open transactions, and every
// dropped one is counted in exactly one of timed_out, evicted or (at flush)
// abandoned. Open transactions live in a fixed pool, an open-addressing index
// (2x max_open slots, backward-shift deletion) and a list in order of their
// first tuple, all allocated at make().
//
// Output rows (output_schema()): seq (the completing tuple's), txn (u64),
// first_time, last_time (u64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/snapshot.h"
#include "base/status.h"
#include "graph/kernels/kernel.h"
#include "graph/schema.h"

namespace sluice::kernels {

struct CorrelateSpec {
  std::string txn_field = "txn";      // integer
  std::string event_field = "event";  // integer, compared as signed
  std::string time_field = "ts";      // integer (timestamp)
  uint32_t steps = 4;
  uint64_t within = 0;  // last time - first time <= within
  uint32_t max_open = 1u << 16;
};

class Correlate {
 public:
  Correlate();
  ~Correlate();
  Correlate(Correlate&&) noexcept;
  Correlate& operator=(Correlate&&) noexcept;

  static Status make(const Schema& in, const CorrelateSpec& spec, Correlate* out);
  const Schema& output_schema() const;
  uint32_t row_bytes() const;

  void consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit);
  // End of stream: open transactions are abandoned (no output).
  void flush(RowEmit emit);

  // The open transactions, oldest first (key, first time, last event id,
  // tuples so far), and the counters; load() into a correlate made with the
  // same spec rebuilds its list and index and continues exactly where the
  // saved one was. Error: the bytes hold another spec's state, more open
  // transactions than max_open, a key twice or a count out of 1..steps-1.
  void save(SnapshotOut& out) const;
  Status load(SnapshotIn& in);

  size_t bytes_held() const;
  uint32_t open() const;
  uint64_t matched() const;
  uint64_t timed_out() const;
  uint64_t out_of_order() const;
  uint64_t evicted() const;
  uint64_t abandoned() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::kernels

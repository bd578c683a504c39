// Windowed, grouped aggregates: count, sum, avg, min, max over count-based or
// time-based windows, tumbling or sliding, grouped by a key field, with a
// having predicate, e.g. the Esper test's
//   select p0, sum(p1) group by p0 having sum(p1) >= 100000000
//
// Windows are cut into panes of `slide` (tuples or time units); a window is
// the last size/slide panes, so slide must divide size (slide == size:
// tumbling). Each group keeps one partial aggregate per pane; when a pane
// closes, each group's panes are combined into one row, the having predicate
// runs on that row, and the rows that pass are emitted. Groups whose panes are
// all empty are dropped then, so the table holds the groups of one window.
//   - count windows: window k ends after tuple k*slide; it covers the last
//     `size` tuples before its end (fewer at the start of the stream). A pane
//     closes as soon as its last tuple is consumed.
//   - time windows: by a u64/timestamp (or integer) field, non-decreasing;
//     panes are [j*slide, (j+1)*slide); a window ending at b covers
//     [b - size, b). A pane closes when a tuple at or after its end arrives or
//     advance_to() (the runtime's watermark) passes its end. A tuple earlier
//     than the open pane is late: counted (late()) and not aggregated.
//   - no window: one window from the first tuple to flush().
// flush() (end of stream) closes the open pane and every later window that
// still holds tuples.
//
// Group state is a dense array of max_groups entries plus an open-addressing
// index (linear probing, 2x max_groups slots), both allocated at make(). A
// window with more than max_groups groups is an error Status from consume(),
// not a reallocation; the tuples before the one that overflowed are counted.
//
// Output rows (output_schema()): seq (u64, the number of rows emitted before
// this one), window_end (u64: the tuple count or time at which the window
// ends), key (i64 for a signed group field, else u64; 0 without group_by),
// then one 8-byte column per aggregate named count, sum_F, avg_F, min_F,
// max_F: count is u64, avg f64, sum/min/max i64 (u64 for unsigned fields, f64
// for f64 fields). Integer sums wrap at 64 bits. Rows of a window come out in
// the groups' order of first arrival in that window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/kernels/kernel.h"
#include "graph/kernels/predicate.h"
#include "graph/schema.h"

namespace sluice {
class SnapshotOut;
class SnapshotIn;
}  // namespace sluice

namespace sluice::kernels {

enum class AggFn : uint8_t { kCount, kSum, kAvg, kMin, kMax };

struct AggSpec {
  AggFn fn = AggFn::kCount;
  std::string field;  // empty for count
};

struct WindowSpec {
  enum class By : uint8_t { kNone, kCount, kTime };
  By by = By::kNone;
  uint64_t size = 0;   // tuples (kCount) or time units of time_field (kTime)
  uint64_t slide = 0;  // 0 or == size: tumbling; else must divide size
  std::string time_field;
};

struct GroupAggSpec {
  std::string group_by;  // empty: one group
  std::vector<AggSpec> aggs;
  WindowSpec window;
  // Over the output row: "sum_p1 >= 100000000"; sum(p1), count(*) are
  // accepted and read as sum_p1, count. Empty: every group is emitted.
  std::string having;
  uint32_t max_groups = 1024;
};

class GroupAggregate {
 public:
  GroupAggregate();
  ~GroupAggregate();
  GroupAggregate(GroupAggregate&&) noexcept;
  GroupAggregate& operator=(GroupAggregate&&) noexcept;

  static Status make(const Schema& in, const GroupAggSpec& spec, GroupAggregate* out);

  const Schema& output_schema() const;
  uint32_t row_bytes() const;

  // Aggregates the run, emitting the rows of each window that closes on the
  // way. Error: a window needed more than max_groups groups.
  Status consume(const std::byte* tuples, size_t n, uint32_t stride, RowEmit emit);
  // Time windows: closes the panes that end at or before t (a watermark).
  void advance_to(uint64_t t, RowEmit emit);
  // End of stream: emits every window that still holds tuples.
  void flush(RowEmit emit);

  // The open windows' groups and counters, compact (not the declared
  // capacity), and back: load() into an aggregate made with the same spec
  // continues exactly where the saved one was. Error: the bytes do not fit
  // this aggregate (in.what() says why); it is then left empty.
  void save(SnapshotOut& out) const;
  Status load(SnapshotIn& in);

  size_t bytes_held() const;
  uint64_t late() const;
  uint32_t groups() const;  // groups of the current window(s)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::kernels

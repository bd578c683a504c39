// sink/: may include base/, transport/, graph/ and node/.
//
// Burst statistics at the sink, for a load generator in burst mode
// (burst_events every burst_ms).
//
//   1. Each event arrives with the generator's send timestamp and the time
//      the sink took it (one clock read per batch, as for latency).
//   2. Its burst is its send time rounded to the nearest period after the
//      first event seen: the generator starts burst p at t0 + p x period, so
//      this holds while each burst is made within half a period (a generator
//      that falls behind the schedule blurs its bursts together).
//   3. A burst's processing time is its first event's send time to its last
//      event's arrival; it closes when an event of a later burst arrives
//      (or at finish()). An event of an older burst, arriving late, counts
//      only in the tail latency.
//   4. The first `head` events to arrive of a burst are its head, the rest its
//      tail: their latencies go to two histograms, so a queue that builds up
//      inside a burst shows as a tail slower than the head.
//
// Fixed size: three histograms and one open burst; nothing per event or burst
// is allocated.
#pragma once

#include <cstdint>
#include <string>

#include "node/metrics.h"

namespace sluice {

class BurstStats {
 public:
  BurstStats(uint64_t period_ns, uint32_t head) : period_(period_ns), head_(head ? head : 1) {}
  void record(uint64_t send_ns, uint64_t recv_ns);
  void finish();  // closes the open burst

  uint64_t bursts() const { return bursts_; }
  uint32_t head() const { return head_; }
  uint64_t late() const { return late_; }
  const LatencyHistogram& processing() const { return processing_; }
  const LatencyHistogram& head_latency() const { return head_lat_; }
  const LatencyHistogram& tail_latency() const { return tail_lat_; }
  void merge(const BurstStats& o);

  // Fills s.burst (percentiles in us).
  void report(ProcessSummary& s) const;
  // The three histograms as a table: kind, upper bound (us), count; one line
  // per non-empty bucket, under a header line.
  std::string histogram_tsv() const;

 private:
  void close();

  uint64_t period_;
  uint32_t head_;
  bool started_ = false, open_ = false;
  uint64_t t0_ = 0, cur_ = 0;
  uint64_t first_send_ = 0, last_recv_ = 0, seen_ = 0;
  uint64_t bursts_ = 0, late_ = 0;
  LatencyHistogram processing_, head_lat_, tail_lat_;
};

}  // namespace sluice

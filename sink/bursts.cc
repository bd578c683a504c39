#include "sink/bursts.h"

#include <fmt/format.h>

#include <algorithm>

namespace sluice {

void BurstStats::record(uint64_t send_ns, uint64_t recv_ns) {
  if (!started_) {
    started_ = true;
    t0_ = send_ns;
  }
  const uint64_t since = send_ns > t0_ ? send_ns - t0_ : 0;
  const uint64_t idx = period_ ? (since + period_ / 2) / period_ : 0;
  const uint64_t lat = recv_ns > send_ns ? recv_ns - send_ns : 0;
  if (!open_ || idx > cur_) {
    if (open_) close();
    open_ = true;
    cur_ = idx;
    first_send_ = send_ns;
    last_recv_ = recv_ns;
    seen_ = 0;
  } else if (idx < cur_) {
    ++late_;
    tail_lat_.record(lat);
    return;
  }
  first_send_ = std::min(first_send_, send_ns);
  last_recv_ = std::max(last_recv_, recv_ns);
  (seen_ < head_ ? head_lat_ : tail_lat_).record(lat);
  ++seen_;
}

void BurstStats::close() {
  processing_.record(last_recv_ > first_send_ ? last_recv_ - first_send_ : 0);
  ++bursts_;
  open_ = false;
}

void BurstStats::finish() {
  if (open_) close();
}

void BurstStats::merge(const BurstStats& o) {
  processing_.merge(o.processing_);
  head_lat_.merge(o.head_lat_);
  tail_lat_.merge(o.tail_lat_);
  bursts_ += o.bursts_;
  late_ += o.late_;
}

void BurstStats::report(ProcessSummary& s) const {
  auto us = [](uint64_t ns) { return ns / 1e3; };
  BurstSummary& b = s.burst;
  b.bursts = bursts_;
  b.head_events = head_;
  b.processing_p50_us = us(processing_.percentile(50));
  b.processing_p99_us = us(processing_.percentile(99));
  b.processing_max_us = us(processing_.max());
  b.head_p50_us = us(head_lat_.percentile(50));
  b.head_p99_us = us(head_lat_.percentile(99));
  b.head_max_us = us(head_lat_.max());
  b.tail_p50_us = us(tail_lat_.percentile(50));
  b.tail_p99_us = us(tail_lat_.percentile(99));
  b.tail_max_us = us(tail_lat_.max());
}

std::string BurstStats::histogram_tsv() const {
  std::string out = "kind\tupper_us\tcount\n";
  auto add = [&](const char* kind, const LatencyHistogram& h) {
    h.for_each_bucket([&](uint64_t high_ns, uint64_t n) {
      out += fmt::format("{}\t{:.3f}\t{}\n", kind, high_ns / 1e3, n);
    });
  };
  add("processing", processing_);
  add("head", head_lat_);
  add("tail", tail_lat_);
  return out;
}

}  // namespace sluice

// CPU accounting and the per-process summary.
//
// Over the measured interval (first event in or out to end of stream) a
// process counts events, tuples and bytes in and out, and reads user and
// system CPU time with getrusage, per process and per stage thread. With F the
// nominal clock and N the cores given to the process (DESIGN.md):
//
//   events  = events in + events out (as the study counts them)
//   CPE_u, CPE_s = user, system cycles per event; CPE_p = CPE_u + CPE_s
//   CPE_i   = (N x wall - busy) x F / events     (clamped at 0)
//   CPB_p   = (user + system) x F / bytes         (bytes in + out)
//   EPE     = P x (CPE_p + 0.7 x CPE_i) / (N x F) joules
//
// The summary is one JSON object per process, written at the end of a run
// and read back with nlohmann-json; sluice-deploy gathers them into the
// run's report.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/snapshot.h"
#include "base/status.h"

namespace sluice {

struct CpuTimes {
  double user_s = 0;
  double sys_s = 0;
  // Context switches: the thread gave up its CPU (it slept: a futex, a
  // blocking read, epoll) or was preempted. A count the machine's load does
  // not bend the way it bends time: per event, what the stages' hand-offs
  // and waits cost (experiments/scaling.py).
  uint64_t voluntary = 0, involuntary = 0;
  static CpuTimes process();  // RUSAGE_SELF
  static CpuTimes thread();   // RUSAGE_THREAD, the calling thread
  CpuTimes operator-(const CpuTimes& o) const {
    return {user_s - o.user_s, sys_s - o.sys_s, voluntary - o.voluntary, involuntary - o.involuntary};
  }
  CpuTimes& operator+=(const CpuTimes& o) {
    user_s += o.user_s;
    sys_s += o.sys_s;
    voluntary += o.voluntary;
    involuntary += o.involuntary;
    return *this;
  }
};

double now_s();            // monotonic seconds
uint64_t wall_clock_ns();  // CLOCK_REALTIME ns: the send timestamp, comparable across hosts
uint64_t rss_max_bytes();

// Where the calling thread runs: the CPUs it may run on ("0-3,6", from its
// affinity mask), and the CPU thread `tid` of this process last ran on
// (field 39 of /proc/self/task/TID/stat; -1 if unreadable).
std::string thread_cpus();
int last_cpu(pid_t tid);
// Pins the calling thread to `cpus` (sched_setaffinity); the error names them.
Status pin_thread(const std::vector<unsigned>& cpus);
std::vector<unsigned> thread_cpu_list();

// Counters one stage thread owns and bumps; read by the reporter thread.
struct alignas(64) StageCounters {
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> tuples{0};
  std::atomic<uint64_t> bytes{0};
  void add(uint64_t ev, uint64_t tu, uint64_t by) {
    events.store(events.load(std::memory_order_relaxed) + ev, std::memory_order_relaxed);
    tuples.store(tuples.load(std::memory_order_relaxed) + tu, std::memory_order_relaxed);
    bytes.store(bytes.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
};

// Why a stage waited: its output ring was full, its input ring empty, or a
// downstream link had no credit. Time blocked is read around the wait alone
// (two clock reads per wait, none per event).
enum BlockReason { kRingFull = 0, kRingEmpty = 1, kNoCredit = 2, kBlockReasons = 3 };
const char* block_reason_name(int r);  // ring_full, ring_empty, no_credit

uint64_t mono_ns();  // steady clock, ns
// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), seconds: what an
// operator costs, without the time its thread waited or was preempted.
double thread_cpu_s();

// A process's once-a-second log line: events and the stream's rate on each
// side it has, in and out apart (a relay carries the stream once, however
// many sides count it):
//   "3 s: in 12000 events (4000/s, 1.02 Gb/s), out 12000 events (4000/s, 1.02 Gb/s)"
// `in`/`out`: whether the process has that side (a loadgen has no in, a sink
// no out); counters are totals since the start, `last` those `dt_s` ago.
struct ProgressCounts {
  uint64_t events_in = 0, events_out = 0, bytes_in = 0, bytes_out = 0;
};
std::string progress_line(double since_start_s, double dt_s, const ProgressCounts& now,
                          const ProgressCounts& last, bool in, bool out);

// A latency histogram a single writer fills and anyone reads while it runs
// (relaxed atomics): fixed bounds in seconds, the Prometheus histogram of the
// sink's latency (sluice_latency_seconds).
class LiveHistogram {
 public:
  static constexpr int kBounds = 19;
  static const double kLe[kBounds];  // upper bounds, seconds; +Inf after them
  void record(uint64_t ns) {
    int b = 0;
    const double s = ns * 1e-9;
    while (b < kBounds && s > kLe[b]) ++b;
    bump(counts_[b], 1);
    bump(sum_ns_, ns);
  }
  // Cumulative count of samples <= kLe[i] (i == kBounds: all).
  uint64_t cumulative(int i) const;
  uint64_t count() const { return cumulative(kBounds); }
  double sum_s() const { return sum_ns_.load(std::memory_order_relaxed) * 1e-9; }
  void merge_into(uint64_t* cum, double* sum) const;  // adds cumulative counts (kBounds + 1)

 private:
  static void bump(std::atomic<uint64_t>& a, uint64_t n) {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::array<std::atomic<uint64_t>, kBounds + 1> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
};

// A plain copy of StageCounters.
struct StageTotals {
  uint64_t events = 0, tuples = 0, bytes = 0;
  static StageTotals of(const StageCounters& c) {
    return {c.events.load(std::memory_order_relaxed), c.tuples.load(std::memory_order_relaxed),
            c.bytes.load(std::memory_order_relaxed)};
  }
  StageTotals& operator+=(const StageTotals& o) {
    events += o.events;
    tuples += o.tuples;
    bytes += o.bytes;
    return *this;
  }
};

// Latency histogram: log-linear buckets (64 per power of two, so a
// percentile is within 1/64 (1.6%) of the truth), fixed size (32 KiB),
// nothing allocated per sample. Values in nanoseconds.
class LatencyHistogram {
 public:
  void record(uint64_t ns);
  void merge(const LatencyHistogram& o);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  uint64_t percentile(double p) const;  // p in [0, 100]
  // Every non-empty bucket, in order: its upper bound (ns) and its count.
  template <class F>
  void for_each_bucket(F f) const {
    for (int b = 0; b < kBuckets; ++b)
      if (buckets_[b]) f(std::min(bucket_high(b), max_), buckets_[b]);
  }
  // For a sink's snapshot: the buckets from the first used one to the
  // maximum's (a run's latencies span a few hundred of the 4,096). load()
  // refuses a range that does not fit the maximum, or counts that do not add
  // up to the total.
  void save(SnapshotOut& out) const;
  Status load(SnapshotIn& in);

 private:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = 64 * kSub;
  static int bucket_of(uint64_t v);
  static uint64_t bucket_high(int b);
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

struct StageSummary {
  std::string name;  // "receive/0", "process/0", "send/0"
  double user_s = 0;
  double sys_s = 0;
  uint64_t events = 0;
  uint64_t ctx_voluntary = 0, ctx_involuntary = 0;  // its thread's context switches
  std::string cpus;   // the CPUs its thread could run on, as it ended
  int last_cpu = -1;  // the CPU it last ran on
  double blocked_s[kBlockReasons] = {0, 0, 0};  // by BlockReason
};

// One link of the process at the end of the run (direction out: it sends).
struct LinkSummary {
  std::string name;
  bool out = false;
  uint64_t frames = 0, bytes = 0, syscalls = 0, credit_waits = 0;
  double credit_wait_s = 0;
  // Incoming links: the credits the receiver let the sender hold over the run
  // (weighted by frames; its slots, unless `credits: adaptive`), and the
  // round trip it measured last.
  uint64_t credit_window = 0, credit_rtt_us = 0;
  // Outgoing links: frames the last operator wrote straight into the
  // receiver's slot (`in_place`), sent without a copy.
  uint64_t in_place_frames = 0;
  // Incoming links: credit messages the receiver sent back (each returns
  // credits, and with acks says what came back): frames / credit_msgs is
  // how many frames one of them answered.
  uint64_t credit_msgs = 0;
};

// Bursts at the sink (loadgen burst_events every burst_ms): each burst's
// processing time, first event sent to last received, and the latency of
// its first burst_head_events events against the rest.
struct BurstSummary {
  uint64_t bursts = 0, head_events = 0;
  double processing_p50_us = 0, processing_p99_us = 0, processing_max_us = 0;
  double head_p50_us = 0, head_p99_us = 0, head_max_us = 0;
  double tail_p50_us = 0, tail_p99_us = 0, tail_max_us = 0;
};

// One operator's work over the run (all instances of it added up): tuples
// and events in and out, and the process stage's CPU time inside it, read
// with a thread clock once per batch, not per tuple.
struct OperatorSummary {
  std::string name;  // "1:aggregate" (its place in the chain and its kind)
  uint64_t events_in = 0, events_out = 0;
  uint64_t tuples_in = 0, tuples_out = 0;
  double cpu_s = 0;
  uint64_t state_bytes = 0;  // declared when made
};

struct ProcessSummary {
  std::string name;
  std::string role;
  bool ok = true;
  std::string error;
  uint32_t instances = 0;

  uint64_t events_in = 0, events_out = 0;
  uint64_t tuples_in = 0, tuples_out = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  double wall_s = 0, user_s = 0, sys_s = 0;
  double cores = 1, clock_ghz = 2.6, peak_watts = 200;

  double cpe_p = 0, cpe_u = 0, cpe_s = 0, cpe_i = 0, cpb_p = 0, epe_joules = 0;
  uint64_t rss_max_bytes = 0;
  // Context switches of all its threads over the same interval as user_s
  // and sys_s (getrusage): voluntary (a thread slept) and involuntary.
  uint64_t ctx_voluntary = 0, ctx_involuntary = 0;

  // Sink only.
  uint64_t lost = 0, duplicated = 0, corrupt = 0, filtered = 0;
  uint64_t aggregated = 0, joined = 0;  // taken out upstream by operators, from END's accounts
  uint64_t partitioned = 0;  // sent to other links by a key split upstream (END's accounts)
  // Upstream backup (acks): events sent again after a link broke, and what a
  // sink dropped as already had; links connected again after a break.
  uint64_t replayed = 0, deduplicated = 0, reconnects = 0;
  // Sources of records (Kafka, a file): records that did not decode and
  // were passed over (bad_records: reject). Kafka endpoints: offset commits (a source) or transactions
  // committed (a sink); rows produced (a sink).
  uint64_t rejected = 0, kafka_commits = 0, kafka_rows = 0;
  // Operator snapshots (a node that checkpoints): snapshots written, the
  // last one's bytes, the checkpoint it was restored from (0: started
  // fresh), and the seconds its process stage waited for acknowledgements
  // before snapshots and spent writing them.
  uint64_t checkpoints = 0, snapshot_bytes = 0, restored_checkpoint = 0;
  // A restored sink: the tuples and bytes it had taken in before its
  // snapshot (its tuples_in and bytes_in count only this run of the
  // process; its verifier's counts, restored, cover both), and when the
  // first of them came (CLOCK_REALTIME seconds; 0: not restored).
  uint64_t restored_tuples = 0, restored_bytes = 0;
  double restored_first_arrival_s = 0;
  double checkpoint_wait_s = 0, checkpoint_write_s = 0;
  // A sink: when its first event came (CLOCK_REALTIME seconds; 0: none),
  // and the longest pauses between events of at least 100 ms, each [from,
  // to] in the same clock (at most kMaxStalls, the longest kept). With the
  // supervisor's time of a death, they give each recovery's time: from the
  // kill to the first tuple at the sink after the restart.
  double first_arrival_s = 0;
  // A sink: when its last event came, over every run of it (a restored
  // sink's, from its snapshot, when none came after the restart).
  double last_arrival_s = 0;
  static constexpr size_t kMaxStalls = 64;
  std::vector<std::array<double, 2>> stalls_s;
  // threads: the mode its stages ran in, and the events its receiving thread
  // ran through process and send itself (adaptive, shared) instead of handing off.
  std::string threads;
  uint64_t inline_events = 0;
  double latency_p50_us = 0, latency_p99_us = 0, latency_max_us = 0;

  uint64_t credit_waits = 0;
  // A load generator with a rate or bursts: the time it waited for a free
  // slot (held back by what is downstream), and the events its schedule
  // called for by the end of the run that it did not make.
  double held_back_s = 0;
  uint64_t behind_events = 0;
  // A load generator reading a file (source: file): the bytes it read.
  uint64_t read_bytes = 0;
  BurstSummary burst;  // sink with bursts only (burst.bursts > 0)
  std::vector<StageSummary> stages;
  std::vector<LinkSummary> links;
  std::vector<OperatorSummary> operators;
  std::string metrics_url;  // its Prometheus endpoint, "" when off
  // Where it ran: the CPUs its main thread could run on at the end, and the
  // CPU it last ran on (each stage's are in `stages`).
  std::string cpus;
  int last_cpu = -1;

  // Fills the cpe_*, cpb_p and epe_joules fields from the raw counts.
  void compute();
  std::string to_json() const;
  // Everything but the identity (name, role, ok, error), as one JSON object:
  // what sluice-deploy's report puts after its own fields.
  std::string measured_json() const;
};

Status summary_from_json(const std::string& text, ProcessSummary* out);

// A string's JSON escaping (without the quotes); UTF-8 passes through.
std::string json_escape(std::string_view s);

}  // namespace sluice

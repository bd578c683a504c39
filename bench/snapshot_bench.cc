// What a sink's snapshot costs, in its three steps (checkpoint_interval_ms,
// "Operator snapshots" in docs/DESIGN.md):
//
// 1. Save: the verifier's state copied out (Verifier::save), on the send
//    stage: the only step that stops the data path.
// 2. Encode: the file's bytes (encode_snapshot: header, XXH3 of the payload).
// 3. Write: one pwrite over the older of the two files (SnapshotFiles::write),
//    in $TMPDIR (default /tmp): the page cache, no fdatasync.
//
// The verifier has seen a few thousand events of 4 streams first, so its
// latency histogram has the buckets a run fills.
//
//   ninja -C build snapshot_bench
//   flock /tmp/cpu.lock build/bench/snapshot_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true   (one command line)
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "graph/checkpoint.h"
#include "graph/operator.h"
#include "loadgen/generator.h"
#include "sink/verifier.h"
#include "transport/event.h"

namespace {

using namespace sluice;

// A verifier that took in 4,000 events of 4 streams (128 B tuples in 4 KiB
// events), and its pool.
struct Filled {
  Filled() : gen(deployment(), 0), ver(gen.pool()) {
    Descriptor d[1];
    size_t n = 0;
    for (int i = 0; i < 4000; ++i) {
      if (!gen.next(std::span<Descriptor>(d, 1), &n).ok() || n == 0) std::abort();
      if (d[0].flags & kDescEnd) break;
      if (!ver.consume(std::span<const Descriptor>(d, 1)).ok()) std::abort();
    }
  }
  static Deployment deployment() {
    Deployment dp;
    dp.tuple_bytes = 128;
    dp.event_bytes = 4096;
    dp.streams = 4;
    dp.loadgen_slots = 8;
    return dp;
  }
  Generator gen;
  Verifier ver;
};

void BM_Save(benchmark::State& state) {
  Filled f;
  SnapshotOut out;
  for (auto _ : state) {
    out.clear();
    out.put<uint64_t>(0);
    f.ver.save(out);
    benchmark::DoNotOptimize(out.data().data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.data().size()));
  state.counters["bytes"] = static_cast<double>(out.data().size());
}
BENCHMARK(BM_Save);

// What the process stage encodes: the verifier's state, as the sink puts it
// (the tuples it took in first), and 4 streams' positions.
CheckpointState sink_state(const Filled& f) {
  SnapshotOut out;
  out.put<uint64_t>(0);
  f.ver.save(out);
  CheckpointState st;
  st.process = out.data();
  for (uint32_t i = 0; i < 4; ++i) st.next_seq[i] = 1000 + i;
  return st;
}

void BM_Encode(benchmark::State& state) {
  Filled f;
  CheckpointState st = sink_state(f);
  SnapshotOut scratch;
  OperatorChain chain;
  std::string bytes;
  for (auto _ : state) {
    ++st.number;
    encode_snapshot("a-run-token-of-usual-length", chain, st, &scratch, &bytes);
    benchmark::DoNotOptimize(bytes.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_Encode);

void BM_Write(benchmark::State& state) {
  Filled f;
  SnapshotOut scratch;
  OperatorChain chain;
  std::string bytes;
  encode_snapshot("a-run-token-of-usual-length", chain, sink_state(f), &scratch, &bytes);
  const char* dir = std::getenv("TMPDIR");
  SnapshotFiles files(std::string(dir ? dir : "/tmp") + "/snapshot_bench." + std::to_string(getpid()));
  uint64_t number = 0;
  for (auto _ : state)
    if (!files.write(++number, bytes).ok()) state.SkipWithError("write failed");
  files.remove();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_Write);

}  // namespace

BENCHMARK_MAIN();

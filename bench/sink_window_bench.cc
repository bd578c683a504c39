// What a sink's snapshots cost its input window, without the network: a
// generator (its pool of 64 slots stands for a link's 64 credits) feeding a
// sink instance (no operators, a verifier), with checkpoint_interval_ms off
// and on. With snapshots, a slot comes back to the generator only once a
// snapshot holds its effect ("Operator snapshots" in docs/DESIGN.md), so
// the longer a slot waits for one, the more often the generator stands
// with its pool empty. Both in one process, in turn, on the same machine.
// (A sink whose input links have acks no longer holds its slots: it claims
// its frames, so this is now the cost a node with operators, or a sink
// behind a handover copy, pays.)
//
//   ninja -C build sink_window_bench
//   flock /tmp/cpu.lock build/bench/sink_window_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
//
// Arg: 0 snapshots off; else on, a snapshot at the latest when that many
// slots are held (runtime/process.cc sets half the input link's slots: 32),
// every 50 ms otherwise.
#include <benchmark/benchmark.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "graph/operator.h"
#include "graph/schema.h"
#include "loadgen/generator.h"
#include "node/node.h"
#include "sink/verifier.h"

namespace {

using namespace sluice;

double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

constexpr uint64_t kTuples = 4'000'000;  // 128 B tuples in 32 KiB events: 15,625 events

void BM_SinkWindow(benchmark::State& state) {
  const auto hold = static_cast<uint32_t>(state.range(0));
  Deployment d;
  d.tuple_bytes = 128;
  d.event_bytes = 32768;
  d.tuples = kTuples;
  d.streams = 4;
  d.loadgen_slots = 64;
  const std::string path = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") +
                           "/sink_window_bench." + std::to_string(getpid());
  double cpu = 0;
  for (auto _ : state) {
    const double c0 = cpu_s();
    auto gen = std::make_unique<Generator>(d, 0);
    auto ver = std::make_unique<Verifier>(gen->pool());
    Verifier* v = ver.get();
    OperatorChain chain;
    if (!OperatorChain::make({}, Schema::default_for(d.tuple_bytes), &chain).ok()) std::abort();
    InstanceConfig ic;
    ic.ring_slots = 1024;
    if (hold) {
      ic.checkpoint_path = path;
      ic.checkpoint_token = "bench";
      ic.checkpoint_ms = 50;
      ic.checkpoint_hold = hold;
    }
    Instance in(ic, std::move(gen), std::move(ver), std::move(chain), [] {});
    in.start();
    in.join();
    if (!in.status().ok() || v->counts().tuples != kTuples || v->counts().lost) {
      std::fprintf(stderr, "run failed: %s\n", in.status().message().c_str());
      std::abort();
    }
    cpu += cpu_s() - c0;
    ProcessSummary s;
    in.report(s);
    state.counters["snapshots"] = static_cast<double>(s.checkpoints);
  }
  // The process's CPU (all its threads) per run: on two cores, what the
  // snapshots cost in CPU and what their wait costs cannot be told apart by
  // the time alone.
  state.counters["cpu_ms"] = cpu * 1e3 / static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTuples));
}
BENCHMARK(BM_SinkWindow)->Arg(0)->Arg(32)->Arg(16)->Arg(8)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

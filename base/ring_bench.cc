// Descriptors/s through a descriptor ring (node/ring.h).
//
// 1. PushPop: one thread, try_push then try_pop of one descriptor: the cost of
//    the ring's index bookkeeping with no cache line moving between cores.
// 2. PushPopBatch: the same with try_push_n / try_pop_n of 32.
// 3. TwoThreads/<wait>/<batch>: a producer thread push()es one descriptor at a
//    time, as a stage does, and the benchmark thread pop_n()s up to <batch>, for
//    each Wait policy. This is what a ring between two stages can carry, and
//    what blocking costs against spinning. The consumer checks the sequence, so
//    a lost or reordered descriptor aborts the run.
//
// Items are descriptors; state.SetItemsProcessed makes the report's items/s
// descriptors/s. The two-thread runs use wall time (UseRealTime): the
// producer's CPU is not in the benchmark thread's CPU time.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "base/ring.h"

namespace {

// Laid out like sluice::Descriptor (six 32-bit fields, 24 bytes) without
// depending on the transport's header.
struct D {
  uint32_t a[6];
};
static_assert(sizeof(D) == 24);

constexpr size_t kRingSlots = 1024;  // the deployment's default ring_slots

void BM_PushPop(benchmark::State& state) {
  sluice::SpscRing<D> ring(kRingSlots);
  D in{};
  D out{};
  for (auto _ : state) {
    in.a[0]++;
    benchmark::DoNotOptimize(ring.try_push(in));
    benchmark::DoNotOptimize(ring.try_pop(out));
    benchmark::ClobberMemory();
  }
  if (out.a[0] != in.a[0]) state.SkipWithError("popped the wrong descriptor");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PushPop);

void BM_PushPopBatch(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  sluice::SpscRing<D> ring(kRingSlots);
  D in[64]{};
  D out[64]{};
  for (auto _ : state) {
    in[0].a[0]++;
    benchmark::DoNotOptimize(ring.try_push_n(in, batch));
    benchmark::DoNotOptimize(ring.try_pop_n(out, batch));
    benchmark::ClobberMemory();
  }
  if (out[0].a[0] != in[0].a[0]) state.SkipWithError("popped the wrong descriptor");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}
BENCHMARK(BM_PushPopBatch)->Arg(32);

// Descriptors moved per benchmark iteration: large enough that starting the
// producer thread is noise, small enough for a few iterations per second.
constexpr uint64_t kPerIteration = 1 << 20;

void BM_TwoThreads(benchmark::State& state) {
  const auto policy = static_cast<sluice::Wait>(state.range(0));
  const size_t batch = static_cast<size_t>(state.range(1));
  state.SetLabel(sluice::wait_name(policy));
  for (auto _ : state) {
    sluice::SpscRing<D> ring(kRingSlots);
    std::thread producer([&] {
      D d{};
      for (uint64_t i = 0; i < kPerIteration; ++i) {
        d.a[0] = static_cast<uint32_t>(i);
        if (!ring.push(d, policy)) std::abort();
      }
      ring.close();
    });
    D out[64];
    uint64_t expect = 0;
    for (;;) {
      size_t n = ring.pop_n(out, batch, policy);
      if (n == 0) break;
      for (size_t i = 0; i < n; ++i, ++expect) {
        if (out[i].a[0] != static_cast<uint32_t>(expect)) {
          std::fprintf(stderr, "ring_bench: got %u, expected %u\n", out[i].a[0],
                       static_cast<uint32_t>(expect));
          std::abort();
        }
      }
    }
    producer.join();
    if (expect != kPerIteration) {
      state.SkipWithError("consumer saw the wrong number of descriptors");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kPerIteration));
}
BENCHMARK(BM_TwoThreads)
    ->ArgNames({"wait", "batch"})
    ->ArgsProduct({{static_cast<int64_t>(sluice::Wait::kBlock), static_cast<int64_t>(sluice::Wait::kSpin),
                    static_cast<int64_t>(sluice::Wait::kHybrid)},
                   {1, 32}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

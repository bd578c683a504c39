// What the endpoints cost per event: the load generator making an event and
// the sink's verifier checking one, today's code against a frozen copy of the
// version before template events (kEventTemplate, transport/event.h: the
// generator hashes a body once per tuple count; namespace v1 below, byte for byte the hot
// code of loadgen/generator.cc and sink/verifier.cc as they were), so one run
// of one binary gives the before/after ratio.
//
// 1. Generate/<tuple_bytes>, GenerateV1/<tuple_bytes>: one event made into
//    one of kSlots slots in turn (Generator::make_event; no schedule, no pool
//    hand-off, which are the same before and after).
// 2. Verify/<tuple_bytes>, VerifyV1/<tuple_bytes>: a ring of kRing events
//    made by the generator of the same version, checked by a fresh verifier
//    (Verifier::verify_run), so every event is new to its stream; the time is
//    the thread's CPU time for the checks alone.
//
// event_time is the CPU time per event: the before/after ratio is
// GenerateV1's over Generate's, VerifyV1's over Verify's.
//
// Events of 32 KiB (the study's size) with 12 B, 128 B and 4 KiB tuples.
// items/s counts tuples; bytes/s the event's bytes.
//
//   ninja -C build -j1 endpoints_bench
//   flock /tmp/cpu.lock build/bench/endpoints_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true   (one command line)
#include <benchmark/benchmark.h>

#include <time.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "loadgen/generator.h"
#include "sink/verifier.h"
#include "transport/event.h"

namespace {

using namespace sluice;

constexpr uint32_t kEventBytes = 32768;
constexpr uint32_t kSlots = 8;   // generator slots used in turn (256 KiB of events)
constexpr uint32_t kRing = 32;   // events per pass of the verifier (1 MiB: beyond L2, as
                                 // events the receiver wrote on another core are)

Deployment deployment(uint32_t tuple_bytes) {
  Deployment d;
  d.tuple_bytes = tuple_bytes;
  d.event_bytes = kEventBytes;
  d.duration_s = 1e9;
  return d;
}

namespace v1 {

// loadgen/generator.cc before template events: the payload pattern written
// once per slot, then per event the whole header, every tuple's seq and key,
// and the checksum (two XXH3 calls over the whole event).
struct Generator {
  uint32_t tuple_bytes_, tuples_per_event_, data_bytes_ = 0, streams_ = 1, first_stream_ = 0;
  uint64_t tuple_limit_ = 0;
  std::vector<uint64_t> next_seq_{0}, events_{0};
  uint64_t generated_events_ = 0, generated_tuples_ = 0;
  std::vector<std::vector<std::byte>> slots_;

  explicit Generator(uint32_t tuple_bytes)
      : tuple_bytes_(tuple_bytes), tuples_per_event_(tuples_per_event(tuple_bytes, kEventBytes)) {
    for (uint32_t s = 0; s < kSlots; ++s) {
      slots_.emplace_back(event_wire_bytes(tuple_bytes_, tuples_per_event_, data_bytes_));
      std::byte* tuples = slots_.back().data() + kEventHeaderBytes;
      for (uint32_t t = 0; t < tuples_per_event_; ++t)
        for (uint32_t j = 12; j < tuple_bytes_; ++j)
          tuples[size_t{t} * tuple_bytes_ + j] = std::byte((j * 31 + 7) & 0xff);
    }
  }

  uint32_t make_event(uint32_t slot, uint64_t ts) {
    std::byte* p = slots_[slot].data();
    const uint32_t s = static_cast<uint32_t>(generated_events_ % streams_);
    uint32_t count = tuples_per_event_;
    if (tuple_limit_) count = static_cast<uint32_t>(std::min<uint64_t>(count, tuple_limit_ - generated_tuples_));
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.stream = first_stream_ + s;
    h.tuple_bytes = tuple_bytes_;
    h.first_seq = next_seq_[s];
    h.tuple_count = count;
    h.tuple_span = count;
    h.data_bytes = data_bytes_;
    h.send_ts_ns = ts;
    h.event_seq = events_[s];
    std::memcpy(p, &h, sizeof h);
    std::byte* t = p + kEventHeaderBytes;
    for (uint32_t i = 0; i < count; ++i, t += tuple_bytes_) {
      const uint64_t seq = h.first_seq + i;
      const uint32_t key = tuple_key_for(seq);
      std::memcpy(t + kTupleSeqOffset, &seq, 8);
      std::memcpy(t + kTupleKeyOffset, &key, 4);
    }
    seal_event(p);
    next_seq_[s] += count;
    ++events_[s];
    ++generated_events_;
    generated_tuples_ += count;
    return static_cast<uint32_t>(h.wire_bytes());
  }
};

// sink/verifier.cc's verify_run before template events (no results file, no
// bursts: the benchmark uses neither).
struct Verifier {
  VerifyCounts c_;
  LatencyHistogram latency_;
  LiveHistogram live_latency_;
  std::array<uint64_t, kMaxStreams> next_seq_{};
  bool dedupe_ = false;
  std::array<uint64_t, kMaxStreams> last_event_{};
  std::array<bool, kMaxStreams> seen_{};
  std::array<uint64_t, kMaxStreams> corrupt_unseen_{};
  std::array<uint64_t, kMaxStreams> missing_{};
  std::array<uint64_t, kMaxStreams> part_missing_{};

  uint64_t gap(uint32_t stream, uint64_t missing) {
    const uint64_t known = std::min(missing, corrupt_unseen_[stream]);
    corrupt_unseen_[stream] -= known;
    return missing - known;
  }

  void verify_run(const std::byte* run, const Descriptor& d, uint64_t now_ns) {
    size_t off = 0;
    for (uint32_t e = 0; e < d.events; ++e) {
      const std::byte* p = run + off;
      EventHeader h;
      std::memcpy(&h, p, sizeof h);
      off += h.wire_bytes();
      ++c_.events;
      c_.tuples += h.tuple_count;
      if (event_checksum(p) != h.checksum) {
        c_.corrupt += h.tuple_count;
        corrupt_unseen_[h.stream] += h.tuple_count;
        continue;
      }
      if (dedupe_ && !(h.flags & kEventPart)) {
        if (h.event_seq < last_event_[h.stream]) {
          --c_.events;
          c_.tuples -= h.tuple_count;
          c_.deduplicated += h.tuple_count;
          continue;
        }
        last_event_[h.stream] = h.event_seq + 1;
      }
      seen_[h.stream] = true;
      uint64_t& next = next_seq_[h.stream];
      if (h.first_seq > next) {
        const uint64_t g = gap(h.stream, h.first_seq - next);
        c_.lost += g;
        missing_[h.stream] += g;
      } else if (h.first_seq < next) {
        c_.duplicated += std::min<uint64_t>(h.tuple_count, next - h.first_seq);
      }
      if (h.first_seq + h.tuple_span > next) next = h.first_seq + h.tuple_span;
      if (h.flags & kEventPart) part_missing_[h.stream] += h.tuple_span - h.tuple_count;
      else c_.filtered += h.tuple_span - h.tuple_count;
      const std::byte* t = p + kEventHeaderBytes;
      uint64_t prev = 0;
      for (uint32_t i = 0; i < h.tuple_count; ++i, t += h.tuple_bytes) {
        uint64_t s = tuple_seq(t);
        bool ok = s >= h.first_seq && s < h.first_seq + h.tuple_span && (i == 0 || s > prev);
        c_.corrupt += !ok;
        prev = s;
      }
      const uint64_t lat = now_ns > h.send_ts_ns ? now_ns - h.send_ts_ns : 0;
      latency_.record(lat);
      live_latency_.record(lat);
    }
  }
};

}  // namespace v1

// Rates per tuple and byte, and each event's cost (event_time: CPU time per
// event, the number to compare).
void count(benchmark::State& state, uint32_t tuple_bytes, uint32_t events_per_iteration = 1) {
  const uint32_t n = tuples_per_event(tuple_bytes, kEventBytes);
  const int64_t events = int64_t(state.iterations()) * events_per_iteration;
  state.SetItemsProcessed(events * n);
  state.SetBytesProcessed(events * int64_t(event_wire_bytes(tuple_bytes, n)));
  state.counters["event_time"] =
      benchmark::Counter(double(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(std::to_string(n) + " tuples/event");
}

void Generate(benchmark::State& state) {
  const uint32_t tb = static_cast<uint32_t>(state.range(0));
  Generator g(deployment(tb), 0);
  uint32_t slot = 0;
  const uint64_t ts = wall_clock_ns();
  for (auto _ : state) {
    benchmark::DoNotOptimize(g.make_event(slot, ts));
    slot = (slot + 1) % kSlots;
    benchmark::ClobberMemory();
  }
  count(state, tb);
}

void GenerateV1(benchmark::State& state) {
  const uint32_t tb = static_cast<uint32_t>(state.range(0));
  v1::Generator g(tb);
  uint32_t slot = 0;
  const uint64_t ts = wall_clock_ns();
  for (auto _ : state) {
    benchmark::DoNotOptimize(g.make_event(slot, ts));
    slot = (slot + 1) % kSlots;
    benchmark::ClobberMemory();
  }
  count(state, tb);
}

// kRing consecutive events of stream 0, as generator G makes them (each
// verifier checks its own generator's events: v1's carry the full checksum,
// today's may be template events).
struct Ring {
  std::vector<std::vector<std::byte>> events;
  template <class G>
  Ring(G& g, const std::byte* (*slot)(G&, uint32_t)) {
    const uint64_t ts = wall_clock_ns();
    for (uint32_t i = 0; i < kRing; ++i) {
      const uint32_t bytes = wire_bytes(g.make_event(0, ts));
      const std::byte* p = slot(g, 0);
      events.emplace_back(p, p + bytes);
    }
  }
  static uint32_t wire_bytes(uint32_t b) { return b; }
  static uint32_t wire_bytes(const Descriptor& d) { return d.bytes; }
};

Ring ring_now(uint32_t tb) {
  Generator g(deployment(tb), 0);
  return Ring(g, +[](Generator& g, uint32_t s) -> const std::byte* { return g.pool().slot(s); });
}
Ring ring_v1(uint32_t tb) {
  v1::Generator g(tb);
  return Ring(g, +[](v1::Generator& g, uint32_t s) -> const std::byte* { return g.slots_[s].data(); });
}

const VerifyCounts& counts_of(const Verifier& v) { return v.counts(); }
const VerifyCounts& counts_of(const v1::Verifier& v) { return v.c_; }

double thread_cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// One iteration checks the whole ring; its time is this thread's CPU time for
// that (manual time), so starting the verifier afresh after it is not counted.
template <class V, class Make>
void verify(benchmark::State& state, Ring (*made)(uint32_t), Make make) {
  const uint32_t tb = static_cast<uint32_t>(state.range(0));
  Ring ring = made(tb);
  const uint64_t now = wall_clock_ns();
  for (auto _ : state) {
    std::unique_ptr<V> v = make();
    const double t0 = thread_cpu_now();
    for (auto& ev : ring.events)
      v->verify_run(ev.data(), Descriptor{0, 0, static_cast<uint32_t>(ev.size()), 1, 0, 0}, now);
    state.SetIterationTime(thread_cpu_now() - t0);
    const VerifyCounts& c = counts_of(*v);
    if (c.lost || c.corrupt || c.duplicated || c.tuples == 0) {
      state.SkipWithError("the ring did not verify");
      break;
    }
  }
  count(state, tb, kRing);
}

void Verify(benchmark::State& state) {
  static SlotPool pool(1, 64);  // verify_run never touches it
  verify<Verifier>(state, ring_now, [] { return std::make_unique<Verifier>(pool); });
}

void VerifyV1(benchmark::State& state) {
  verify<v1::Verifier>(state, ring_v1, [] { return std::make_unique<v1::Verifier>(); });
}

}  // namespace

BENCHMARK(GenerateV1)->Arg(12)->Arg(128)->Arg(4096);
BENCHMARK(Generate)->Arg(12)->Arg(128)->Arg(4096);
BENCHMARK(VerifyV1)->Arg(12)->Arg(128)->Arg(4096)->UseManualTime();
BENCHMARK(Verify)->Arg(12)->Arg(128)->Arg(4096)->UseManualTime();

BENCHMARK_MAIN();

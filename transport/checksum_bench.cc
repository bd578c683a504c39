// Event checksum cost: the XXH3 event_checksum (transport/event.cc) against the
// hand-written xxHash64-shaped checksum64 it replaced (copied below as the
// baseline, byte for byte as it was in event.cc before wire version 2).
//
// 1. Old/<bytes>: checksum64 over the header's 56 bytes, seeding checksum64
//    over the body, as the old event_checksum did.
// 2. Xxh3/<bytes>: event_checksum, i.e. XXH3_64bits_withSeed_dispatch twice.
//
// Sizes: a 32 KiB event (255 tuples of 128 B plus 64 B of data: 32768 bytes
// in all), where throughput matters, and a 76-byte one-tuple event (12 B
// tuple), where the fixed cost per call does. Bytes/s counts the whole event.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/event.h"

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t load64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t lane(uint64_t acc, uint64_t w) { return rotl(acc + w * kP2, 31) * kP1; }

uint64_t checksum64(const std::byte* p, size_t n, uint64_t seed) {
  const std::byte* end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t a = seed + kP1 + kP2, b = seed + kP2, c = seed, d = seed - kP1;
    const std::byte* limit = end - 32;
    do {
      a = lane(a, load64(p));
      b = lane(b, load64(p + 8));
      c = lane(c, load64(p + 16));
      d = lane(d, load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
  } else {
    h = seed + kP3;
  }
  h += n;
  while (p + 8 <= end) {
    h ^= lane(0, load64(p));
    h = rotl(h, 27) * kP1 + kP3;
    p += 8;
  }
  while (p < end) {
    h ^= static_cast<uint64_t>(*p) * kP3;
    h = rotl(h, 11) * kP1;
    ++p;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t old_event_checksum(const std::byte* event) {
  sluice::EventHeader h;
  std::memcpy(&h, event, sizeof h);
  const uint64_t c = checksum64(event, sluice::kChecksumOffset, 0);
  return checksum64(event + sluice::kEventHeaderBytes, h.tuple_block_bytes() + h.data_bytes, c);
}

// Arg 0: the 32 KiB event; arg 1: the 76-byte one-tuple event.
std::vector<std::byte> make_event(int which) {
  const uint32_t tuple_bytes = which == 0 ? 128 : 12;
  const uint32_t tuples = which == 0 ? 255 : 1;
  const uint32_t data = which == 0 ? 64 : 0;
  std::vector<std::byte> ev(sluice::event_wire_bytes(tuple_bytes, tuples, data));
  for (size_t i = 0; i < ev.size(); ++i) ev[i] = std::byte(i * 131 + 7);
  sluice::EventHeader h{};
  h.magic = sluice::kEventMagic;
  h.version = sluice::kWireVersion;
  h.header_bytes = sluice::kEventHeaderBytes;
  h.tuple_bytes = tuple_bytes;
  h.tuple_count = tuples;
  h.tuple_span = tuples;
  h.data_bytes = data;
  std::memcpy(ev.data(), &h, sizeof h);
  return ev;
}

template <uint64_t (*F)(const std::byte*)>
void run(benchmark::State& state) {
  const auto ev = make_event(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(ev.data());
    benchmark::DoNotOptimize(F(ev.data()));
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(ev.size()));
  state.SetLabel(std::to_string(ev.size()) + " B");
}

void Old(benchmark::State& state) { run<old_event_checksum>(state); }
void Xxh3(benchmark::State& state) { run<sluice::event_checksum>(state); }

}  // namespace

BENCHMARK(Old)->Arg(0)->Arg(1);
BENCHMARK(Xxh3)->Arg(0)->Arg(1);

BENCHMARK_MAIN();

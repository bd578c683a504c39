// sluice-bench-codec: each format's decoder and encoder on the esper
// schema's rows (p0 uniform in [0, 8), p1 in [0, 1000), as the load
// generator makes them), one thread, records in memory: records/s
// (items_per_second) and input or output bytes/s (bytes_per_second).
// Decoding includes finding each line's end (memchr), as a file source does.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/record.h"

namespace sluice {
namespace {

constexpr size_t kRows = 1 << 16;

Schema esper() {
  Schema s;
  (void)Schema::make("esper", {{"p0", FieldType::kI64, 0}, {"p1", FieldType::kI64, 0}}, 0, &s);
  return s;
}

// kRows tuples of the esper schema.
std::vector<std::byte> tuples(const Schema& s) {
  std::vector<std::byte> t(kRows * s.tuple_bytes());
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < kRows; ++i) {
    const int64_t v[3] = {int64_t(i), int64_t(rng() % 8), int64_t(rng() % 1000)};
    std::memcpy(t.data() + i * s.tuple_bytes(), v, 24);
  }
  return t;
}

// The tuples as a file of `format` would hold them (lines end in '\n').
std::string file_of(const Schema& s, RecordFormat format) {
  RecordEncoder enc;
  (void)RecordEncoder::make(s, format, {}, &enc);
  const std::vector<std::byte> t = tuples(s);
  std::string out, rec(enc.max_bytes(), '\0');
  for (size_t i = 0; i < kRows; ++i) {
    out.append(rec.data(), enc.encode(t.data() + i * s.tuple_bytes(), rec.data()));
    if (format != RecordFormat::kBinary) out += '\n';
  }
  return out;
}

void BM_Decode(benchmark::State& state, RecordFormat format) {
  const Schema s = esper();
  RecordDecoder dec;
  (void)RecordDecoder::make(s, format, {}, &dec);
  const std::string file = file_of(s, format);
  std::vector<std::byte> out(1024 * s.tuple_bytes());
  const size_t rb = dec.record_bytes();
  for (auto _ : state) {
    const char* p = file.data();
    const char* const e = p + file.size();
    size_t k = 0;
    RecordError err;
    while (p < e) {
      const char* q = format == RecordFormat::kBinary ? p + rb : static_cast<const char*>(std::memchr(p, '\n', e - p));
      if (!dec.decode(std::string_view(p, q - p), out.data() + (k++ & 1023) * s.tuple_bytes(), &err)) state.SkipWithError("decode");
      p = q + (format == RecordFormat::kBinary ? 0 : 1);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * file.size());
}

void BM_Encode(benchmark::State& state, RecordFormat format) {
  const Schema s = esper();
  RecordEncoder enc;
  (void)RecordEncoder::make(s, format, {}, &enc);
  const std::vector<std::byte> t = tuples(s);
  std::string buf(kRows * (enc.max_bytes() + 1), '\0');
  size_t bytes = 0;
  for (auto _ : state) {
    char* o = buf.data();
    for (size_t i = 0; i < kRows; ++i) {
      o += enc.encode(t.data() + i * s.tuple_bytes(), o);
      if (format != RecordFormat::kBinary) *o++ = '\n';
    }
    bytes = static_cast<size_t>(o - buf.data());
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * bytes);
}

BENCHMARK_CAPTURE(BM_Decode, csv, RecordFormat::kCsv);
BENCHMARK_CAPTURE(BM_Decode, jsonl, RecordFormat::kJsonl);
BENCHMARK_CAPTURE(BM_Decode, binary, RecordFormat::kBinary);
BENCHMARK_CAPTURE(BM_Encode, csv, RecordFormat::kCsv);
BENCHMARK_CAPTURE(BM_Encode, jsonl, RecordFormat::kJsonl);
BENCHMARK_CAPTURE(BM_Encode, binary, RecordFormat::kBinary);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();

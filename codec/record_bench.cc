// sluice-bench-codec: each format's decoder and encoder on the esper
// schema's rows (p0 uniform in [0, 8), p1 in [0, 1000), as the load
// generator makes them), one thread, records in memory: records/s
// (items_per_second) and input or output bytes/s (bytes_per_second).
// Decoding includes finding each line's end (memchr), as a file source does.
//
// BM_ReadFile: a CSV file of the esper schema (SLUICE_BENCH_FILE, else
// 1<<24 rows made in TMPDIR once), read and decoded whole per iteration,
// in the page cache: through RecordFile's buffer of each size (read(2)),
// against mmap with bounded residency (MADV_SEQUENTIAL, and the window
// behind the cursor dropped with MADV_DONTNEED every 4 MiB). The choice of
// the file source's reader and buffer size is made from this.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "codec/file_reader.h"
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

// The big file: made once (as file_of, many times over), kept for the next run.
const std::string& big_file() {
  static const std::string path = [] {
    if (const char* f = std::getenv("SLUICE_BENCH_FILE")) return std::string(f);
    const std::string p = (std::filesystem::temp_directory_path() / "sluice-bench-esper-16M.csv").string();
    if (!std::filesystem::exists(p)) {
      const Schema s = esper();
      const std::string body = file_of(s, RecordFormat::kCsv);
      FILE* f = std::fopen((p + ".tmp").c_str(), "wb");
      std::fputs("p0,p1\n", f);
      for (int i = 0; i < (1 << 24) / int(kRows); ++i) std::fwrite(body.data(), 1, body.size(), f);
      std::fclose(f);
      std::filesystem::rename(p + ".tmp", p);
    }
    return p;
  }();
  return path;
}

void BM_ReadFile(benchmark::State& state) {
  const Schema s = esper();
  const size_t buffer = static_cast<size_t>(state.range(0));
  std::vector<std::byte> out(1024 * s.tuple_bytes());
  uint64_t rows = 0, bytes = 0;
  for (auto _ : state) {
    RecordFile f;
    if (!RecordFile::open(big_file(), RecordFormat::kCsv, 0, &f, buffer).ok()) state.SkipWithError("open");
    RecordDecoder dec;
    (void)RecordDecoder::make(s, RecordFormat::kCsv, f.header(), &dec);
    std::string_view rec;
    Status st;
    RecordError err;
    size_t k = 0;
    while (f.next(&rec, &st))
      if (!dec.decode(rec, out.data() + (k++ & 1023) * s.tuple_bytes(), &err)) state.SkipWithError("decode");
    rows += k;
    bytes += f.bytes_read();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["rows_per_s"] = benchmark::Counter(double(rows), benchmark::Counter::kIsRate);
  state.counters["bytes_per_s"] = benchmark::Counter(double(bytes), benchmark::Counter::kIsRate);
}

void BM_MmapFile(benchmark::State& state) {
  const Schema s = esper();
  constexpr size_t kWindow = 4 << 20;
  std::vector<std::byte> out(1024 * s.tuple_bytes());
  uint64_t rows = 0, bytes = 0;
  for (auto _ : state) {
    const int fd = ::open(big_file().c_str(), O_RDONLY);
    struct stat sb {};
    ::fstat(fd, &sb);
    const size_t size = static_cast<size_t>(sb.st_size);
    char* base = static_cast<char*>(::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0));
    ::madvise(base, size, MADV_SEQUENTIAL);
    const char* p = static_cast<const char*>(std::memchr(base, '\n', size)) + 1;
    const char* const e = base + size;
    std::vector<std::string> header = {"p0", "p1"};
    RecordDecoder dec;
    (void)RecordDecoder::make(s, RecordFormat::kCsv, header, &dec);
    RecordError err;
    size_t k = 0;
    char* dropped = base;
    while (p < e) {
      const char* q = static_cast<const char*>(std::memchr(p, '\n', e - p));
      if (!q) q = e;
      if (!dec.decode(std::string_view(p, q - p), out.data() + (k++ & 1023) * s.tuple_bytes(), &err))
        state.SkipWithError("decode");
      p = q + 1;
      // Bounded residency: the pages behind the cursor go.
      if (p - dropped >= static_cast<ptrdiff_t>(2 * kWindow)) {
        ::madvise(dropped, kWindow, MADV_DONTNEED);
        dropped += kWindow;
      }
    }
    ::munmap(base, size);
    ::close(fd);
    rows += k;
    bytes += size;
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["rows_per_s"] = benchmark::Counter(double(rows), benchmark::Counter::kIsRate);
  state.counters["bytes_per_s"] = benchmark::Counter(double(bytes), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_ReadFile)->Arg(64 << 10)->Arg(256 << 10)->Arg(1 << 20)->Arg(4 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MmapFile)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_Decode, csv, RecordFormat::kCsv);
BENCHMARK_CAPTURE(BM_Decode, jsonl, RecordFormat::kJsonl);
BENCHMARK_CAPTURE(BM_Decode, binary, RecordFormat::kBinary);
BENCHMARK_CAPTURE(BM_Encode, csv, RecordFormat::kCsv);
BENCHMARK_CAPTURE(BM_Encode, jsonl, RecordFormat::kJsonl);
BENCHMARK_CAPTURE(BM_Encode, binary, RecordFormat::kBinary);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();

// Fuzzes the record decoders (csv, jsonl, binary) and the file reader that
// cuts a file into records, as a file source runs them: the input is one
// byte of choices (format, schema, read buffer size), then a file's bytes.
// Whatever the bytes: a Status or a RecordError with its message, never a
// crash or undefined behaviour; and
//   - the reader gives exactly the file's records (its non-empty lines
//     without '\r\n', or its record_bytes chunks and a short tail), up to
//     a line longer than its buffer, which is an error;
//   - a record that decodes encodes into one that decodes to the same tuple.
//
// SLUICE_FUZZ_SEEDS=DIR writes seeds (good files of each format and schema,
// and files with the bad rows the source must refuse) into DIR and exits:
// how codec/fuzz/corpus was made.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "codec/file_reader.h"
#include "codec/record.h"

namespace sluice {
namespace {

const Schema& schema(int which) {
  static const Schema* s[2] = {nullptr, nullptr};
  if (!s[which]) {
    auto* made = new Schema;
    std::vector<FieldSpec> f;
    if (which == 0) {
      f = {{"p0", FieldType::kI64, 0}, {"p1", FieldType::kI64, 0}};
    } else {
      f = {{"a", FieldType::kI32, 0}, {"c", FieldType::kU32, 0}, {"t", FieldType::kTimestamp, 0},
           {"x", FieldType::kF64, 0}, {"s", FieldType::kBytes, 5}};
    }
    if (!Schema::make(which ? "mixed" : "esper", f, 0, made).ok()) std::abort();
    s[which] = made;
  }
  return *s[which];
}

// Same tuple after seq, a NaN equal to any NaN.
bool same_tuple(const Schema& s, const std::byte* a, const std::byte* b) {
  for (size_t i = 1; i < s.fields().size(); ++i) {
    FieldRef r;
    s.find(s.fields()[i].name, &r);
    if (r.type == FieldType::kF64) {
      double x, y;
      std::memcpy(&x, a + r.offset, 8);
      std::memcpy(&y, b + r.offset, 8);
      if (!(std::isnan(x) && std::isnan(y)) && std::memcmp(&x, &y, 8) != 0) return false;
    } else if (std::memcmp(a + r.offset, b + r.offset, r.width) != 0) {
      return false;
    }
  }
  return true;
}

// The records a reader must give: non-empty lines, '\r' before '\n' dropped
// (csv: the first is the header), or fixed chunks and a short tail.
std::vector<std::string> expected_records(const std::string& file, bool binary, size_t rb) {
  std::vector<std::string> out;
  if (binary) {
    for (size_t at = 0; at < file.size(); at += rb) out.push_back(file.substr(at, rb));
    return out;
  }
  size_t b = 0;
  while (b < file.size()) {
    size_t e = file.find('\n', b);
    const bool last = e == std::string::npos;
    if (last) e = file.size();
    size_t r = e;
    if (r > b && file[r - 1] == '\r') --r;
    if (r > b) out.push_back(file.substr(b, r - b));
    b = e + 1;
  }
  return out;
}

void run(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const RecordFormat format = static_cast<RecordFormat>(data[0] % 3);
  const Schema& s = schema((data[0] / 3) % 2);
  const size_t buffer = 16 + data[1];
  const std::string file(reinterpret_cast<const char*>(data + 2), size - 2);
  const int fd = ::memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (!file.empty() && ::write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) std::abort();
  ::lseek(fd, 0, SEEK_SET);

  RecordDecoder probe;
  (void)RecordDecoder::make(s, RecordFormat::kBinary, {}, &probe);
  const size_t rb = probe.record_bytes();
  RecordFile f;
  Status st = RecordFile::open("fuzz.in", format, static_cast<uint32_t>(rb), &f, buffer, fd);
  if (!st.ok()) return;
  RecordDecoder dec;
  if (!RecordDecoder::make(s, format, f.header(), &dec).ok()) return;
  RecordEncoder enc;
  if (!RecordEncoder::make(s, format, {}, &enc).ok()) std::abort();
  RecordDecoder back_dec;
  if (!RecordDecoder::make(s, format, {}, &back_dec).ok()) std::abort();

  std::vector<std::string> want = expected_records(file, format == RecordFormat::kBinary, rb);
  size_t got = format == RecordFormat::kCsv ? 1 : 0;  // the header was a record
  std::vector<std::byte> t(s.tuple_bytes()), back(s.tuple_bytes());
  std::string out(enc.max_bytes(), '\0');
  std::string_view rec;
  while (f.next(&rec, &st)) {
    if (got >= want.size() || rec != want[got]) __builtin_trap();  // not the file's next record
    ++got;
    RecordError e;
    if (!dec.decode(rec, t.data(), &e)) {
      if (dec.explain(e, rec, f.where()).empty()) __builtin_trap();
      continue;
    }
    const size_t n = enc.encode(t.data(), out.data());
    if (n > enc.max_bytes()) __builtin_trap();
    if (!back_dec.decode(std::string_view(out.data(), n), back.data(), &e)) __builtin_trap();
    if (!same_tuple(s, t.data(), back.data())) __builtin_trap();
  }
  // Every record, unless a line was longer than the buffer.
  if (st.ok() && got != want.size()) __builtin_trap();
  if (!st.ok() && st.message().find("longer than the read buffer") == std::string::npos) __builtin_trap();
}

void write_seed(const char* dir, const std::string& name, uint8_t choice, const std::string& file) {
  const std::string path = std::string(dir) + "/" + name;
  FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) std::abort();
  std::fputc(choice, out);
  std::fputc(64, out);  // an 80-byte buffer
  std::fwrite(file.data(), 1, file.size(), out);
  std::fclose(out);
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::run(data, size);
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("SLUICE_FUZZ_SEEDS");
  if (!dir) return 0;
  using sluice::write_seed;
  // choice: format (0 csv, 1 jsonl, 2 binary) + 3 * schema (0 esper, 1 mixed)
  write_seed(dir, "csv-esper", 0, "p0,p1\n3,517\n7,12\r\n\n0,999\n");
  write_seed(dir, "csv-esper-bad", 0, "p1,p0\n3\n3,x\n1,2,3\n\"4\",\"5\"\n,\n99999999999999999999,1\n4,5");
  write_seed(dir, "csv-mixed", 3,
             "s,x,t,c,a,extra\n\"a,\"\"b\",1.5e3,1700000000000000000,4000000000,-7,z\nIBM,nan,0,0,0,\n"
             "toolong,1,1,1,1,1\n1,1,-1,1,1,1\n");
  write_seed(dir, "jsonl-esper", 1, "{\"p0\":3,\"p1\":517}\n{ \"p1\" : \"12\", \"p0\": -1, \"x\": [1, {\"y\": null}] }\n");
  write_seed(dir, "jsonl-esper-bad", 1, "{\"p0\":3}\n{\"p0\":1,\"p0\":2,\"p1\":3}\n{\"p0\":null,\"p1\":1}\n[1]\n{\"p0\":1,\"p1\":2}x\n");
  write_seed(dir, "jsonl-mixed", 4,
             "{\"a\":1,\"c\":2,\"t\":3,\"x\":-0.5,\"s\":\"A\\u00e9\\n\"}\n{\"a\":1,\"c\":2,\"t\":3,\"x\":\"inf\",\"s\":\"\\ud83d\\ude00\"}\n");
  std::string bin;
  for (int64_t v : {3, 517, 7, 12, -1, 0}) bin.append(reinterpret_cast<const char*>(&v), 8);
  write_seed(dir, "binary-esper", 2, bin);
  write_seed(dir, "binary-esper-short", 2, bin + "\x01\x02\x03");
  std::exit(0);
}

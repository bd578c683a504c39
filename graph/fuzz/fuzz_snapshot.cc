// Fuzzes the snapshot reader (graph/checkpoint.h) with the function a
// restarted node calls, into group-by, moving-average, correlate and grace
// join chains.
// An input whose first byte is odd gets a valid header (magic, version,
// length, XXH3) around the rest, so the payload parser is reached, not only
// the checksum. Whatever the bytes: a Status, never a crash; and an operator
// that loaded a snapshot must then take tuples without a crash either.
//
// SLUICE_FUZZ_SEEDS=DIR writes seed snapshots (real ones, taken after some
// input) into DIR and exits: how graph/fuzz/snapshot_corpus was made.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <xxhash.h>

#include "graph/checkpoint.h"
#include "graph/operator.h"

namespace sluice {
namespace {

struct NullEmitter final : Emitter {
  std::byte slot[4096];
  std::byte* acquire(uint32_t* cap) override {
    *cap = sizeof slot;
    return slot;
  }
  void commit(uint32_t, uint32_t, uint32_t) override {}
};

OperatorConfig config(const std::string& kind, std::vector<std::pair<std::string, std::string>> set) {
  const OperatorSpec* spec = find_operator_spec(kind);
  OperatorConfig c;
  c.kind = kind;
  for (const auto& p : spec->params) c.params.emplace_back(p.key, p.def ? p.def : "");
  for (auto& [k, v] : set) c.set(k, v);
  c.derived_stream = 1;
  return c;
}

struct Fixture {
  Schema schema;
  static constexpr int kChains = 5;
  OperatorChain chains[kChains];
  std::vector<std::byte> event;  // one sealed event of 40 tuples
  Descriptor desc{};
  NullEmitter em;
  Fixture() {
    Schema::make("s", {{"p0", FieldType::kI64, 0}, {"p1", FieldType::kI64, 0}, {"ts", FieldType::kU64, 0}}, 0,
                 &schema);
    const std::vector<OperatorConfig> cfgs[kChains] = {
        {config("filter", {{"field", "p1"}, {"op", "ge"}, {"value", "10"}}),
         config("groupby", {{"group_by", "p0"}, {"aggregates", "sum(p1), count, min(p1)"},
                            {"window", "count"}, {"size", "90"}, {"slide", "30"}, {"max_groups", "8"}})},
        {config("groupby", {{"group_by", "p0"}, {"aggregates", "avg(p1)"}, {"window", "time"},
                            {"size", "100"}, {"time_field", "ts"}, {"max_groups", "8"}})},
        {config("moving_avg", {{"field", "p1"}, {"window", "50"}, {"cache_aware", "on"}, {"staging", "16"}})},
        {config("correlate", {{"txn", "p0"}, {"event", "p1"}, {"time", "ts"}, {"steps", "3"}, {"within", "60"},
                              {"max_open", "6"}})},
        {config("join", {{"method", "grace"}, {"key", "p0"}, {"fields", "p1"}, {"table_rows", "6"},
                         {"batch_tuples", "64"}})}};
    for (int i = 0; i < kChains; ++i)
      if (!OperatorChain::make(cfgs[i], schema, &chains[i]).ok()) std::abort();
    const uint32_t tb = schema.tuple_bytes(), n = 40;
    EventHeader h{kEventMagic, kWireVersion, kEventHeaderBytes, 0, tb, 0, n, n, 0, 0, 1, 0, 0};
    event.resize(h.wire_bytes());
    std::memcpy(event.data(), &h, sizeof h);
    for (uint32_t i = 0; i < n; ++i) {
      const int64_t v[3] = {int64_t(i % 11), int64_t(i * 7 % 50), int64_t(i * 3)};
      std::memcpy(event.data() + kEventHeaderBytes + i * tb + 8, v, sizeof v);
    }
    seal_event(event.data());
    desc = {0, 0, uint32_t(event.size()), 1, n, 0};
  }
  void feed(OperatorChain& c) {
    std::vector<std::byte> copy = event;  // a filter rewrites in place
    Descriptor d = desc;
    for (size_t i = 0; i < c.size(); ++i)
      if (c.op(i).process(copy.data(), d, em) == Operator::kConsumed) break;
  }
};

Fixture& fixture() {
  static Fixture* f = new Fixture;
  return *f;
}

std::string with_header(const uint8_t* p, size_t n) {
  std::string out("SLUICESN", 8);
  const uint32_t version = kSnapshotVersion, reserved = 0;
  const uint64_t bytes = n, sum = XXH3_64bits(p, n);
  out.append(reinterpret_cast<const char*>(&version), 4);
  out.append(reinterpret_cast<const char*>(&reserved), 4);
  out.append(reinterpret_cast<const char*>(&bytes), 8);
  out.append(reinterpret_cast<const char*>(&sum), 8);
  out.append(reinterpret_cast<const char*>(p), n);
  return out;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("SLUICE_FUZZ_SEEDS");
  if (!dir) return 0;
  sluice::Fixture& f = sluice::fixture();
  for (int c = 0; c < sluice::Fixture::kChains; ++c) {
    for (int rounds : {0, 1, 5}) {
      for (int r = 0; r < rounds; ++r) f.feed(f.chains[c]);
      sluice::CheckpointState st;
      st.number = rounds + 1;
      st.watermarks.assign(f.chains[c].size(), 0);
      st.next_seq[0] = rounds;
      sluice::SnapshotOut scratch;
      std::string file;
      sluice::encode_snapshot("fuzz", f.chains[c], st, &scratch, &file);
      // Seeds go in payload form (first byte odd): the fuzzer keeps the header valid.
      const std::string path = std::string(dir) + "/chain" + std::to_string(c) + "-" + std::to_string(rounds);
      FILE* out = std::fopen(path.c_str(), "wb");
      if (!out) std::abort();
      std::fputc(1, out);
      std::fwrite(file.data() + sluice::kSnapshotHeaderBytes, 1, file.size() - sluice::kSnapshotHeaderBytes, out);
      std::fclose(out);
    }
  }
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  sluice::Fixture& f = sluice::fixture();
  const std::string bytes = (data[0] & 1) ? sluice::with_header(data + 1, size - 1)
                                          : std::string(reinterpret_cast<const char*>(data + 1), size - 1);
  for (int c = 0; c < sluice::Fixture::kChains; ++c) {
    sluice::CheckpointState st;
    bool stale = false;
    sluice::Status s = sluice::decode_snapshot(bytes.data(), bytes.size(), "fuzz", "fuzz", f.chains[c], &st, &stale);
    if (s.ok() && !stale) f.feed(f.chains[c]);
  }
  return 0;
}

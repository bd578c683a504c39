// Fuzzes a sink's part of a snapshot (Verifier::load: its counts, the
// latency histogram's used range, every stream's position and dedupe mark,
// how far its results file was written), the bytes a restarted sink reads
// after the file's header and checksum passed (graph/fuzz/fuzz_snapshot
// covers those, and the operators' part). Whatever the bytes: a Status,
// never a crash or undefined behaviour; and a verifier that loaded them
// must then take events (of the streams the snapshot names) and report
// without either.
//
// SLUICE_FUZZ_SEEDS=DIR writes seeds (real verifier states, taken after 0,
// 40 and 400 events of 4 streams) into DIR and exits: how
// sink/fuzz/corpus was made.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/snapshot.h"
#include "graph/config.h"
#include "loadgen/generator.h"
#include "node/metrics.h"
#include "sink/verifier.h"

namespace sluice {
namespace {

Deployment deployment() {
  Deployment d;
  d.tuple_bytes = 128;
  d.event_bytes = 1024;
  d.streams = 4;
  d.loadgen_slots = 8;
  d.tuples = uint64_t{1} << 60;  // not a duration: the fuzzer runs longer than one
  return d;
}

Generator& generator() {
  static Generator* g = new Generator(deployment(), 0);
  return *g;
}

// The next `n` events into v (the generator's streams go on from one input
// to the next: a loaded verifier sees them ahead of, behind or at its
// positions).
void feed(Verifier& v, int n) {
  Descriptor d[1];
  size_t got = 0;
  for (int i = 0; i < n; ++i) {
    if (!generator().next(std::span<Descriptor>(d, 1), &got).ok() || got == 0) std::abort();
    if (Status st = v.consume(std::span<const Descriptor>(d, 1)); !st) {
      std::fprintf(stderr, "consume: %s\n", st.message().c_str());
      std::abort();
    }
  }
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("SLUICE_FUZZ_SEEDS");
  if (!dir) return 0;
  for (int events : {0, 40, 400}) {
    sluice::Verifier v(sluice::generator().pool());
    sluice::feed(v, events);
    sluice::SnapshotOut out;
    v.save(out);
    const std::string path = std::string(dir) + "/verifier-" + std::to_string(events);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    std::fwrite(out.data().data(), 1, out.data().size(), f);
    std::fclose(f);
  }
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::Verifier v(sluice::generator().pool());
  sluice::SnapshotIn in(data, size);
  if (!v.load(in).ok()) return 0;
  sluice::feed(v, 3);
  sluice::ProcessSummary s;
  v.report(s);
  return 0;
}

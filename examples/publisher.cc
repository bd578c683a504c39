// Publishes quotes into the graph of deploy/examples/app.yaml: claims room
// for a batch of tuples in the stream's own slots, writes each quote there,
// commits. When the graph falls behind, claim says so (kBackPressured) and
// this program waits; nothing queues up without bound.
//
//   sluice-example-publisher RUN_DIR [TUPLES] [SECONDS]   (default 1000000 tuples)
#include <sluice/publisher.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR [TUPLES] [SECONDS]\n", argv[0]);
    return 2;
  }
  const uint64_t want = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  const double seconds = argc > 3 ? std::strtod(argv[3], nullptr) : 0;

  sluice::Connect where;
  where.run_dir = argv[1];
  where.process = "publisher";
  std::unique_ptr<sluice::Publisher> pub;
  if (sluice::Result r = sluice::Publisher::open(where, &pub); !r) {
    std::fprintf(stderr, "cannot publish: %s\n", r.message.c_str());
    return 1;
  }
  // The schema's fields by name, resolved once with their types: each
  // write below is one store.
  const sluice::Layout& quotes = pub->layout();
  sluice::TypedField<uint32_t> key;
  sluice::TypedField<double> price;
  sluice::TypedField<int32_t> size;
  if (!quotes.typed("key", &key) || !quotes.typed("price", &price) || !quotes.typed("size", &size)) {
    std::fprintf(stderr, "the stream is not app.yaml's quotes: %s\n", quotes.describe().c_str());
    return 1;
  }

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  uint64_t sent = 0;
  while (sent < want && (seconds <= 0 || elapsed() < seconds)) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(pub->max_tuples(), want - sent));
    sluice::Claim room;
    const sluice::Code got = pub->claim(n, &room, 1000ms);
    if (got == sluice::Code::kBackPressured) continue;  // the graph is behind: wait again
    if (got != sluice::Code::kOk) {
      std::fprintf(stderr, "claim: %s\n", pub->error().c_str());
      return 1;
    }
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t q = sent + i;
      const sluice::TupleRef t = room.tuple(i);
      t.set(key, q & 1023);
      t.set(price, 100.0 + double(q & 255) * 0.25);
      t.set(size, int32_t(q & 31) + 1);
    }
    if (pub->commit(room) != sluice::Code::kOk) {
      std::fprintf(stderr, "commit: %s\n", pub->error().c_str());
      return 1;
    }
    sent += n;
  }
  // Everything acknowledged (acks on) or sent, then END.
  if (pub->flush(30s) != sluice::Code::kOk) std::fprintf(stderr, "flush: %s\n", pub->error().c_str());
  const double s = elapsed();
  if (sluice::Result r = pub->close(); !r) {
    std::fprintf(stderr, "close: %s\n", r.message.c_str());
    return 1;
  }
  std::printf("published %llu tuples in %llu events, %.3f s, %.0f tuples/s\n", (unsigned long long)sent,
              (unsigned long long)pub->committed(), s, s > 0 ? sent / s : 0);
  return 0;
}

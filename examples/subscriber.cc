// Subscribes to the quotes that come out of the graph of
// deploy/examples/app.yaml: each event is handed to the handler as a
// read-only view of its tuples, already checked as the sink checks them
// (checksum, each stream's sequence; a replay's duplicates dropped).
//
//   sluice-example-subscriber RUN_DIR
#include <sluice/subscriber.h>

#include <chrono>
#include <cstdio>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
    return 2;
  }
  sluice::Connect where;
  where.run_dir = argv[1];
  where.process = "subscriber";
  std::unique_ptr<sluice::Subscriber> sub;
  if (sluice::Result r = sluice::Subscriber::open(where, &sub); !r) {
    std::fprintf(stderr, "cannot subscribe: %s\n", r.message.c_str());
    return 1;
  }
  sluice::TypedField<double> price;
  sluice::TypedField<int32_t> size;
  if (!sub->layout().typed("price", &price) || !sub->layout().typed("size", &size)) {
    std::fprintf(stderr, "the stream is not app.yaml's quotes: %s\n", sub->layout().describe().c_str());
    return 1;
  }

  double notional = 0;
  uint64_t tuples = 0;
  auto on_event = [&](const sluice::EventView& e) {
    for (uint32_t i = 0; i < e.count; ++i) {
      const sluice::TupleView t = e.tuple(i);
      notional += t.get(price) * t.get(size);
    }
    tuples += e.count;
  };
  std::chrono::steady_clock::time_point first{};
  for (;;) {
    int n = 0;
    const sluice::Code c = sub->poll(on_event, 64, 1000ms, &n);
    if (n > 0 && first == std::chrono::steady_clock::time_point{}) first = std::chrono::steady_clock::now();
    if (c == sluice::Code::kClosed) break;  // END: the publisher closed, everything before it came
    if (c != sluice::Code::kOk) {
      std::fprintf(stderr, "poll: %s\n", sub->error().c_str());
      return 1;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
  const sluice::Counts k = sub->counts();
  if (sluice::Result r = sub->close(); !r) {
    std::fprintf(stderr, "close: %s\n", r.message.c_str());
    return 1;
  }
  std::printf("received %llu tuples, %.0f tuples/s, notional %.0f; lost %llu, duplicated %llu, corrupt %llu\n",
              (unsigned long long)tuples, s > 0 ? tuples / s : 0, notional, (unsigned long long)k.lost,
              (unsigned long long)k.duplicated, (unsigned long long)k.corrupt);
  return k.lost || k.duplicated || k.corrupt ? 3 : 0;
}

// C++ ends on the client library for experiments/api_bench.py: the work of
// the built-in ends (cpp row) and of the Python ends (cpp-batch row), so
// that what a row adds to loadgen -> sink, or python to cpp-batch, is the
// library's or the module's own cost, not its application's.
//
//   sluice-api-ends pub RUN_DIR SECONDS TUPLES_PER_EVENT [offer|claim]
//   sluice-api-ends sub RUN_DIR
//
// pub offer (the default; api_ends.py's work): one batch of app.yaml's
// quotes, filled once; per batch, key += n over it (api_ends.py's one
// vectorised op) and offer() (one copy into a slot, as Publisher.send).
// pub claim (the load generator's work): per event, claim() room in a
// slot, write each tuple's key (the generator writes its seq and key; here
// the library writes seq), commit(). sub: polls 256 events at a time and
// counts their tuples (the library checks each event's checksum and seq,
// as the sink does). Each prints one JSON line, as api_ends.py's; pub with
// its own thread's CPU time per event (claim, copy or writes, checksum,
// commit).
#include <sluice/publisher.h>
#include <sluice/subscriber.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

int pub(const char* run_dir, double seconds, uint32_t per_event, bool claim) {
  sluice::Connect where;
  where.run_dir = run_dir;
  where.process = "publisher";
  std::unique_ptr<sluice::Publisher> p;
  if (sluice::Result r = sluice::Publisher::open(where, &p); !r) {
    std::fprintf(stderr, "cannot publish: %s\n", r.message.c_str());
    return 1;
  }
  const sluice::Layout& quotes = p->layout();
  sluice::TypedField<uint32_t> key;
  sluice::TypedField<double> price;
  sluice::TypedField<int32_t> size;
  if (!quotes.typed("key", &key) || !quotes.typed("price", &price) || !quotes.typed("size", &size)) {
    std::fprintf(stderr, "the stream is not app.yaml's quotes: %s\n", quotes.describe().c_str());
    return 1;
  }
  const uint32_t tb = quotes.tuple_bytes();
  std::vector<std::byte> batch(size_t{per_event} * tb);
  auto tuple = [&](uint32_t i) { return sluice::TupleRef(batch.data() + size_t{i} * tb); };
  for (uint32_t q = 0; q < per_event; ++q) {
    tuple(q).set(key, q & 1023);
    tuple(q).set(price, 100.0 + double(q & 255) * 0.25);
    tuple(q).set(size, int32_t(q & 31) + 1);
  }
  uint64_t sent = 0;
  const auto t0 = Clock::now();
  const double c0 = thread_cpu_s();
  while (Clock::now() - t0 < std::chrono::duration<double>(seconds)) {
    for (int b = 0; claim && b < 64; ++b) {
      sluice::Claim room;
      sluice::Code c;
      while ((c = p->claim(per_event, &room, 1000ms)) == sluice::Code::kBackPressured) {
      }
      if (c != sluice::Code::kOk) {
        std::fprintf(stderr, "claim: %s\n", p->error().c_str());
        return 1;
      }
      for (uint32_t i = 0; i < per_event; ++i) room.tuple(i).set(key, uint32_t(sent + i) & 1023);
      if (p->commit(room) != sluice::Code::kOk) {
        std::fprintf(stderr, "commit: %s\n", p->error().c_str());
        return 1;
      }
      sent += per_event;
    }
    for (int b = 0; !claim && b < 64; ++b) {
      for (uint32_t i = 0; i < per_event; ++i) tuple(i).set(key, tuple(i).get(key) + per_event);
      sluice::Code c;
      while ((c = p->offer(batch, 1000ms)) == sluice::Code::kBackPressured) {
      }
      if (c != sluice::Code::kOk) {
        std::fprintf(stderr, "offer: %s\n", p->error().c_str());
        return 1;
      }
      sent += per_event;
    }
  }
  const double cpu = thread_cpu_s() - c0;
  const unsigned long long events = p->committed();
  if (p->flush(60s) != sluice::Code::kOk) std::fprintf(stderr, "flush: %s\n", p->error().c_str());
  if (sluice::Result r = p->close(); !r) {
    std::fprintf(stderr, "close: %s\n", r.message.c_str());
    return 1;
  }
  std::printf("{\"tuples\": %llu, \"events\": %llu, \"thread_cpu_us_per_event\": %.3f, \"peak_rss_mib\": %.1f}\n",
              (unsigned long long)sent, events, events ? cpu / events * 1e6 : 0.0, peak_rss_mib());
  return 0;
}

int sub(const char* run_dir) {
  sluice::Connect where;
  where.run_dir = run_dir;
  where.process = "subscriber";
  std::unique_ptr<sluice::Subscriber> s;
  if (sluice::Result r = sluice::Subscriber::open(where, &s); !r) {
    std::fprintf(stderr, "cannot subscribe: %s\n", r.message.c_str());
    return 1;
  }
  uint64_t tuples = 0;
  for (;;) {
    const sluice::Code c = s->poll([&](const sluice::EventView& e) { tuples += e.count; }, 256, 1000ms);
    if (c == sluice::Code::kClosed) break;
    if (c != sluice::Code::kOk) {
      std::fprintf(stderr, "poll: %s\n", s->error().c_str());
      return 1;
    }
  }
  const sluice::Counts k = s->counts();
  if (sluice::Result r = s->close(); !r) {
    std::fprintf(stderr, "close: %s\n", r.message.c_str());
    return 1;
  }
  std::printf("{\"tuples\": %llu, \"lost\": %llu, \"duplicated\": %llu, \"corrupt\": %llu, \"peak_rss_mib\": %.1f}\n",
              (unsigned long long)tuples, (unsigned long long)k.lost, (unsigned long long)k.duplicated,
              (unsigned long long)k.corrupt, peak_rss_mib());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool claim = argc == 6 && std::strcmp(argv[5], "claim") == 0;
  if ((argc == 5 || (argc == 6 && (claim || std::strcmp(argv[5], "offer") == 0))) && std::strcmp(argv[1], "pub") == 0)
    return pub(argv[2], std::strtod(argv[3], nullptr), static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10)),
               claim);
  if (argc == 3 && std::strcmp(argv[1], "sub") == 0) return sub(argv[2]);
  std::fprintf(stderr, "usage: %s pub RUN_DIR SECONDS TUPLES_PER_EVENT [offer|claim] | sub RUN_DIR\n", argv[0]);
  return 2;
}

// ns per event through a real loopback link, per encoding: the sender thread
// sends pre-built events in batches of 64 descriptors, the benchmark thread
// receives and releases. Not a test: numbers, not assertions.
//   encoding_bench --benchmark_filter=...
// Args: tuple_bytes, tuples per event. Counter ns_per_event, Gbps (payload).
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "transport/test_util.h"
#include "transport/link.h"
#include "transport/transport.h"

namespace sluice {
namespace {

void run_link(benchmark::State& state, Encoding enc, bool original) {
  const uint32_t tuple_bytes = state.range(0);
  const uint32_t tuples = state.range(1);
  const size_t ev_bytes = event_wire_bytes(tuple_bytes, tuples);
  const uint64_t events = std::max<uint64_t>(2000, (400ull << 20) / 8 / ev_bytes / 4);
  uint64_t total_events = 0, total_bytes = 0;
  double seconds = 0;
  for (auto _ : state) {
    LinkOptions ro = testing::loopback_options(enc);
    ro.tuple_bytes = tuple_bytes;
    ro.slot_bytes = 65536;
    ro.slots = 64;
    if (original) {
      ro.tcp.async_send = true;
      ro.tcp.rx_select = true;
      ro.tcp.read_bytes = 4096;
    }
    TransportContext ctx;
    SlotPool rx(ro.slots, ro.slot_bytes);
    std::vector<uint32_t> all(ro.slots);
    rx.try_acquire_n(all.data(), all.size());
    rx.freed().enable_fd();
    Status st;
    auto l = make_listener(ro, rx, 0, ctx, &st);
    if (!l) {
      state.SkipWithError(st.message().c_str());
      return;
    }
    LinkOptions so = ro;
    so.port = l->port();
    SlotPool tx(256, ev_bytes);
    for (uint32_t s = 0; s < 256; ++s)
      testing::write_event(tx.slot(s), 0, s * tuples, s, tuples, tuple_bytes);
    std::thread sender([&] {
      Status s;
      auto snd = make_sender(so, tx, ctx, &s);
      if (!snd) return;
      std::vector<Descriptor> batch;
      batch.reserve(64);
      for (uint64_t i = 0; i < events; ++i) {
        uint32_t slot = tx.acquire(Wait::kBlock);
        batch.push_back(Descriptor{slot, 0, static_cast<uint32_t>(ev_bytes), 1, tuples, 0});
        if (batch.size() == 64 || i + 1 == events) {
          if (!snd->send(batch)) return;
          batch.clear();
        }
      }
      const uint32_t no_streams[2] = {0, 0};
      if (snd->end(reinterpret_cast<const std::byte*>(no_streams), 8)) snd->close();
    });
    auto r = l->accept(&st);
    if (!r) {
      sender.join();
      state.SkipWithError(st.message().c_str());
      return;
    }
    std::vector<Descriptor> out(256);
    uint64_t got = 0, bytes = 0;
    auto t0 = std::chrono::steady_clock::now();
    // A receive stage: poll, release, give freed slots back, sleep on the fds.
    auto give_back = [&] {
      uint32_t s[64];
      size_t k;
      while ((k = rx.try_acquire_n(s, 64)) > 0)
        for (size_t i = 0; i < k; ++i) (void)r->give_back(s[i]);
    };
    auto sleep = [&] {
      pollfd p[2] = {{r->wait_fd(), POLLIN, 0}, {rx.freed().fd(), POLLIN, 0}};
      rx.freed().prepare_fd_wait();
      if (rx.free_slots() == 0) ::poll(p, 2, 10);
      rx.freed().finish_fd_wait(p[1].revents & POLLIN);
    };
    for (;;) {
      give_back();
      size_t n = 0;
      if (!r->poll(out, &n)) break;
      if (n == 0) {
        if (r->ended()) break;
        sleep();
        continue;
      }
      for (size_t i = 0; i < n; ++i) {
        got += out[i].events;
        bytes += out[i].bytes;
        (void)rx.release(out[i].slot);
      }
    }
    while (r->ended() && !r->finished()) {
      give_back();
      if (!r->finished()) sleep();
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sender.join();
    total_events += got;
    total_bytes += bytes;
  }
  state.counters["ns_per_event"] = seconds * 1e9 / std::max<uint64_t>(total_events, 1);
  state.counters["Mevents_s"] = total_events / seconds / 1e6;
  state.counters["Gbps"] = total_bytes * 8 / seconds / 1e9;
}

void BM_sg(benchmark::State& s) { run_link(s, Encoding::kSg, false); }
void BM_copy(benchmark::State& s) { run_link(s, Encoding::kCopy, false); }
void BM_capnp(benchmark::State& s) { run_link(s, Encoding::kCapnp, false); }
void BM_capnp_original(benchmark::State& s) { run_link(s, Encoding::kCapnp, true); }

// A plain socket relay of the same bytes: the ceiling for large events.
void BM_plain_socket(benchmark::State& state) {
  const size_t ev_bytes = event_wire_bytes(state.range(0), state.range(1));
  const uint64_t events = std::max<uint64_t>(2000, (400ull << 20) / 8 / ev_bytes / 4);
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  std::vector<char> buf(65536);
  double seconds = 0;
  uint64_t total = 0;
  for (auto _ : state) {
    std::thread w([&] {
      std::vector<char> src(ev_bytes * 64);
      for (uint64_t i = 0; i < events; i += 64) {
        size_t n = std::min<uint64_t>(64, events - i) * ev_bytes;
        for (size_t off = 0; off < n;) off += ::send(sv[0], src.data() + off, n - off, 0);
      }
    });
    auto t0 = std::chrono::steady_clock::now();
    uint64_t want = events * ev_bytes, got = 0;
    while (got < want) got += ::recv(sv[1], buf.data(), buf.size(), 0);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    w.join();
    total += events;
  }
  ::close(sv[0]);
  ::close(sv[1]);
  state.counters["ns_per_event"] = seconds * 1e9 / total;
  state.counters["Gbps"] = total * ev_bytes * 8 / seconds / 1e9;
}

#define SIZES ->Args({12, 1})->Args({128, 1})->Args({128, 255})->Iterations(3)->UseRealTime()
BENCHMARK(BM_sg) SIZES;
BENCHMARK(BM_copy) SIZES;
BENCHMARK(BM_capnp) SIZES;
BENCHMARK(BM_capnp_original) SIZES;
BENCHMARK(BM_plain_socket)->Args({128, 255})->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();

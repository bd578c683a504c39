// What a paced load generator says about being held back (Generator::report).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "loadgen/generator.h"
#include "node/metrics.h"

namespace sluice {
namespace {

Deployment paced(double rate, double duration_s) {
  Deployment d;
  d.tuple_bytes = 12;
  d.event_bytes = 0;  // one tuple an event
  d.rate = rate;
  d.duration_s = duration_s;
  d.loadgen_slots = 8;
  return d;
}

// Runs g to its END, handing each slot back at once, except that from
// hold_from_s on it keeps them until hold_until_s (a stalled downstream).
ProcessSummary run(Generator& g, double hold_from_s, double hold_until_s) {
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::mutex mu;
  std::vector<uint32_t> held;
  std::thread releaser;
  Descriptor out[16];
  for (bool end = false; !end;) {
    size_t n = 0;
    EXPECT_TRUE(g.next(out, &n).ok());
    for (size_t i = 0; i < n; ++i) {
      end = end || (out[i].flags & kDescEnd);
      const double t = since();
      if (t >= hold_from_s && t < hold_until_s && !(out[i].flags & kDescEnd)) {
        std::lock_guard lk(mu);
        held.push_back(out[i].slot);
        if (held.size() == 1)  // gives them all back at hold_until_s
          releaser = std::thread([&g, &mu, &held, hold_until_s, since] {
            std::this_thread::sleep_for(std::chrono::duration<double>(hold_until_s - since()));
            std::lock_guard lk(mu);
            for (uint32_t s : held) (void)g.pool().release(s);
            held.clear();
          });
      } else {
        (void)g.pool().release(out[i].slot);
      }
    }
  }
  if (releaser.joinable()) releaser.join();
  ProcessSummary s;
  g.report(s);
  return s;
}

TEST(Generator, AGeneratorNeverHeldBackSaysNothing) {
  Generator g(paced(1000, 0.3), 0);
  const ProcessSummary s = run(g, 1e9, 1e9);
  EXPECT_LT(s.held_back_s, 0.05);
  EXPECT_EQ(s.behind_events, 0u);
}

// Its 8 slots out from 0.1 s to 0.5 s of a 0.4 s run at 1,000 events/s: it
// waited about 0.4 s for one, and the clock ended the run with about 290 of
// its 400 events not made.
TEST(Generator, AGeneratorHeldPastItsEndSaysHowLongAndWhatItDidNotMake) {
  Generator g(paced(1000, 0.4), 0);
  const ProcessSummary s = run(g, 0.1, 0.5);
  EXPECT_GT(s.held_back_s, 0.3);
  EXPECT_LT(s.held_back_s, 0.6);
  EXPECT_GT(s.behind_events, 200u);
  EXPECT_LT(s.behind_events, 400u);
}

// Held for a while mid-run, it catches up after: held back, nothing behind.
TEST(Generator, AGeneratorThatCatchesUpIsBehindByNothing) {
  Generator g(paced(1000, 0.6), 0);
  const ProcessSummary s = run(g, 0.1, 0.3);
  EXPECT_GT(s.held_back_s, 0.1);
  EXPECT_EQ(s.behind_events, 0u);
}

}  // namespace
}  // namespace sluice

#include "base/ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <thread>
#include <vector>

#include <poll.h>
#include <unistd.h>

namespace sluice {
namespace {

TEST(SpscRing, RejectsCapacityThatIsNotAPowerOfTwo) {
  EXPECT_THROW(SpscRing<int>(3), std::invalid_argument);
  EXPECT_THROW(SpscRing<int>(0), std::invalid_argument);
  EXPECT_NO_THROW(SpscRing<int>(4));
}

TEST(SpscRing, ExactlyFullThenOneFree) {
  SpscRing<int> r(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(r.try_push(i));
  EXPECT_FALSE(r.try_push(99));  // exactly full
  EXPECT_EQ(r.size(), 4u);
  int v;
  ASSERT_TRUE(r.try_pop(v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(r.try_push(4));    // one free
  EXPECT_FALSE(r.try_push(5));
  for (int want = 1; want <= 4; ++want) {
    ASSERT_TRUE(r.try_pop(v));
    EXPECT_EQ(v, want);
  }
  EXPECT_FALSE(r.try_pop(v));
}

// Head and tail cross the array's end many times, with batches that straddle
// the wrap edge at every offset.
TEST(SpscRing, BatchesStraddleTheWrapEdgeAtEveryOffset) {
  SpscRing<uint64_t> r(8);
  uint64_t next_in = 0, next_out = 0;
  for (int round = 0; round < 200; ++round) {
    size_t want = 1 + round % 8;
    uint64_t in[8], out[8];
    for (size_t i = 0; i < want; ++i) in[i] = next_in + i;
    size_t pushed = r.try_push_n(in, want);
    EXPECT_EQ(pushed, want);
    next_in += pushed;
    size_t popped = r.try_pop_n(out, 8);
    ASSERT_EQ(popped, pushed);
    for (size_t i = 0; i < popped; ++i) EXPECT_EQ(out[i], next_out++);
  }
  EXPECT_EQ(next_in, next_out);
}

TEST(SpscRing, PartialPushWhenNearlyFull) {
  SpscRing<int> r(4);
  int in[3] = {1, 2, 3};
  EXPECT_EQ(r.try_push_n(in, 3), 3u);
  EXPECT_EQ(r.try_push_n(in, 3), 1u);  // only one place left
  int out[8];
  EXPECT_EQ(r.try_pop_n(out, 8), 4u);
  EXPECT_EQ(out[3], 1);
}

TEST(SpscRing, CloseWakesABlockedConsumerAndDrainsFirst) {
  SpscRing<int> r(4);
  r.try_push(7);
  std::atomic<int> got{-1};
  std::atomic<int> first{-1};
  std::thread t([&] {
    int v[4];
    first = static_cast<int>(r.pop_n(v, 4, Wait::kBlock));
    got = static_cast<int>(r.pop_n(v, 4, Wait::kBlock));  // blocks until close
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.close();
  t.join();
  EXPECT_EQ(first.load(), 1);
  EXPECT_EQ(got.load(), 0);
  EXPECT_FALSE(r.push(1, Wait::kBlock));
}

TEST(SpscRing, CloseWakesABlockedProducer) {
  SpscRing<int> r(2);
  r.try_push(1);
  r.try_push(2);
  std::atomic<bool> result{true};
  std::thread t([&] { result = r.push(3, Wait::kBlock); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.close();
  t.join();
  EXPECT_FALSE(result.load());
}

// Two threads behind a start barrier move many items through a small ring
// (so both sides wait often); the consumer checks order and count. A failure
// on either side is recorded and closes the ring, so the other side wakes and
// the test ends with the failure instead of hanging.
class RingTwoThreads : public ::testing::TestWithParam<Wait> {};

TEST_P(RingTwoThreads, OrderAndCountSurviveAMillionItems) {
  constexpr uint64_t kItems = 1'000'000;
  SpscRing<uint64_t> r(64);
  std::barrier start(2);
  std::atomic<uint64_t> push_failed_at{UINT64_MAX};
  std::thread producer([&] {
    start.arrive_and_wait();
    uint64_t batch[7];
    uint64_t next = 0;
    while (next < kItems && push_failed_at == UINT64_MAX) {
      size_t n = std::min<uint64_t>(1 + next % 7, kItems - next);
      for (size_t i = 0; i < n; ++i) batch[i] = next + i;
      for (size_t i = 0; i < n && push_failed_at == UINT64_MAX; ++i)
        if (!r.push(batch[i], GetParam())) push_failed_at = batch[i];
      next += n;
    }
    r.close();
  });
  start.arrive_and_wait();
  uint64_t expect = 0, out[32];
  uint64_t first_wrong = UINT64_MAX, wrong_value = 0;
  for (;;) {
    size_t n = r.pop_n(out, 32, GetParam());
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i, ++expect)
      if (out[i] != expect && first_wrong == UINT64_MAX) {
        first_wrong = expect;
        wrong_value = out[i];
        r.close();  // the producer stops; the test reports below
      }
    if (first_wrong != UINT64_MAX) break;
  }
  producer.join();
  EXPECT_EQ(push_failed_at.load(), UINT64_MAX) << "push failed for item " << push_failed_at;
  EXPECT_EQ(first_wrong, UINT64_MAX) << "item " << first_wrong << " came out as " << wrong_value;
  EXPECT_EQ(expect, kItems);
}

INSTANTIATE_TEST_SUITE_P(Waits, RingTwoThreads,
                         ::testing::Values(Wait::kBlock, Wait::kSpin, Wait::kHybrid),
                         [](const auto& info) { return std::string(wait_name(info.param)); });

// The futex form: a notify that finds waiters moves the epoch and clears
// them, so a second notify before they ran finds none (no second syscall);
// a waiter that cancelled is not counted.
TEST(EventCount, ANotifyClearsTheWaitersItWakes) {
  EventCount ec;
  const uint32_t k1 = ec.prepare_wait();
  ec.cancel_wait(k1);
  ec.notify();  // nobody waits: the epoch stays
  const uint32_t k2 = ec.prepare_wait();
  EXPECT_EQ(k2, k1);
  ec.notify();  // wakes k2's waiter: a new epoch, no waiters
  ec.notify();  // finds none
  ec.wait(k2);  // returns at once: its epoch has gone
  const uint32_t k3 = ec.prepare_wait();
  EXPECT_EQ(k3, k2 + 1);
  ec.cancel_wait(k3);
  ec.cancel_wait(k2);  // a stale key takes nobody off the count
  const uint32_t k4 = ec.prepare_wait();
  EXPECT_EQ(k4, k3);
  ec.cancel_wait(k4);
}

// Several threads block on one eventcount while two notifiers move a value:
// each waiter sees every value up to the last, none sleeps past a change.
TEST(EventCount, BlockedWaitersAllWakeForEachChange) {
  EventCount ec;
  std::atomic<uint64_t> value{0};
  constexpr uint64_t kLast = 20000;
  std::vector<std::thread> waiters;
  std::atomic<int> finished{0};
  for (int w = 0; w < 3; ++w)
    waiters.emplace_back([&] {
      uint64_t seen = 0;
      while (seen < kLast) {
        wait_until(Wait::kBlock, ec, [&] { return value.load() != seen; }, [] { return false; });
        seen = value.load();
      }
      finished.fetch_add(1);
    });
  auto notifier = [&] {
    for (;;) {
      uint64_t v = value.load();
      if (v >= kLast) break;
      if (value.compare_exchange_weak(v, v + 1)) ec.notify();
    }
  };
  std::thread a(notifier), b(notifier);
  a.join();
  b.join();
  // A lost wake-up leaves a waiter asleep for good: give them 10 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (finished.load() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(finished.load(), 3);
  if (finished.load() < 3) {
    value.store(kLast + 1);
    for (int i = 0; i < 100 && finished.load() < 3; ++i) {
      ec.notify();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  for (auto& t : waiters) t.join();
}

// The fd form writes its eventfd once per announced wait: the notifies after
// the first find it readable already and would wake nobody.
TEST(EventCount, NotifiesOfOneFdWaitWriteTheEventfdOnce) {
  EventCount ec;
  ASSERT_TRUE(ec.enable_fd());
  ec.notify();  // nobody announced: no write
  pollfd p{ec.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  ec.prepare_fd_wait();
  for (int i = 0; i < 5; ++i) ec.notify();
  uint64_t v = 0;
  ASSERT_EQ(::read(ec.fd(), &v, sizeof v), static_cast<ssize_t>(sizeof v));
  EXPECT_EQ(v, 1u);  // one write, not five
  ec.finish_fd_wait(false);
  // The next wait is armed again: a notify wakes it.
  ec.prepare_fd_wait();
  ec.notify();
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  ec.finish_fd_wait(true);
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // the read reset it
}

// No wake-up is lost: a waiter that re-checks after prepare_fd_wait and then
// sleeps in poll always wakes for a change a notifier published, over many
// rounds with notifiers on two threads. A lost one shows as a poll that
// times out while the value it waits for has moved.
TEST(EventCount, NoFdWakeUpIsLostAcrossRounds) {
  EventCount ec;
  ASSERT_TRUE(ec.enable_fd());
  std::atomic<uint64_t> value{0};
  std::atomic<bool> stop{false};
  constexpr uint64_t kRounds = 20000;
  auto notifier = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      value.fetch_add(1, std::memory_order_seq_cst);
      ec.notify();
      std::this_thread::yield();
    }
  };
  std::thread a(notifier), b(notifier);
  uint64_t seen = 0, timeouts = 0;
  for (uint64_t r = 0; r < kRounds; ++r) {
    ec.prepare_fd_wait();
    if (value.load(std::memory_order_seq_cst) != seen) {
      ec.finish_fd_wait(false);
    } else {
      pollfd p{ec.fd(), POLLIN, 0};
      const int got = ::poll(&p, 1, 2000);
      if (got == 0 && value.load() != seen) ++timeouts;
      ec.finish_fd_wait(got > 0);
    }
    seen = value.load(std::memory_order_seq_cst);
  }
  stop = true;
  a.join();
  b.join();
  EXPECT_EQ(timeouts, 0u);
}

TEST(Wait, ParsesTheThreePolicies) {
  Wait w;
  EXPECT_TRUE(parse_wait("spin", &w));
  EXPECT_EQ(w, Wait::kSpin);
  EXPECT_TRUE(parse_wait("hybrid", &w));
  EXPECT_EQ(w, Wait::kHybrid);
  EXPECT_TRUE(parse_wait("block", &w));
  EXPECT_EQ(w, Wait::kBlock);
  EXPECT_FALSE(parse_wait("poll", &w));
}

}  // namespace
}  // namespace sluice

#include "base/ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

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

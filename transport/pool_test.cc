#include "transport/pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <vector>
#include <thread>

namespace sluice {
namespace {

TEST(SlotPool, HandsOutEverySlotOnceThenRunsDry) {
  SlotPool pool(5, 100);
  EXPECT_EQ(pool.slot_bytes(), 128u);  // rounded to a cache line
  std::set<uint32_t> got;
  for (int i = 0; i < 5; ++i) {
    uint32_t s = pool.try_acquire();
    ASSERT_NE(s, kNoSlot);
    got.insert(s);
  }
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(pool.try_acquire(), kNoSlot);
  EXPECT_TRUE(pool.release(*got.begin()).ok());
  EXPECT_EQ(pool.try_acquire(), *got.begin());
}

TEST(SlotPool, SlotsDoNotOverlap) {
  SlotPool pool(4, 64);
  for (uint32_t i = 0; i + 1 < 4; ++i) EXPECT_EQ(pool.slot(i + 1) - pool.slot(i), 64);
  EXPECT_GE(pool.bytes(), 4u * 64);
}

TEST(SlotPool, AcquireWaitsForARelease) {
  SlotPool pool(1, 64);
  uint32_t s = pool.acquire(Wait::kBlock);
  ASSERT_NE(s, kNoSlot);
  std::thread t([&] { EXPECT_TRUE(pool.release(s).ok()); });
  EXPECT_EQ(pool.acquire(Wait::kBlock), s);
  t.join();
}

TEST(SlotPool, CloseWakesAWaiter) {
  SlotPool pool(1, 64);
  ASSERT_NE(pool.acquire(Wait::kBlock), kNoSlot);
  std::thread t([&] { pool.close(); });
  EXPECT_EQ(pool.acquire(Wait::kBlock), kNoSlot);
  t.join();
}

TEST(SlotPool, ADoubleReleaseIsAnErrorAndChangesNothing) {
  SlotPool pool(2, 64);
  uint32_t s = pool.try_acquire();
  ASSERT_TRUE(pool.release(s).ok());
  Status st = pool.release(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("released twice"), std::string::npos) << st.message();
  // The slot is free once, not twice.
  EXPECT_NE(pool.try_acquire(), kNoSlot);
  EXPECT_NE(pool.try_acquire(), kNoSlot);
  EXPECT_EQ(pool.try_acquire(), kNoSlot);
}

TEST(SlotPool, AForeignSlotIsAnError) {
  SlotPool pool(2, 64);
  Status st = pool.release(7);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not in this pool"), std::string::npos) << st.message();
  EXPECT_FALSE(pool.retain(9, 1).ok());
}

TEST(SlotPool, ARetainedSlotFreesAfterItsLastRelease) {
  SlotPool pool(1, 64);
  uint32_t s = pool.try_acquire();
  ASSERT_TRUE(pool.retain(s, 2).ok());  // three holders: sent to three links
  ASSERT_TRUE(pool.release(s).ok());
  ASSERT_TRUE(pool.release(s).ok());
  EXPECT_EQ(pool.try_acquire(), kNoSlot);
  ASSERT_TRUE(pool.release(s).ok());
  EXPECT_EQ(pool.try_acquire(), s);
}

TEST(SlotPool, RetainOfAFreeSlotIsAnError) {
  SlotPool pool(1, 64);
  EXPECT_FALSE(pool.retain(0, 1).ok());
}

// Four threads release what the owner hands them; the owner must see every
// slot back exactly once, for many rounds.
TEST(SlotPool, ReleasesFromManyThreadsAreNeitherLostNorDoubled) {
  constexpr uint32_t kSlots = 64;
  constexpr int kThreads = 4;
  constexpr uint64_t kRounds = 200000;
  SlotPool pool(kSlots, 64);
  SpscRing<uint32_t> to[kThreads] = {SpscRing<uint32_t>(128), SpscRing<uint32_t>(128),
                                     SpscRing<uint32_t>(128), SpscRing<uint32_t>(128)};
  std::atomic<int> errors{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      uint32_t s;
      while (to[t].pop_n(&s, 1, Wait::kBlock) == 1)
        if (!pool.release(s).ok()) errors.fetch_add(1);
    });
  std::vector<int> out(kSlots, 0);
  for (uint64_t i = 0; i < kRounds; ++i) {
    uint32_t s = pool.acquire(Wait::kBlock);
    ASSERT_NE(s, kNoSlot);
    ++out[s];
    to[i % kThreads].push(s, Wait::kBlock);
  }
  for (auto& r : to) r.close();
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(pool.free_slots(), kSlots);
  uint64_t total = 0;
  for (int c : out) total += c;
  EXPECT_EQ(total, kRounds);
}

}  // namespace
}  // namespace sluice

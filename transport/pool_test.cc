#include "transport/pool.h"

#include <gtest/gtest.h>

#include <set>
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
  pool.release(*got.begin());
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
  std::thread t([&] { pool.release(s); });
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

}  // namespace
}  // namespace sluice

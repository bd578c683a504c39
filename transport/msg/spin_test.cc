// SpinWindow (spin.h): how long a doorbell end polls before it sleeps.
#include "transport/msg/spin.h"

#include <gtest/gtest.h>

namespace sluice::msg {
namespace {

using std::chrono::microseconds;

TEST(SpinWindow, StartsAtSpinUsAndStaysThereWhileWaitsAreShort) {
  SpinWindow w(microseconds(50));
  EXPECT_EQ(w.get(), microseconds(50));
  for (int i = 0; i < 10; ++i) w.judge(microseconds(30));
  EXPECT_EQ(w.get(), microseconds(50));
  w.judge(microseconds(50));  // exactly spin_us: a poll that long would have caught it
  EXPECT_EQ(w.get(), microseconds(50));
}

TEST(SpinWindow, HalvesAfterEachLongWaitDownToNone) {
  SpinWindow w(microseconds(50));
  w.judge(microseconds(51));
  EXPECT_EQ(w.get(), microseconds(25));
  w.judge(microseconds(400));
  EXPECT_EQ(w.get(), std::chrono::nanoseconds(12500));
  w.judge(microseconds(400));  // 6.25 us
  w.judge(microseconds(400));  // 3.125 us
  EXPECT_GE(w.get(), SpinWindow::kFloor);
  w.judge(microseconds(400));  // under the floor: none
  EXPECT_EQ(w.get(), SpinWindow::Duration::zero());
  w.judge(std::chrono::milliseconds(10));
  EXPECT_EQ(w.get(), SpinWindow::Duration::zero());
}

TEST(SpinWindow, GrowsBackFromNoneByDoublingFromTheFloorUpToSpinUs) {
  SpinWindow w(microseconds(50));
  for (int i = 0; i < 6; ++i) w.judge(microseconds(500));
  ASSERT_EQ(w.get(), SpinWindow::Duration::zero());
  w.judge(microseconds(10));
  EXPECT_EQ(w.get(), SpinWindow::kFloor);
  w.judge(microseconds(10));
  EXPECT_EQ(w.get(), 2 * SpinWindow::kFloor);
  for (int i = 0; i < 10; ++i) w.judge(microseconds(10));
  EXPECT_EQ(w.get(), microseconds(50));
}

TEST(SpinWindow, SpinUsZeroNeverPolls) {
  SpinWindow w(microseconds(0));
  EXPECT_EQ(w.get(), SpinWindow::Duration::zero());
  w.judge(SpinWindow::Duration::zero());
  w.judge(microseconds(1));
  EXPECT_EQ(w.get(), SpinWindow::Duration::zero());
}

TEST(SpinWindow, ASpinUsUnderTheFloorIsKeptAsItIs) {
  SpinWindow w(microseconds(1));
  w.judge(microseconds(1));
  EXPECT_EQ(w.get(), microseconds(1));
  w.judge(microseconds(5));
  EXPECT_EQ(w.get(), SpinWindow::Duration::zero());
  w.judge(microseconds(1));
  EXPECT_EQ(w.get(), microseconds(1));
}

}  // namespace
}  // namespace sluice::msg

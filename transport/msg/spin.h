// How long a doorbell end (msg.h item 5) polls before it sleeps: the
// window, at most spin_us, judged by the waits that follow polls that found
// nothing, as KVM judges its halt-polling window. A poll that finds
// something keeps it. One that found nothing, after which what came came
// within spin_us of the poll's start (a poll of spin_us would have caught
// it), doubles it (from kFloor); one after which it came later halves it
// (below kFloor: none). Where each process has a core of its own, frames
// come within the window and it stays spin_us; where processes outnumber
// the cores (a pipeline of four on two), a 50 us poll found nothing in 33-99%
// of the rounds, and the wait after it was mostly 50-500 us.
#pragma once

#include <algorithm>
#include <chrono>

namespace sluice::msg {

class SpinWindow {
 public:
  using Duration = std::chrono::steady_clock::duration;
  static constexpr Duration kFloor = std::chrono::microseconds(2);

  explicit SpinWindow(Duration max) : max_(max), now_(max) {}
  Duration get() const { return now_; }
  Duration max() const { return max_; }
  // A poll found nothing and the end slept; what it waited for came
  // `waited` after the poll began.
  void judge(Duration waited) {
    if (waited <= max_)
      now_ = std::min(max_, std::max<Duration>(2 * now_, kFloor));
    else
      now_ = now_ / 2 < kFloor ? Duration::zero() : now_ / 2;
  }

 private:
  Duration max_, now_;
};

}  // namespace sluice::msg

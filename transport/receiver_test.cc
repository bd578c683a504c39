// The receiving end of the protocol core over a scripted carrier: what it
// does after END, and with a frame that fails its checks, whatever the
// carrier (every carrier reports what arrived; the core decides). Nothing may
// follow END: a frame that does fails the link once END's slot comes back,
// instead of the last credits. A failed frame is a protocol error; the frames
// before it go on, and it is not counted as out.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "transport/link.h"
#include "transport/test_util.h"

namespace sluice {
namespace {

// Hands out the arrivals it was given, one poll's worth per entry, and says
// what came after END when asked.
class ScriptedRx final : public RxCarrier {
 public:
  std::deque<std::vector<Arrival>> polls;
  std::string after;  // what after_end() says
  std::vector<uint32_t> credits;
  bool finished = false;

  Status post(uint32_t) override { return {}; }
  Status poll(std::span<Arrival> out, size_t* n) override {
    *n = 0;
    if (polls.empty()) return {};
    for (const Arrival& a : polls.front()) out[(*n)++] = a;
    polls.pop_front();
    return {};
  }
  Status send_credits(uint32_t c, uint64_t) override {
    credits.push_back(c);
    return {};
  }
  std::string after_end() override { return after; }
  void finish() override { finished = true; }
  void shutdown() override {}
  int wait_fd() const override { return -1; }
  LinkStats stats() const override { return {}; }
};

class AfterEnd : public ::testing::Test {
 protected:
  AfterEnd() {
    opts_.slots = 4;
    opts_.slot_bytes = 4096;
    opts_.tuple_bytes = 12;
    opts_.credit_batch = 1;
    opts_.adaptive_credits = false;
    auto c = std::make_unique<ScriptedRx>();
    rx_ = c.get();
    receiver_ = std::make_unique<Receiver>(opts_, std::move(c), pool_, 0, "link a -> b");
    end_bytes_ = static_cast<uint32_t>(testing::write_end(pool_.slot(0), 0, 0, 0));
  }

  // Polls once; the descriptors handed out.
  std::vector<Descriptor> poll() {
    std::vector<Descriptor> out(8);
    size_t n = 0;
    Status st = receiver_->poll(out, &n);
    EXPECT_TRUE(st.ok()) << st.message();
    out.resize(n);
    return out;
  }

  LinkOptions opts_;
  SlotPool pool_{4, 4096};
  ScriptedRx* rx_ = nullptr;
  std::unique_ptr<Receiver> receiver_;
  uint32_t end_bytes_ = 0;
};

TEST_F(AfterEnd, NothingAfterEndFinishesWithTheLastCredits) {
  rx_->polls.push_back({Arrival{0, FrameKind::kEnd, end_bytes_, 0}});
  auto out = poll();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].flags & kDescEnd);
  Status st = receiver_->give_back(0);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(rx_->finished);
  EXPECT_EQ(rx_->credits.size(), 1u);
}

// The carrier handed out a frame behind END in the same poll: END goes on,
// the frame does not, and END's slot coming back fails the link.
TEST_F(AfterEnd, AFrameInThePollThatHandedOutEndFailsTheLink) {
  rx_->polls.push_back({Arrival{0, FrameKind::kEnd, end_bytes_, 0}, Arrival{1, FrameKind::kEvents, 100, 1}});
  auto out = poll();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].flags & kDescEnd);
  Status st = receiver_->give_back(0);
  EXPECT_EQ(st.message(),
            "link a -> b: a frame of kind 1 and 100 bytes came after END, as frame 1: nothing may "
            "follow END");
  EXPECT_TRUE(st.protocol_error()) << "not a break that connecting again heals";
  EXPECT_FALSE(rx_->finished);
  EXPECT_TRUE(rx_->credits.empty()) << "no credit for a frame after END";
  EXPECT_TRUE(receiver_->finished());  // by its error
  size_t n = 0;
  std::vector<Descriptor> more(8);
  EXPECT_EQ(receiver_->poll(more, &n).message(), st.message());
}

// The carrier found something behind END since: the same.
TEST_F(AfterEnd, WhatTheCarrierFoundSinceFailsTheLink) {
  rx_->polls.push_back({Arrival{0, FrameKind::kEnd, end_bytes_, 0}});
  rx_->after = "a frame of kind 1 and 64 payload bytes";
  ASSERT_EQ(poll().size(), 1u);
  Status st = receiver_->give_back(0);
  EXPECT_EQ(st.message(),
            "link a -> b: a frame of kind 1 and 64 payload bytes came after END, as frame 1: "
            "nothing may follow END");
  EXPECT_FALSE(rx_->finished);
  EXPECT_TRUE(rx_->credits.empty());
}

// With acks the link finishes once every slot came back, END's first or
// not: the look behind END is at that moment, before the last credits.
TEST_F(AfterEnd, WithAcksTheLookIsWhenTheLastSlotComesBack) {
  opts_.acks = true;
  auto c = std::make_unique<ScriptedRx>();
  rx_ = c.get();
  receiver_ = std::make_unique<Receiver>(opts_, std::move(c), pool_, 0, "link a -> b");
  std::byte* ev = pool_.slot(1);
  const uint32_t evb = static_cast<uint32_t>(testing::write_event(ev, 0, 0, 0, 1, 12));
  rx_->polls.push_back({Arrival{1, FrameKind::kEvents, evb, 1}, Arrival{0, FrameKind::kEnd, end_bytes_, 0}});
  ASSERT_EQ(poll().size(), 2u);
  EXPECT_TRUE(receiver_->give_back(0).ok());  // END's slot first: not finished yet
  EXPECT_FALSE(rx_->finished);
  rx_->after = "7 bytes";
  Status st = receiver_->give_back(1);
  EXPECT_EQ(st.message(), "link a -> b: 7 bytes came after END, as frame 2: nothing may follow END");
  EXPECT_TRUE(st.protocol_error());
  EXPECT_FALSE(rx_->finished);
}

// A frame whose event fails its checks, behind a good one in the same poll:
// the good one is handed out, the bad one is not, and the link's error is a
// protocol error naming the frame. Once the good one's slot is back nothing
// of the link is out: an owner that waits for every slot before it takes
// the link's next connection (node/net.cc, with acks) does not wait for
// the bad one's, which nobody holds.
class FailedFrame : public AfterEnd {};

TEST_F(FailedFrame, IsNotOut) {
  const uint32_t good = static_cast<uint32_t>(testing::write_event(pool_.slot(1), 0, 0, 0, 1, 12));
  const uint32_t bad = static_cast<uint32_t>(testing::write_event(pool_.slot(2), 0, 1, 1, 1, 12));
  const uint32_t wrong = 0x0BADBAD0;
  std::memcpy(pool_.slot(2), &wrong, sizeof wrong);  // the event's magic
  rx_->polls.push_back({Arrival{1, FrameKind::kEvents, good, 1}, Arrival{2, FrameKind::kEvents, bad, 1}});
  auto out = poll();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].slot, 1u);
  EXPECT_EQ(receiver_->outstanding(), 1u);
  std::vector<Descriptor> more(8);
  size_t n = 0;
  Status st = receiver_->poll(more, &n);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(st.message(), "link a -> b: frame 1: event 0 at byte 0: bad event magic 0x0badbad0");
  EXPECT_TRUE(st.protocol_error());
  (void)receiver_->give_back(1);
  EXPECT_EQ(receiver_->outstanding(), 0u) << "the failed frame's slot counted as out";
}

// A frame beyond the grant, behind good frames in the same poll: the good
// ones are handed out (and counted) as behind any failed frame, not dropped
// with it, and none of them is left out once they came back.
TEST_F(FailedFrame, FramesBeforeOneBeyondTheGrantAreHandedOut) {
  std::vector<Arrival> arrivals;
  for (uint32_t s = 0; s < 4; ++s)
    arrivals.push_back(Arrival{s, FrameKind::kEvents,
                               static_cast<uint32_t>(testing::write_event(pool_.slot(s), 0, s, s, 1, 12)), 1});
  arrivals.push_back(arrivals[0]);  // a fifth frame, where 4 credits were granted
  rx_->polls.push_back(arrivals);
  auto out = poll();
  ASSERT_EQ(out.size(), 4u);
  std::vector<Descriptor> more(8);
  size_t n = 0;
  Status st = receiver_->poll(more, &n);
  EXPECT_EQ(st.message(), "link a -> b: frame 4 sent without credit: the receiver granted 4");
  EXPECT_TRUE(st.protocol_error());
  for (const Descriptor& d : out) (void)receiver_->give_back(d.slot);
  EXPECT_EQ(receiver_->outstanding(), 0u);
}

}  // namespace
}  // namespace sluice

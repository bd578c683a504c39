// Conformance suite of the tcp transport: every encoding x async_send x
// rx_select carries the same streams over loopback and must deliver every
// byte intact, in order, once, with END last and credits respected.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "transport/tcp/test_util.h"
#include "transport/transport.h"

namespace sluice {
namespace {

using testing::loopback_options;
using testing::verify_events;
using testing::write_end;
using testing::write_event;

struct Mode {
  Encoding encoding;
  bool async_send;
  bool rx_select;
};

std::string mode_name(const ::testing::TestParamInfo<Mode>& i) {
  return std::string(encoding_name(i.param.encoding)) + (i.param.async_send ? "_async" : "_sync") +
         (i.param.rx_select ? "_select" : "_block");
}

struct Load {
  uint32_t tuple_bytes;
  uint32_t tuples_per_event;
  uint32_t events_per_desc;
  uint32_t descs_per_send;
  uint32_t data_bytes;
  uint32_t events;          // total
  uint32_t rx_slot_bytes;   // receiver slot
  uint32_t rx_slots;
  uint32_t credit_batch;
  int release_delay_us;     // a slow consumer
};

struct Result {
  uint64_t events = 0, tuples = 0, frames = 0, max_outstanding = 0;
  bool got_end = false;
  LinkStats sender_stats, receiver_stats;
};

class TcpConformance : public ::testing::TestWithParam<Mode> {
 protected:
  Result run(const Load& L) {
    Result res;
    LinkOptions ro = loopback_options(GetParam().encoding);
    ro.tcp.async_send = GetParam().async_send;
    ro.tcp.rx_select = GetParam().rx_select;
    ro.tcp.poll_timeout_us = 200;
    ro.tcp.read_bytes = 4096;  // the original's read size: many reads per frame
    ro.tuple_bytes = L.tuple_bytes;
    ro.slot_bytes = L.rx_slot_bytes;
    ro.slots = L.rx_slots;
    ro.credit_batch = L.credit_batch;
    SlotPool rx_pool(L.rx_slots, L.rx_slot_bytes);
    Status st;
    auto listener = make_listener(ro, rx_pool, &st);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!listener) return res;

    LinkOptions so = ro;
    so.port = listener->port();
    const size_t ev_bytes = event_wire_bytes(L.tuple_bytes, L.tuples_per_event, L.data_bytes);
    const size_t tx_slot_bytes = ev_bytes * L.events_per_desc;
    SlotPool tx_pool(L.descs_per_send + 2, tx_slot_bytes);
    PoolReleaser tx_rel(tx_pool);

    std::atomic<bool> sender_ok{true};
    std::string sender_error;
    std::thread sender_thread([&] {
      Status s;
      auto sender = make_sender(so, tx_pool, tx_rel, &s);
      if (!sender) {
        sender_error = s.message();
        sender_ok = false;
        return;
      }
      std::vector<Descriptor> batch;
      batch.reserve(L.descs_per_send + 1);
      uint64_t seq = 0, evseq = 0;
      auto flush = [&]() -> bool {
        Status fs = sender->send(batch);
        batch.clear();
        if (!fs) {
          sender_error = fs.message();
          sender_ok = false;
        }
        return fs.ok();
      };
      while (evseq < L.events) {
        uint32_t slot = tx_pool.acquire(Wait::kBlock);
        size_t off = 0;
        uint32_t n = 0;
        for (; n < L.events_per_desc && evseq < L.events; ++n) {
          off += write_event(tx_pool.slot(slot) + off, 0, seq, evseq, L.tuples_per_event,
                             L.tuple_bytes, L.data_bytes);
          seq += L.tuples_per_event;
          ++evseq;
        }
        batch.push_back(Descriptor{slot, 0, static_cast<uint32_t>(off), n,
                                   n * L.tuples_per_event, 0});
        if (batch.size() == L.descs_per_send && !flush()) return;
      }
      uint32_t slot = tx_pool.acquire(Wait::kBlock);
      size_t eb = write_end(tx_pool.slot(slot), 0, seq, evseq);
      batch.push_back(Descriptor{slot, 0, static_cast<uint32_t>(eb), 0, 0, kDescEnd});
      if (!flush()) return;
      Status cs = sender->close();
      if (!cs) {
        sender_error = cs.message();
        sender_ok = false;
      }
      res.sender_stats = sender->stats();
    });

    auto receiver = listener->accept(&st);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!receiver) {
      sender_thread.join();
      return res;
    }

    // The send stage of the node: releases slots from its own thread.
    SpscRing<uint32_t> to_release(1024);
    std::atomic<uint64_t> released{0};
    std::thread releaser([&] {
      uint32_t s;
      while (to_release.pop_n(&s, 1, Wait::kBlock) == 1) {
        if (L.release_delay_us)
          std::this_thread::sleep_for(std::chrono::microseconds(L.release_delay_us));
        released.fetch_add(1);  // before: the slot is reusable once released
        receiver->release(s);
      }
    });

    uint64_t expect_seq = 0, expect_event = 0, received = 0;
    std::vector<Descriptor> out(32);
    bool bad = false;
    for (;;) {
      size_t n = 0;
      Status rs = receiver->receive(out, &n);
      if (!rs) {
        ADD_FAILURE() << rs.message();
        bad = true;
        break;
      }
      if (n == 0) break;
      for (size_t i = 0; i < n; ++i) {
        const Descriptor& d = out[i];
        ++received;
        uint64_t outstanding = received - released.load();
        if (outstanding > res.max_outstanding) res.max_outstanding = outstanding;
        EXPECT_FALSE(res.got_end) << "descriptor after END";
        const std::byte* p = rx_pool.slot(d.slot) + d.offset;
        if (d.flags & kDescEnd) {
          res.got_end = true;
          EndOfStreamEntry e;
          std::memcpy(&e, p + 8, sizeof e);
          EXPECT_EQ(e.next_seq, expect_seq);
          EXPECT_EQ(e.events, expect_event);
        } else {
          uint64_t before = expect_seq;
          std::string err = verify_events(p, d.bytes, d.events, &expect_seq, &expect_event);
          if (!err.empty()) {
            ADD_FAILURE() << err;
            bad = true;
          }
          EXPECT_EQ(d.tuples, expect_seq - before);
          res.events += d.events;
          res.tuples += d.tuples;
        }
        ++res.frames;
        to_release.push(d.slot, Wait::kBlock);
      }
      if (bad) break;
    }
    if (bad) receiver->shutdown();
    to_release.close();
    releaser.join();
    sender_thread.join();
    EXPECT_TRUE(sender_ok) << sender_error;
    res.receiver_stats = receiver->stats();
    // After END, the stream stays ended.
    size_t n = 1;
    if (!bad) {
      EXPECT_TRUE(receiver->receive(out, &n).ok());
      EXPECT_EQ(n, 0u);
    }
    return res;
  }

  void check(const Load& L) {
    Result r = run(L);
    EXPECT_TRUE(r.got_end);
    EXPECT_EQ(r.events, L.events);
    EXPECT_EQ(r.tuples, uint64_t{L.events} * L.tuples_per_event);
    EXPECT_LE(r.max_outstanding, L.rx_slots);
    EXPECT_EQ(r.receiver_stats.frames, r.frames);
    EXPECT_EQ(r.sender_stats.frames, r.frames);
    RecordProperty("credit_waits", std::to_string(r.sender_stats.credit_waits));
    RecordProperty("sender_syscalls", std::to_string(r.sender_stats.syscalls));
    RecordProperty("receiver_syscalls", std::to_string(r.receiver_stats.syscalls));
  }
};

TEST_P(TcpConformance, SmallOneTupleEvents) {
  check({12, 1, 1, 256, 0, 20000, 65536, 16, 0, 0});
}

TEST_P(TcpConformance, Tuples128WithDataPacked) {
  check({128, 3, 10, 8, 40, 3000, 65536, 16, 0, 0});
}

TEST_P(TcpConformance, Tuples4096) {
  check({4096, 1, 2, 4, 0, 1000, 65536, 16, 0, 0});
}

TEST_P(TcpConformance, Events32KiB) {
  check({128, 255, 1, 4, 0, 400, 65536, 16, 0, 0});
}

TEST_P(TcpConformance, EventsAboveHalfASlotSplitFrames) {
  // 2624-byte events in 4 KiB slots, three per descriptor: every descriptor
  // is split at event boundaries into frames of one event.
  check({128, 20, 3, 4, 0, 600, 4096, 8, 0, 0});
}

TEST_P(TcpConformance, SlowConsumerFourSlots) {
  // The receiver has 4 slots and its send stage is slow: the sender must wait
  // for credits, nothing is lost, no slot beyond the 4 is ever needed.
  check({128, 4, 1, 16, 0, 400, 4096, 4, 1, 200});
}

TEST_P(TcpConformance, SlowConsumerBatchedCredits) {
  check({12, 1, 4, 64, 0, 4000, 1024, 4, 2, 50});
}

INSTANTIATE_TEST_SUITE_P(
    Modes, TcpConformance,
    ::testing::Values(Mode{Encoding::kSg, false, false}, Mode{Encoding::kSg, false, true},
                      Mode{Encoding::kCopy, false, false}, Mode{Encoding::kCopy, false, true},
                      Mode{Encoding::kCopy, true, false}, Mode{Encoding::kCopy, true, true},
                      Mode{Encoding::kCapnp, false, false}, Mode{Encoding::kCapnp, false, true},
                      Mode{Encoding::kCapnp, true, false}, Mode{Encoding::kCapnp, true, true}),
    mode_name);

}  // namespace
}  // namespace sluice

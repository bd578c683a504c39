// The sink's verifier and the filter operator alone, on events built by hand:
// what each counts, drops and rewrites, without a node around them.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "graph/operator.h"
#include "sink/verifier.h"
#include "transport/event.h"

namespace sluice {
namespace {

struct NoEmit final : Emitter {
  std::byte* acquire(uint32_t*) override { return nullptr; }
  void commit(uint32_t, uint32_t, uint32_t) override {}
} no_emit;

// ---- the verifier alone -------------------------------------------------------

struct Events {
  std::vector<std::byte> buf;
  uint32_t events = 0;
  void add(uint32_t stream, uint64_t first, uint32_t count, uint32_t span) {
    size_t off = buf.size();
    buf.resize(off + event_wire_bytes(12, count));
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.stream = stream;
    h.tuple_bytes = 12;
    h.first_seq = first;
    h.tuple_count = count;
    h.tuple_span = span;
    std::memcpy(&buf[off], &h, sizeof h);
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t s = first + i;
      std::memcpy(&buf[off + kEventHeaderBytes + 12 * i], &s, 8);
    }
    seal_event(&buf[off]);
    ++events;
  }
  Descriptor desc() const { return {0, 0, uint32_t(buf.size()), events, 0, 0}; }
};


TEST(Verifier, CountsGapsOverlapsCorruptionAndALostTail) {
  SlotPool pool(1, 64);
  Verifier v(pool);
  Events ev;
  ev.add(0, 0, 10, 10);
  ev.add(0, 15, 5, 5);   // 10..14 lost
  ev.add(0, 18, 4, 4);   // 18, 19 duplicated
  ev.add(1, 0, 3, 8);    // 5 filtered upstream
  ev.add(1, 8, 2, 2);
  v.verify_run(ev.buf.data(), ev.desc(), 0);
  EXPECT_EQ(v.counts().lost, 5u);
  EXPECT_EQ(v.counts().duplicated, 2u);
  EXPECT_EQ(v.counts().filtered, 5u);
  EXPECT_EQ(v.counts().corrupt, 0u);

  Events bad;
  bad.add(2, 0, 4, 4);
  bad.buf[kEventHeaderBytes + 12 + 9] ^= std::byte{1};  // a key byte of tuple 1
  v.verify_run(bad.buf.data(), bad.desc(), 0);
  EXPECT_EQ(v.counts().corrupt, 4u);

  EndOfStream eos{};
  eos.n_streams = 2;
  eos.streams[0] = {0, 0, 30, 3};  // stream 0 generated 30: 22..29 never came
  eos.streams[1] = {1, 0, 10, 2};
  v.verify_end(reinterpret_cast<std::byte*>(&eos), eos.wire_bytes());
  EXPECT_EQ(v.counts().lost, 5u + 8u);
  EXPECT_TRUE(v.counts().end_seen);
}

// A corrupt event's tuples are corrupt; the gap they leave in their stream is
// not counted lost as well, in the middle of a stream or at its tail.
TEST(Verifier, ACorruptEventIsNotAlsoLost) {
  SlotPool pool(1, 64);
  Verifier v(pool);
  Events ev;
  ev.add(0, 0, 10, 10);
  ev.add(0, 10, 5, 5);   // corrupted below
  ev.add(0, 15, 5, 5);
  ev.add(1, 0, 4, 4);    // corrupted below: stream 1's tail
  ev.buf[kEventHeaderBytes * 2 + 12 * 10 + 3] ^= std::byte{1};
  ev.buf[kEventHeaderBytes * 4 + 12 * 20 + 3] ^= std::byte{1};
  v.verify_run(ev.buf.data(), ev.desc(), 0);
  EndOfStream eos{};
  eos.n_streams = 2;
  eos.streams[0] = {0, 0, 20, 3};
  eos.streams[1] = {1, 0, 4, 1};
  v.verify_end(reinterpret_cast<std::byte*>(&eos), eos.wire_bytes());
  EXPECT_EQ(v.counts().corrupt, 9u);
  EXPECT_EQ(v.counts().lost, 0u);
  EXPECT_EQ(v.counts().duplicated, 0u);
}

TEST(Verifier, ATupleOutsideItsEventSpanIsCorrupt) {
  SlotPool pool(1, 64);
  Verifier v(pool);
  Events ev;
  ev.add(0, 100, 3, 3);
  uint64_t wrong = 7;
  std::memcpy(&ev.buf[kEventHeaderBytes + 12], &wrong, 8);
  seal_event(ev.buf.data());  // checksum right, content wrong
  v.verify_run(ev.buf.data(), ev.desc(), 0);
  EXPECT_EQ(v.counts().corrupt, 1u);  // tuple 1 lies outside [100, 103)
}

// ---- the filter alone ---------------------------------------------------------

TEST(Filter, PassAllWritesNothing) {
  Events ev;
  ev.add(0, 0, 50, 50);
  ev.add(0, 50, 50, 50);
  std::vector<std::byte> before = ev.buf;
  OperatorConfig f = OperatorConfig::filter("key", "ge", 0);  // everything passes
  Status st;
  auto op = make_operator(f, Schema::default_for(16), &st);
  ASSERT_TRUE(op);
  Descriptor d = ev.desc();
  d.tuples = 100;
  op->process(ev.buf.data(), d, no_emit);
  EXPECT_EQ(ev.buf, before);
  EXPECT_EQ(d.bytes, before.size());
  EXPECT_EQ(d.tuples, 100u);
}

TEST(Filter, CompactsEventsAndTheirDataInPlace) {
  // Three events with data blocks; keep even sequence numbers only.
  std::vector<std::byte> run;
  uint32_t events = 0;
  for (uint32_t e = 0; e < 3; ++e) {
    size_t off = run.size();
    run.resize(off + event_wire_bytes(16, 6, 8));
    EventHeader h{kEventMagic, kWireVersion, kEventHeaderBytes, 0, 16, e * 6ull, 6, 6, 8, 0, 0, e, 0};
    std::memcpy(&run[off], &h, sizeof h);
    for (uint32_t i = 0; i < 6; ++i) {
      uint64_t s = e * 6 + i;
      std::memcpy(&run[off + kEventHeaderBytes + 16 * i], &s, 8);
    }
    std::memset(&run[off + kEventHeaderBytes + 96], int('A' + e), 8);
    seal_event(&run[off]);
    ++events;
  }
  OperatorConfig f = OperatorConfig::filter("seq", "lt", 0);
  f.set("value", std::to_string(4));  // event 0 keeps 4 of 6, events 1 and 2 keep 0
  Status st;
  auto op = make_operator(f, Schema::default_for(16), &st);
  Descriptor d{0, 0, uint32_t(run.size()), events, 18, 0};
  op->process(run.data(), d, no_emit);
  EXPECT_EQ(d.tuples, 4u);
  EXPECT_EQ(d.bytes, event_wire_bytes(16, 4, 8) + 2 * event_wire_bytes(16, 0, 8));
  uint64_t tuples = 0;
  EXPECT_EQ(check_event_run(run.data(), d.bytes, 3, 16, &tuples), "");
  size_t off = 0;
  for (uint32_t e = 0; e < 3; ++e) {
    EventHeader h;
    std::memcpy(&h, &run[off], sizeof h);
    EXPECT_EQ(h.tuple_span, 6u);
    EXPECT_EQ(event_checksum(&run[off]), h.checksum);
    EXPECT_EQ(run[off + kEventHeaderBytes + h.tuple_block_bytes()], std::byte('A' + e));
    off += h.wire_bytes();
  }
}

TEST(Filter, UnknownFieldsAndOpsAreErrors) {
  Status st;
  OperatorConfig f = OperatorConfig::filter("price", "ge", 0);
  EXPECT_EQ(make_operator(f, Schema::default_for(16), &st), nullptr);
  EXPECT_NE(st.message().find("price"), std::string::npos);
  f = OperatorConfig::filter("key", "like", 0);
  EXPECT_EQ(make_operator(f, Schema::default_for(16), &st), nullptr);
  EXPECT_NE(st.message().find("like"), std::string::npos);
}

}  // namespace
}  // namespace sluice

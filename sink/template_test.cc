// Template events (kEventTemplate, transport/event.h) at the verifier: what
// the one-XXH3 check and the per-tuple seq and key checks still catch, that
// the verifier leaves the bytes as they came, and (with the load generator)
// that every event it makes verifies, a flipped byte anywhere in one is
// corrupt and a skipped event is lost.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "loadgen/generator.h"
#include "sink/verifier.h"

namespace sluice {
namespace {

// Template events of one stream, built the way the generator builds them:
// payload byte j of a tuple is (j * 31 + 7), data byte j is (j * 17 + 3).
struct Events {
  uint32_t tuple_bytes, data_bytes;
  std::vector<std::byte> buf;
  std::vector<size_t> at;  // each event's offset
  uint64_t next_seq = 0, next_event = 0;

  explicit Events(uint32_t tb, uint32_t db = 0) : tuple_bytes(tb), data_bytes(db) {}

  void add(uint32_t count, uint32_t stream = 0) {
    const size_t off = buf.size();
    at.push_back(off);
    buf.resize(off + event_wire_bytes(tuple_bytes, count, data_bytes));
    std::byte* p = &buf[off];
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.stream = stream;
    h.tuple_bytes = tuple_bytes;
    h.first_seq = next_seq;
    h.tuple_count = h.tuple_span = count;
    h.data_bytes = data_bytes;
    h.flags = kEventTemplate;
    h.event_seq = next_event++;
    std::memcpy(p, &h, sizeof h);
    std::byte* t = p + kEventHeaderBytes;
    for (uint32_t i = 0; i < count; ++i, t += tuple_bytes)
      for (uint32_t j = kMinTupleBytes; j < tuple_bytes; ++j) t[j] = std::byte((j * 31 + 7) & 0xff);
    for (uint32_t j = 0; j < data_bytes; ++j) t[j] = std::byte((j * 17 + 3) & 0xff);
    const uint64_t body = template_body_hash(p);  // zeroes the fields first
    t = p + kEventHeaderBytes;
    for (uint32_t i = 0; i < count; ++i, t += tuple_bytes) {
      const uint64_t seq = next_seq + i;
      const uint32_t key = template_key(seq);
      std::memcpy(t + kTupleSeqOffset, &seq, 8);
      std::memcpy(t + kTupleKeyOffset, &key, 4);
    }
    const uint64_t c = template_checksum(p, body);
    std::memcpy(p + kChecksumOffset, &c, sizeof c);
    next_seq += count;
  }
  std::byte* event(size_t i) { return &buf[at[i]]; }
  Descriptor desc() const { return {0, 0, uint32_t(buf.size()), uint32_t(at.size()), 0, 0}; }
};

void end(Verifier& v, uint64_t next_seq, uint64_t events) {
  EndOfStream eos{};
  eos.n_streams = 1;
  eos.streams[0] = {0, 0, next_seq, events};
  std::vector<std::byte> wire(eos.wire_bytes());
  write_end(eos, wire.data());
  v.verify_end(wire.data(), static_cast<uint32_t>(wire.size()));
}

struct Check {
  SlotPool pool{1, 64};
  Verifier v{pool};
  const VerifyCounts& c = v.counts();
};

TEST(VerifierTemplate, IntactEventsVerifyAndKeepTheirBytes) {
  for (uint32_t tb : {12u, 16u, 128u, 4096u, 20000u}) {  // 20000: a tuple beyond the 16 KiB piece
    for (uint32_t db : {0u, 40u}) {
      Events r(tb, db);
      for (int e = 0; e < 4; ++e) r.add(7);
      r.add(3);  // a short last event: another tuple count
      const std::vector<std::byte> before = r.buf;
      Check k;
      k.v.verify_run(r.buf.data(), r.desc(), 0);
      end(k.v, r.next_seq, r.next_event);
      EXPECT_EQ(k.c.tuples, 31u) << tb << " B tuples, " << db << " B data";
      EXPECT_EQ(k.c.corrupt + k.c.lost + k.c.duplicated, 0u) << tb << " B tuples, " << db << " B data";
      EXPECT_TRUE(r.buf == before) << "verify_run changed the bytes of " << tb << " B tuples";
    }
  }
}

// A flipped payload byte, data byte or header byte makes the event's tuples
// corrupt (the body's one hash, the header's hash); the gap it leaves is not
// lost as well.
TEST(VerifierTemplate, AFlippedPayloadDataOrHeaderByteIsCorruptNotLost) {
  const size_t payload = kEventHeaderBytes + 128 + 40;  // tuple 1, payload byte 28
  const size_t data = kEventHeaderBytes + 5 * 128 + 3;
  const size_t header = 40;  // send_ts_ns
  for (size_t where : {payload, data, header}) {
    Events r(128, 16);
    for (int e = 0; e < 3; ++e) r.add(5);
    r.event(1)[where] ^= std::byte{0x10};
    Check k;
    k.v.verify_run(r.buf.data(), r.desc(), 0);
    end(k.v, r.next_seq, r.next_event);
    EXPECT_EQ(k.c.corrupt, 5u) << "byte " << where;
    EXPECT_EQ(k.c.lost, 0u) << "byte " << where;
  }
}

// Tuples larger than the 16 KiB piece the sink masks and hashes at a time
// are one piece each: a byte far into one still counts.
TEST(VerifierTemplate, AFlippedByteInATupleBeyondThePieceIsCorrupt) {
  for (size_t where : {size_t{20}, size_t{17000}, size_t{19999}}) {
    Events r(20000);
    r.add(2);
    r.add(2);
    r.event(1)[kEventHeaderBytes + 20000 + where] ^= std::byte{0x80};  // tuple 1 of event 1
    Check k;
    k.v.verify_run(r.buf.data(), r.desc(), 0);
    EXPECT_EQ(k.c.corrupt, 2u) << "byte " << where;
    EXPECT_EQ(k.c.tuples, 4u);
  }
}

// The 12-byte tuples' shortcut (no payload to hash once the body's hash for a
// tuple count is known) still checks every seq and key: a wrong one in a
// later event is corrupt.
TEST(VerifierTemplate, TwelveByteTuplesStillCheckEverySeqAndKey) {
  for (size_t field : {size_t{3}, size_t{9}}) {  // a seq byte, a key byte
    Events r(12);
    for (int e = 0; e < 4; ++e) r.add(6);
    r.event(2)[kEventHeaderBytes + 12 * 4 + field] ^= std::byte{1};
    Check k;
    k.v.verify_run(r.buf.data(), r.desc(), 0);
    end(k.v, r.next_seq, r.next_event);
    EXPECT_EQ(k.c.corrupt, 6u) << "byte " << field;
    EXPECT_EQ(k.c.lost, 0u) << "byte " << field;
  }
}

// Two tuples swapped inside an event (their seq, key and payload move
// together): the seqs are no longer first_seq + i.
TEST(VerifierTemplate, TuplesReorderedInsideAnEventAreCorrupt) {
  Events r(16);
  r.add(4);
  std::byte* t = r.event(0) + kEventHeaderBytes;
  std::byte tmp[16];
  std::memcpy(tmp, t, 16);
  std::memcpy(t, t + 16, 16);
  std::memcpy(t + 16, tmp, 16);
  Check k;
  k.v.verify_run(r.buf.data(), r.desc(), 0);
  EXPECT_EQ(k.c.corrupt, 4u);
}

TEST(VerifierTemplate, ASkippedEventIsLostAndOneComingTwiceIsDuplicated) {
  Events r(128);
  for (int e = 0; e < 4; ++e) r.add(5);
  std::vector<std::byte> run;
  auto take = [&](size_t i) {
    const std::byte* p = r.event(i);
    EventHeader h;
    std::memcpy(&h, p, sizeof h);
    run.insert(run.end(), p, p + h.wire_bytes());
  };
  take(0);
  take(2);  // 1 skipped: 5 lost
  take(2);  // again: 5 duplicated
  take(3);
  Check k;
  k.v.verify_run(run.data(), Descriptor{0, 0, uint32_t(run.size()), 4, 0, 0}, 0);
  end(k.v, r.next_seq, r.next_event);
  EXPECT_EQ(k.c.lost, 5u);
  EXPECT_EQ(k.c.duplicated, 5u);
  EXPECT_EQ(k.c.corrupt, 0u);
}

// What is no longer the template is not checked as one: tuple_count below
// tuple_span with the flag still set (an operator that dropped tuples and
// did not reseal) is corrupt; resealed (seal_event clears the flag) it
// verifies, the dropped tuples filtered.
TEST(VerifierTemplate, AnEventChangedWithoutResealingIsCorruptResealedItVerifies) {
  Events r(16);
  r.add(6);
  EventHeader h;
  std::memcpy(&h, r.event(0), sizeof h);
  h.tuple_count = 4;  // the last two dropped
  std::memcpy(r.event(0), &h, sizeof h);
  Descriptor d{0, 0, uint32_t(h.wire_bytes()), 1, 0, 0};
  {
    Check k;
    k.v.verify_run(r.buf.data(), d, 0);
    EXPECT_EQ(k.c.corrupt, 4u);
  }
  seal_event(r.event(0));
  std::memcpy(&h, r.event(0), sizeof h);
  EXPECT_EQ(h.flags & kEventTemplate, 0u);
  Check k;
  k.v.verify_run(r.buf.data(), d, 0);
  EXPECT_EQ(k.c.corrupt, 0u);
  EXPECT_EQ(k.c.filtered, 2u);
}

// ---- with the load generator -------------------------------------------------

struct Made {
  std::vector<std::vector<std::byte>> events;
  std::vector<std::byte> end;
};

// Everything a generator makes for `tuples` tuples, copied out of its slots.
Made generate(uint32_t tuple_bytes, uint64_t tuples, uint32_t data_bytes) {
  Deployment d;
  d.tuple_bytes = tuple_bytes;
  d.event_bytes = 4096;
  d.data_bytes = data_bytes;
  d.tuples = tuples;
  d.streams = 2;
  Generator g(d, 0);
  Made m;
  std::vector<Descriptor> out(8);
  for (bool done = false; !done;) {
    size_t n = 0;
    EXPECT_TRUE(static_cast<bool>(g.next(out, &n)));
    for (size_t i = 0; i < n; ++i) {
      const std::byte* p = g.pool().slot(out[i].slot) + out[i].offset;
      if (out[i].flags & kDescEnd) {
        m.end.assign(p, p + out[i].bytes);
        done = true;
      } else {
        m.events.emplace_back(p, p + out[i].bytes);
      }
      EXPECT_TRUE(static_cast<bool>(g.pool().release(out[i].slot)));
    }
  }
  return m;
}

VerifyCounts verify(Made& m, size_t skip = SIZE_MAX) {
  SlotPool pool(1, 64);
  Verifier v(pool);
  for (size_t i = 0; i < m.events.size(); ++i) {
    if (i == skip) continue;
    auto& e = m.events[i];
    v.verify_run(e.data(), Descriptor{0, 0, uint32_t(e.size()), 1, 0, 0}, 0);
  }
  v.verify_end(m.end.data(), static_cast<uint32_t>(m.end.size()));
  return v.counts();
}

TEST(GeneratorTemplate, EveryEventVerifiesAndAFlippedByteAnywhereIsCorrupt) {
  for (uint32_t tb : {12u, 128u}) {
    for (uint32_t db : {0u, 24u}) {
      const uint64_t tuples = 2003;  // not a multiple of an event's (nor even): a short last one
      Made m = generate(tb, tuples, db);
      ASSERT_GT(m.events.size(), 3u);
      for (auto& e : m.events) {
        EventHeader h;
        std::memcpy(&h, e.data(), sizeof h);
        EXPECT_TRUE(h.flags & kEventTemplate);
      }
      VerifyCounts c = verify(m);
      EXPECT_EQ(c.tuples, tuples) << tb << " B tuples, " << db << " B data";
      EXPECT_EQ(c.corrupt + c.lost + c.duplicated, 0u) << tb << " B tuples, " << db << " B data";
      EXPECT_TRUE(c.end_seen);

      // Every byte of one event (the second, and the short last one) in turn.
      for (size_t which : {size_t{1}, m.events.size() - 1}) {
        auto& e = m.events[which];
        EventHeader h;
        std::memcpy(&h, e.data(), sizeof h);
        for (size_t b = 0; b < e.size(); ++b) {
          if (b >= kChecksumOffset && b < kEventHeaderBytes) continue;  // the checksum itself
          e[b] ^= std::byte{0x04};
          // The receiver rejects a header it cannot read (magic, sizes); what
          // reaches the sink has a header that parses: flip only the rest of it.
          EventHeader f;
          std::memcpy(&f, e.data(), sizeof f);
          const bool parses = f.magic == h.magic && f.version == h.version &&
                              f.header_bytes == h.header_bytes && f.tuple_bytes == h.tuple_bytes &&
                              f.tuple_count == h.tuple_count && f.data_bytes == h.data_bytes &&
                              f.stream < kMaxStreams;
          if (parses) {
            SlotPool pool(1, 64);
            Verifier v(pool);
            v.verify_run(e.data(), Descriptor{0, 0, uint32_t(e.size()), 1, 0, 0}, 0);
            EXPECT_EQ(v.counts().corrupt, h.tuple_count) << tb << " B tuples, event " << which << ", byte " << b;
          }
          e[b] ^= std::byte{0x04};
        }
      }
    }
  }
}

TEST(GeneratorTemplate, ASkippedEventIsLost) {
  Made m = generate(128, 1000, 0);
  EventHeader h;
  std::memcpy(&h, m.events[2].data(), sizeof h);
  VerifyCounts c = verify(m, 2);
  EXPECT_EQ(c.lost, h.tuple_count);
  EXPECT_EQ(c.corrupt, 0u);
  // The last one, a tail only END reveals.
  std::memcpy(&h, m.events.back().data(), sizeof h);
  c = verify(m, m.events.size() - 1);
  EXPECT_EQ(c.lost, h.tuple_count);
}

// ---- made again from the header (Remaker, with acks) -------------------------

// A loadgen into a sink, with acks; `more` adds top-level keys.
Deployment acked(const std::string& more) {
  Deployment d;
  Status st = parse_deployment("acks: on\nevent_bytes: 4096\nstreams: 2\n" + more +
                                   "processes:\n  - {name: gen, role: loadgen}\n"
                                   "  - {name: sink, role: sink}\n",
                               "remake.yaml", {}, &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

TEST(GeneratorRemake, OnlyAGeneratorWithAcksAndHeadersHasAReserveToRemakeIn) {
  EXPECT_TRUE(Generator(acked(""), 0, 0, nullptr, true).remakes());
  EXPECT_FALSE(Generator(acked(""), 0, 0, nullptr, false).remakes()) << "operators or a copy between";
  EXPECT_FALSE(Generator(acked("loadgen_backup: slots\n"), 0, 0, nullptr, true).remakes());
  Deployment off = acked("");
  off.links[0].options.acks = false;
  EXPECT_FALSE(Generator(off, 0, 0, nullptr, true).remakes());
}

// Every event of a run (short last one, data block, a named schema's fields
// included) made again from its header is the event first made, byte for
// byte, in whatever reserve slot it lands, after whichever event was there.
TEST(GeneratorRemake, EveryEventMadeAgainFromItsHeaderIsTheSameBytes) {
  const std::string schema =
      "schema: trades\nschemas:\n  trades:\n    fields:\n"
      "      - {name: sym, type: u32, gen: {uniform: 16}}\n"
      "      - {name: price, type: i64, gen: {zipf: 100, s: 1.1}}\n";
  for (const std::string& more : {std::string("tuple_bytes: 12\n"), std::string("tuple_bytes: 128\n"),
                                   std::string("tuple_bytes: 128\ndata_bytes: 24\n"), schema}) {
    Deployment d = acked(more + "tuples: 2003\n");
    Generator g(d, 0, 0, d.loadgen_schema(0), true);
    ASSERT_TRUE(g.remakes()) << more;
    ASSERT_GE(g.room(), 2u);
    std::vector<std::vector<std::byte>> made;
    std::vector<Descriptor> out(8);
    for (bool done = false; !done;) {
      size_t n = 0;
      ASSERT_TRUE(g.next(out, &n).ok());
      for (size_t i = 0; i < n; ++i) {
        const std::byte* p = g.pool().slot(out[i].slot);
        if (out[i].flags & kDescEnd) done = true;
        else made.emplace_back(p, p + out[i].bytes);
        ASSERT_TRUE(g.pool().release(out[i].slot).ok());
      }
    }
    ASSERT_GT(made.size(), 3u) << more;
    // The short last one first, so the longer ones land where it was.
    std::vector<size_t> order{made.size() - 1};
    for (size_t i = 0; i < made.size() - 1; ++i) order.push_back(i);
    for (size_t i : order) {
      EventHeader h;
      std::memcpy(&h, made[i].data(), sizeof h);
      uint32_t slot = kNoSlot;
      ASSERT_TRUE(g.remake(h, &slot).ok());
      ASSERT_NE(slot, kNoSlot);
      EXPECT_GE(slot, g.pool().reserve_first()) << "a reserve slot, never the generator's own";
      EXPECT_EQ(std::memcmp(g.pool().slot(slot), made[i].data(), made[i].size()), 0)
          << more << "event " << i << " made again differs";
      ASSERT_TRUE(g.pool().release(slot).ok());
    }
    // Every reserve slot taken: none now, and no error.
    std::vector<uint32_t> taken;
    for (uint32_t s; (s = g.pool().try_acquire_reserved()) != kNoSlot;) taken.push_back(s);
    EXPECT_EQ(taken.size(), g.room());
    EventHeader h;
    std::memcpy(&h, made[0].data(), sizeof h);
    uint32_t slot = 0;
    EXPECT_TRUE(g.remake(h, &slot).ok());
    EXPECT_EQ(slot, kNoSlot);
    for (uint32_t s : taken) ASSERT_TRUE(g.pool().release(s).ok());
  }
}

TEST(GeneratorRemake, AHeaderItDidNotMakeIsAnErrorSayingWhy) {
  Deployment d = acked("tuple_bytes: 128\n");
  Generator g(d, 0, 0, nullptr, true);
  EventHeader h{};
  h.magic = kEventMagic;
  h.tuple_bytes = 64;
  h.tuple_count = h.tuple_span = 1;
  uint32_t slot = 0;
  Status st = g.remake(h, &slot);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("1 tuples of 64 bytes (it makes at most"), std::string::npos) << st.message();
  EXPECT_EQ(slot, kNoSlot);
  h.tuple_bytes = 128;
  h.stream = 5;
  st = g.remake(h, &slot);
  EXPECT_NE(st.message().find("stream 5 (it makes 0..1)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice

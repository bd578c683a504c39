#include "transport/event.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace sluice {
namespace {

std::vector<std::byte> make_event(uint32_t tuple_bytes, uint32_t tuples, uint32_t data = 0) {
  std::vector<std::byte> buf(event_wire_bytes(tuple_bytes, tuples, data));
  EventHeader h{};
  h.magic = kEventMagic;
  h.version = kWireVersion;
  h.header_bytes = kEventHeaderBytes;
  h.stream = 3;
  h.tuple_bytes = tuple_bytes;
  h.first_seq = 100;
  h.tuple_count = tuples;
  h.tuple_span = tuples;
  h.data_bytes = data;
  std::memcpy(buf.data(), &h, sizeof h);
  for (uint32_t i = 0; i < tuples; ++i) {
    uint64_t seq = 100 + i;
    std::memcpy(buf.data() + kEventHeaderBytes + size_t{i} * tuple_bytes, &seq, 8);
  }
  seal_event(buf.data());
  return buf;
}

TEST(EventFormat, WellFormedEventPasses) {
  auto ev = make_event(128, 4);
  EXPECT_EQ(check_event_header(ev.data(), ev.size(), 128), "");
  uint64_t tuples = 0;
  EXPECT_EQ(check_event_run(ev.data(), ev.size(), 1, 128, &tuples), "");
  EXPECT_EQ(tuples, 4u);
  EXPECT_EQ(tuple_seq(ev.data() + kEventHeaderBytes + 128), 101u);
}

TEST(EventFormat, ChecksumCatchesAFlippedBitAnywhere) {
  auto ev = make_event(12, 3, 40);
  const uint64_t good = event_checksum(ev.data());
  for (size_t i = 0; i < ev.size(); ++i) {
    if (i >= kChecksumOffset && i < kChecksumOffset + 8) continue;
    ev[i] ^= std::byte{0x10};
    // A flip in a length field is caught by the header check (the checksum
    // would read past the event); any other flip by the checksum.
    bool caught = !check_event_header(ev.data(), ev.size(), 0).empty() ||
                  event_checksum(ev.data()) != good;
    EXPECT_TRUE(caught) << "byte " << i;
    ev[i] ^= std::byte{0x10};
  }
  EXPECT_EQ(event_checksum(ev.data()), good);
}

// The checksum is the one PROTOCOL.md names, computed here with libxxhash's
// plain (non-dispatch) entry, written out step by step.
TEST(EventFormat, ChecksumIsXxh3OfHeaderThenBody) {
  for (uint32_t tuples : {0u, 1u, 7u, 255u}) {
    auto ev = make_event(128, tuples);
    const uint64_t head = XXH3_64bits_withSeed(ev.data(), 56, 0);
    const uint64_t want = XXH3_64bits_withSeed(ev.data() + 64, size_t{tuples} * 128, head);
    EXPECT_EQ(event_checksum(ev.data()), want) << tuples << " tuples";
    uint64_t stored;
    std::memcpy(&stored, ev.data() + 56, 8);
    EXPECT_EQ(stored, want);  // seal_event wrote it at byte 56
  }
}

TEST(EventFormat, ChecksumDependsOnEveryTupleCount) {
  // Events of zeros, differing only in length: every checksum differs.
  std::vector<uint64_t> seen;
  for (uint32_t n = 0; n < 100; ++n) {
    std::vector<std::byte> ev(64 + 12 * n);
    EventHeader h{};
    h.tuple_bytes = 12;
    h.tuple_count = n;
    std::memcpy(ev.data(), &h, sizeof h);
    seen.push_back(event_checksum(ev.data()));
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
}

TEST(EventFormat, RejectsBadMagicVersionAndLength) {
  auto ev = make_event(128, 2);
  EventHeader* h = reinterpret_cast<EventHeader*>(ev.data());
  h->magic = 0xdeadbeef;
  EXPECT_NE(check_event_header(ev.data(), ev.size(), 0).find("magic"), std::string::npos);
  h->magic = kEventMagic;
  h->version = 9;
  EXPECT_NE(check_event_header(ev.data(), ev.size(), 0).find("version"), std::string::npos);
  h->version = kWireVersion;
  h->tuple_count = h->tuple_span = 0xffffffffu;  // would wrap 32-bit length math
  EXPECT_NE(check_event_header(ev.data(), ev.size(), 0).find("beyond"), std::string::npos);
  h->tuple_count = h->tuple_span = 2;
  EXPECT_NE(check_event_header(ev.data(), ev.size(), 64).find("schema"), std::string::npos);
  EXPECT_NE(check_event_header(ev.data(), 10, 0).find("cut off"), std::string::npos);
}

TEST(EventFormat, RunMustTileTheFrameExactly) {
  auto a = make_event(12, 1), b = make_event(12, 5);
  std::vector<std::byte> run(a);
  run.insert(run.end(), b.begin(), b.end());
  uint64_t tuples = 0;
  EXPECT_EQ(check_event_run(run.data(), run.size(), 2, 12, &tuples), "");
  EXPECT_EQ(tuples, 6u);
  EXPECT_NE(check_event_run(run.data(), run.size(), 1, 12, nullptr), "");
  EXPECT_NE(check_event_run(run.data(), run.size(), 3, 12, nullptr), "");
  EXPECT_NE(check_event_run(run.data(), run.size() - 1, 2, 12, nullptr), "");
}

TEST(EventFormat, EndOfStreamLengthMustMatchItsCount) {
  EndOfStream eos{};
  eos.n_streams = 2;
  auto* p = reinterpret_cast<const std::byte*>(&eos);
  EXPECT_EQ(check_end_of_stream(p, eos.wire_bytes()), "");
  EXPECT_NE(check_end_of_stream(p, eos.wire_bytes() + 1), "");
  eos.n_streams = kMaxStreams + 1;
  EXPECT_NE(check_end_of_stream(p, 8), "");
}

// The data path's fast verdict (event_run_ok) and the checker that says why
// (check_event_run) must agree on every run: each header field of either
// event of a run set to values around every bound, and random bytes.
TEST(EventFormat, TheFastVerdictAgreesWithTheChecker) {
  auto a = make_event(12, 1), b = make_event(12, 5, 8);
  std::vector<std::byte> good(a);
  good.insert(good.end(), b.begin(), b.end());
  size_t cases = 0, rejected = 0;
  auto agree = [&](const std::vector<std::byte>& run, size_t bytes, uint32_t events, uint32_t expect) {
    uint64_t t1 = 0, t2 = 0;
    const bool ok = event_run_ok(run.data(), bytes, events, expect, &t1);
    const std::string why = check_event_run(run.data(), bytes, events, expect, &t2);
    ++cases;
    if (!ok) ++rejected;
    ASSERT_EQ(ok, why.empty()) << "bytes " << bytes << " events " << events << " expect " << expect
                               << ": " << why;
    if (ok) {
      ASSERT_EQ(t1, t2);
    }
  };
  const size_t second = a.size();
  const size_t fields[][2] = {{0, 4}, {4, 2}, {6, 2}, {8, 4}, {12, 4}, {24, 4}, {28, 4}, {32, 4}};
  const uint64_t values[] = {0, 1, 2, 5, 6, 11, 12, 13, 64, 65, kMaxStreams - 1, kMaxStreams,
                             kEventMagic, kWireVersion, 0xffff, 0x7fffffff, 0xffffffff};
  for (size_t at : {size_t{0}, second})
    for (const auto& f : fields)
      for (uint64_t v : values) {
        std::vector<std::byte> run(good);
        std::memcpy(run.data() + at + f[0], &v, f[1]);
        for (uint32_t expect : {0u, 12u, 13u})
          for (uint32_t events : {1u, 2u, 3u})
            for (size_t bytes : {run.size(), run.size() - 1, second, size_t{kEventHeaderBytes - 1}})
              agree(run, bytes, events, expect);
      }
  std::mt19937 rng(17);
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> run(good);
    const size_t at = rng() % 2 ? 0 : second;
    run[at + rng() % kEventHeaderBytes] = std::byte(rng() & 0xff);
    agree(run, run.size(), 2, rng() % 2 ? 0 : 12);
  }
  EXPECT_GT(rejected, cases / 4);  // the cases reach the rejections, not only good runs
  EXPECT_LT(rejected, cases);
}

TEST(EventFormat, TuplesPerEvent) {
  EXPECT_EQ(tuples_per_event(128, 0), 1u);
  EXPECT_EQ(tuples_per_event(128, 32768), (32768u - 64) / 128);
  EXPECT_EQ(tuples_per_event(4096, 32768), 7u);
  EXPECT_EQ(tuples_per_event(12, 1), 1u);
}

// Credit messages as the tcp sender reads them from its stream: whole ones
// summed (a partial one waits), the largest ack kept, and what a wrong
// receiver sends refused by name: a bad magic, a grant that could wrap a sum.
TEST(CreditMessages, StreamReadsWholeOnesAndRefusesWhatCouldWrap) {
  CreditFrame m[3] = {{kCreditMagic, 4, 7}, {kCreditMagic, 2, 5}, {kCreditMagic, 1, 9}};
  std::vector<std::byte> b(sizeof m);
  std::memcpy(b.data(), m, sizeof m);
  size_t used = 0;
  uint64_t credits = 0, acked = 6;
  EXPECT_EQ(read_credits(b.data(), sizeof m - 3, &used, &credits, &acked), "");
  EXPECT_EQ(used, 2 * sizeof(CreditFrame));
  EXPECT_EQ(credits, 6u);
  EXPECT_EQ(acked, 7u);  // 5 came late: acks only grow
  m[1].credits = kMaxCreditsPerMessage + 1;
  std::memcpy(b.data(), m, sizeof m);
  credits = 0;
  EXPECT_EQ(read_credits(b.data(), b.size(), &used, &credits, &acked),
            "a credit message grants 16777217 credits (at most 16777216)");
  EXPECT_EQ(used, sizeof(CreditFrame));
  m[0].magic = 0x11223344;
  std::memcpy(b.data(), m, sizeof m);
  EXPECT_EQ(read_credits(b.data(), b.size(), &used, &credits, &acked),
            "bad credit frame magic 0x11223344");
  EXPECT_EQ(used, 0u);

  CreditFrame one{kCreditMagic, 3, 1}, out;
  auto* p = reinterpret_cast<const std::byte*>(&one);
  EXPECT_EQ(check_credit_message(p, sizeof one, 3, &out), "");
  EXPECT_EQ(out.acked, 1u);
  EXPECT_EQ(check_credit_message(p, 8, 3, &out), "a credit message of 8 bytes (it is 16)");
  EXPECT_EQ(check_credit_message(p, sizeof one, 4, &out),
            "a credit message grants 3 credits, its immediate says 4");
}

// rma: a credit message names the slots it grants (PROTOCOL.md section 6).
TEST(CreditMessages, NamedCreditsNameSlotsOfTheLink) {
  std::vector<std::byte> b(sizeof(CreditFrame) + 12);
  const CreditFrame cf{kCreditMagic, 3, 5};
  const uint32_t names[3] = {2, 0, 7};
  std::memcpy(b.data(), &cf, sizeof cf);
  std::memcpy(b.data() + sizeof cf, names, sizeof names);
  CreditFrame out;
  EXPECT_EQ(check_named_credits(b.data(), b.size(), 3, 8, &out), "");
  EXPECT_EQ(out.acked, 5u);
  EXPECT_EQ(check_named_credits(b.data(), b.size(), 3, 7, &out),
            "a credit message names slot 7 (the link has 7)");
  EXPECT_EQ(check_named_credits(b.data(), b.size() - 4, 3, 8, &out),
            "a credit message of 24 bytes names 3 slots (it is 28)");
  EXPECT_EQ(check_named_credits(b.data(), b.size(), 2, 8, &out),
            "a credit message grants 3 credits, its immediate says 2");
  EXPECT_EQ(check_named_credits(b.data(), b.size(), 3, 2, &out),
            "a credit message grants 3 credits (the link has 2 slots)");
  EXPECT_EQ(check_named_credits(b.data(), 8, 3, 8, &out), "a credit message of 8 bytes (at least 16)");
}

}  // namespace
}  // namespace sluice

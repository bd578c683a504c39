// The pure codec: handshake round trips and mismatches, frame header checks,
// and the capnp event encode -> decode rebuild keeping the sender's checksum.
#include "transport/tcp/codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transport/test_util.h"

namespace sluice::tcp {
namespace {

TEST(Codec, HelloRoundTrip) {
  LinkOptions o;
  o.from = "loadgen";
  o.token = "t";
  o.link_id = 7;
  o.tcp.encoding = Encoding::kCopy;
  HelloInfo h = hello_from_options(o);
  alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
  size_t n = 0;
  ASSERT_TRUE(encode_hello(h, buf, sizeof buf, &n).ok());
  uint32_t len = 0;
  ASSERT_TRUE(decode_handshake_prefix(buf, &len).ok());
  EXPECT_EQ(len + kHandshakePrefixBytes, n);
  HelloInfo back;
  // Unaligned on purpose: the decoder copies into aligned words.
  std::vector<std::byte> odd(len + 1);
  std::memcpy(odd.data() + 1, buf + kHandshakePrefixBytes, len);
  ASSERT_TRUE(decode_hello(odd.data() + 1, len, &back).ok());
  EXPECT_EQ(back.sender_name, "loadgen");
  EXPECT_EQ(back.link_id, 7u);
  EXPECT_EQ(back.carrier, "tcp/copy");
  EXPECT_FALSE(back.acks);
  EXPECT_EQ(hello_mismatch(back, h), "");
  o.acks = true;
  ASSERT_TRUE(encode_hello(hello_from_options(o), buf, sizeof buf, &n).ok());
  ASSERT_TRUE(decode_hello(buf + kHandshakePrefixBytes, n - kHandshakePrefixBytes, &back).ok());
  EXPECT_TRUE(back.acks);
}

TEST(Codec, ReplyRoundTrip) {
  ReplyInfo r{true, "", 64, 65536, 16, "node-a"};
  alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
  size_t n = 0;
  ASSERT_TRUE(encode_reply(r, buf, sizeof buf, &n).ok());
  ReplyInfo back;
  ASSERT_TRUE(decode_reply(buf + kHandshakePrefixBytes, n - kHandshakePrefixBytes, &back).ok());
  EXPECT_TRUE(back.accepted);
  EXPECT_EQ(back.credits, 64u);
  EXPECT_EQ(back.receiver_name, "node-a");
}

TEST(Codec, HandshakePrefixLimits) {
  uint32_t p[2] = {kHandshakeMagic, kMaxHandshakeBytes + 8};
  uint32_t len;
  EXPECT_FALSE(decode_handshake_prefix(reinterpret_cast<std::byte*>(p), &len).ok());
  p[1] = 12;  // not whole words
  EXPECT_FALSE(decode_handshake_prefix(reinterpret_cast<std::byte*>(p), &len).ok());
  p[0] = 0;
  p[1] = 8;
  EXPECT_FALSE(decode_handshake_prefix(reinterpret_cast<std::byte*>(p), &len).ok());
}

TEST(Codec, FrameHeaderChecks) {
  LinkOptions o;
  o.slot_bytes = 4096;
  o.tuple_bytes = 12;
  FrameLimits lim = frame_limits(o);
  FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kEvents), 0, 76, 1}, out;
  EXPECT_TRUE(decode_frame_header(reinterpret_cast<std::byte*>(&h), lim, &out).ok());
  h.payload_bytes = 4097;
  EXPECT_FALSE(decode_frame_header(reinterpret_cast<std::byte*>(&h), lim, &out).ok());
  h.payload_bytes = 76;
  h.kind = static_cast<uint16_t>(FrameKind::kCapnpEvent);
  Status st = decode_frame_header(reinterpret_cast<std::byte*>(&h), lim, &out);
  EXPECT_NE(st.message().find("capnp event frame on a sg-encoded link"), std::string::npos)
      << st.message();
  h.kind = static_cast<uint16_t>(FrameKind::kEnd);
  h.events = 1;
  EXPECT_FALSE(decode_frame_header(reinterpret_cast<std::byte*>(&h), lim, &out).ok());
  // No frame flag is defined: a frame that sets one is refused.
  h = FrameHeader{kFrameMagic, static_cast<uint16_t>(FrameKind::kEvents), 1, 76, 1};
  st = decode_frame_header(reinterpret_cast<std::byte*>(&h), lim, &out);
  EXPECT_NE(st.message().find("frame flags 0x1"), std::string::npos) << st.message();
}

// The largest END the format allows (kMaxStreams entries, each with the
// partitioned accounts: flags 3) passes the header and the payload checks of
// a link whose slot holds it; a byte more than that is refused for what it
// is, and a smaller slot refuses it as beyond the slot.
TEST(Codec, TheLargestEndIsAcceptedAndNothingLarger) {
  LinkOptions o;
  o.slot_bytes = 65536;
  o.tuple_bytes = 12;
  FrameLimits lim = frame_limits(o);
  auto eos = std::make_unique<EndOfStream>();
  eos->n_streams = kMaxStreams;
  eos->flags = kEndAccounts | kEndPartitioned;
  for (uint32_t i = 0; i < kMaxStreams; ++i) eos->streams[i].stream = i;
  std::vector<std::byte> payload(eos->wire_bytes());
  ASSERT_EQ(payload.size(), kMaxEndBytes);
  write_end(*eos, payload.data());
  FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kEnd), 0,
                static_cast<uint32_t>(payload.size()), 0}, out;
  Status st = decode_frame_header(reinterpret_cast<std::byte*>(&h), lim, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  uint64_t tuples = 1;
  st = check_frame_payload(out, payload.data(), lim, &tuples);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(tuples, 0u);
  h.payload_bytes = kMaxEndBytes + 8;
  st = decode_frame_header(reinterpret_cast<std::byte*>(&h), lim, &out);
  EXPECT_NE(st.message().find("beyond the largest END (14344 bytes)"), std::string::npos)
      << st.message();
  o.slot_bytes = 8192;
  h.payload_bytes = kMaxEndBytes;
  st = decode_frame_header(reinterpret_cast<std::byte*>(&h), frame_limits(o), &out);
  EXPECT_NE(st.message().find("beyond the 8192-byte slot"), std::string::npos) << st.message();
}

TEST(Codec, CapnpEventRebuildKeepsChecksum) {
  for (uint32_t tb : {12u, 13u, 128u, 4096u}) {
    LinkOptions o;
    o.tcp.encoding = Encoding::kCapnp;
    o.slot_bytes = 65536;
    o.tuple_bytes = tb;
    FrameLimits lim = frame_limits(o);
    uint32_t tuples = tuples_per_event(tb, 30000);
    std::vector<std::byte> ev(65536), slot(65536);
    size_t evb = testing::write_event(ev.data(), 3, 1000, 9, tuples, tb, 24);
    size_t bound = capnp_event_bound_bytes(o.slot_bytes, tb);
    std::vector<uint64_t> scratch(bound / 8 + 1), out(bound / 8 + 1), rx(bound / 8 + 1);
    size_t len = 0;
    ASSERT_TRUE(encode_capnp_event(ev.data(), reinterpret_cast<std::byte*>(scratch.data()), bound,
                                   reinterpret_cast<std::byte*>(out.data()), bound, &len)
                    .ok());
    // The scratch is zero again for the next event.
    for (uint64_t w : scratch) ASSERT_EQ(w, 0u);
    uint32_t bytes = 0;
    uint64_t nt = 0;
    Status st = decode_capnp_event(reinterpret_cast<std::byte*>(out.data()), len, lim,
                                   reinterpret_cast<std::byte*>(rx.data()), slot.data(),
                                   slot.size(), &bytes, &nt);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(bytes, evb);
    EXPECT_EQ(nt, tuples);
    EXPECT_EQ(std::memcmp(slot.data(), ev.data(), evb), 0);
    EventHeader h;
    std::memcpy(&h, slot.data(), sizeof h);
    EXPECT_EQ(event_checksum(slot.data()), h.checksum);
    // Wrong schema on the receiving side.
    lim.tuple_bytes = tb + 4;
    st = decode_capnp_event(reinterpret_cast<std::byte*>(out.data()), len, lim,
                            reinterpret_cast<std::byte*>(rx.data()), slot.data(), slot.size(),
                            &bytes, &nt);
    EXPECT_FALSE(st.ok());
  }
}

TEST(Codec, CapnpEventTooBigForTheSlotIsAnError) {
  LinkOptions o;
  o.tcp.encoding = Encoding::kCapnp;
  o.slot_bytes = 65536;
  o.tuple_bytes = 128;
  std::vector<std::byte> ev(65536);
  testing::write_event(ev.data(), 0, 0, 0, 400, 128);  // 51264 bytes
  size_t bound = capnp_event_bound_bytes(o.slot_bytes, 128);
  std::vector<uint64_t> scratch(bound / 8 + 1), out(bound / 8 + 1);
  size_t len = 0;
  ASSERT_TRUE(encode_capnp_event(ev.data(), reinterpret_cast<std::byte*>(scratch.data()), bound,
                                 reinterpret_cast<std::byte*>(out.data()), bound, &len)
                  .ok());
  o.slot_bytes = 4096;  // the receiver's slot is smaller than the event
  FrameLimits lim = frame_limits(o);
  std::vector<std::byte> slot(4096);
  uint32_t bytes;
  uint64_t nt;
  Status st = decode_capnp_event(reinterpret_cast<std::byte*>(out.data()), len, lim,
                                 reinterpret_cast<std::byte*>(scratch.data()), slot.data(),
                                 slot.size(), &bytes, &nt);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("beyond the 4096-byte slot"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice::tcp

// The handshake: the token check (tokens_equal, hello_mismatch), the
// agreement on acknowledgements, and Hello's bytes as PROTOCOL.md lays them out.
#include "transport/handshake.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace sluice {
namespace {

TEST(Token, EqualOnlyWhenEveryByteAndTheLengthAgree) {
  EXPECT_TRUE(tokens_equal("", ""));
  EXPECT_TRUE(tokens_equal("s3cret-token", "s3cret-token"));
  EXPECT_FALSE(tokens_equal("s3cret-tokeN", "s3cret-token"));  // last byte
  EXPECT_FALSE(tokens_equal("S3cret-token", "s3cret-token"));  // first byte
  EXPECT_FALSE(tokens_equal("s3cret", "s3cret-token"));        // a prefix
  EXPECT_FALSE(tokens_equal("s3cret-token-and-more", "s3cret-token"));
  EXPECT_FALSE(tokens_equal("", "s3cret-token"));
  EXPECT_FALSE(tokens_equal("x", ""));
  // A shorter token padded with what a short read gives (zeros) is still not it.
  EXPECT_FALSE(tokens_equal(std::string("ab"), std::string("ab\0", 3)));
  EXPECT_FALSE(tokens_equal(std::string("ab\0", 3), std::string("ab")));
}

TEST(Token, HelloMismatchRefusesAWrongTokenWithoutPrintingIt) {
  HelloInfo expect;
  expect.token = "s3cret-token";
  HelloInfo got = expect;
  EXPECT_EQ(hello_mismatch(got, expect), "");
  got.token = "s3cret-tokeX";
  const std::string why = hello_mismatch(got, expect);
  EXPECT_EQ(why, "token does not match the receiver's");
  EXPECT_EQ(why.find("s3cret"), std::string::npos);
  got.token = "s3cret";
  EXPECT_EQ(hello_mismatch(got, expect), "token does not match the receiver's");
}

// Both ends of a link run the same protocol, acknowledgements included: a
// sender with acks keeps frames and replays them, a receiver with them
// deduplicates and holds credit to the acknowledgement window. Either way
// round, the refusal names both settings and both ends.
TEST(Acks, AHelloWhoseAcksDifferIsRefusedNamingBothEnds) {
  HelloInfo expect;
  expect.receiver_name = "sink";
  expect.acks = false;
  HelloInfo got = expect;
  got.sender_name = "node-b";
  EXPECT_EQ(hello_mismatch(got, expect), "");
  got.acks = true;
  EXPECT_EQ(hello_mismatch(got, expect),
            "sender 'node-b' has acks on, receiver 'sink' has acks off: both ends of a link need "
            "the same acks");
  expect.acks = true;
  got.acks = false;
  got.sender_name.clear();  // a sender that gives no name
  EXPECT_EQ(hello_mismatch(got, expect),
            "the sender has acks off, receiver 'sink' has acks on: both ends of a link need the "
            "same acks");
  // The version is looked at first: a version 3 Hello has no acks field.
  got.version = 3;
  EXPECT_EQ(hello_mismatch(got, expect),
            "wire version 3, receiver speaks " + std::to_string(kLinkVersion));
}

// Hello's data section as transport/PROTOCOL.md gives it: version in bytes
// 0-1, acks in bit 0 of byte 2, linkId 4-7, instance 8-11, tupleBytes
// 12-15, slotBytes 16-19, slots 20-23; 3 data words and 5 pointers. (One
// segment: prefix, segment table, root pointer, then the data section.)
TEST(HelloBytes, TheDataSectionIsWhereTheDocumentSays) {
  HelloInfo h;
  h.link_id = 0x01020304;
  h.instance = 0x05060708;
  h.tuple_bytes = 128;
  h.slot_bytes = 65536;
  h.slots = 64;
  h.acks = true;
  h.schema = "sluice.tuple";
  alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
  size_t n = 0;
  ASSERT_TRUE(encode_hello(h, buf, sizeof buf, &n).ok());
  auto u16 = [&](size_t at) {
    uint16_t v;
    std::memcpy(&v, buf + at, 2);
    return v;
  };
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, buf + at, 4);
    return v;
  };
  uint64_t root;
  std::memcpy(&root, buf + 16, 8);
  EXPECT_EQ(root & 3, 0u);                   // a struct pointer
  EXPECT_EQ((root >> 2) & 0x3FFFFFFF, 0u);   // the struct right after it
  EXPECT_EQ((root >> 32) & 0xFFFF, 3u);      // data words
  EXPECT_EQ(root >> 48, 5u);                 // pointers
  const size_t data = 24;
  EXPECT_EQ(u16(data + 0), kLinkVersion);
  EXPECT_EQ(u16(data + 2), 1u);  // acks
  EXPECT_EQ(u32(data + 4), 0x01020304u);
  EXPECT_EQ(u32(data + 8), 0x05060708u);
  EXPECT_EQ(u32(data + 12), 128u);
  EXPECT_EQ(u32(data + 16), 65536u);
  EXPECT_EQ(u32(data + 20), 64u);
  h.acks = false;
  ASSERT_TRUE(encode_hello(h, buf, sizeof buf, &n).ok());
  EXPECT_EQ(u16(data + 2), 0u);
}

}  // namespace
}  // namespace sluice

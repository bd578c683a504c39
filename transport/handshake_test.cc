// The handshake's token check (tokens_equal, hello_mismatch).
#include "transport/handshake.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sluice

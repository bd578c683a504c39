// Status: ok is the default and says nothing; an error keeps its words
// through copies and moves, each copy its own.
#include "base/status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace sluice {
namespace {

TEST(Status, OkByDefaultWithAnEmptyMessage) {
  Status st;
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(static_cast<bool>(st));
  EXPECT_EQ(st.message(), "");
}

TEST(Status, AnErrorKeepsItsWordsAndAnEmptyOneStillFails) {
  Status st = Status::Error("link node-a: peer closed");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "link node-a: peer closed");
  Status none = Status::Error("");
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.message(), "unknown error");
}

TEST(Status, ACopyIsItsOwnAndAMoveCarriesTheError) {
  Status a = Status::Error("first");
  Status b = a;
  a = Status::Error("second");
  EXPECT_EQ(b.message(), "first");
  EXPECT_EQ(a.message(), "second");
  b = Status();
  EXPECT_TRUE(b.ok());
  EXPECT_EQ(a.message(), "second");
  Status c = std::move(a);
  EXPECT_EQ(c.message(), "second");
  b = c;
  b = b;  // a copy onto itself keeps it
  EXPECT_EQ(b.message(), "second");
  Status d;
  d = std::move(c);
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.message(), "second");
}

// A protocol error says so through copies and moves, and Like() keeps the
// kind under new words; a plain error and ok are not one.
TEST(Status, AProtocolErrorKeepsItsKind) {
  Status p = Status::Protocol("link a -> b: frame 3: bad magic");
  EXPECT_FALSE(p.ok());
  EXPECT_TRUE(p.protocol_error());
  Status copy = p;
  EXPECT_TRUE(copy.protocol_error());
  Status moved = std::move(copy);
  EXPECT_TRUE(moved.protocol_error());
  EXPECT_EQ(moved.message(), "link a -> b: frame 3: bad magic");
  Status rewrapped = Status::Like(moved, "node-a: " + moved.message());
  EXPECT_TRUE(rewrapped.protocol_error());
  EXPECT_EQ(rewrapped.message(), "node-a: link a -> b: frame 3: bad magic");
  EXPECT_FALSE(Status::Error("peer closed").protocol_error());
  EXPECT_FALSE(Status::Like(Status::Error("x"), "y").protocol_error());
  EXPECT_FALSE(Status().protocol_error());
  moved = Status::Error("reset");
  EXPECT_FALSE(moved.protocol_error());
}

}  // namespace
}  // namespace sluice

#include "graph/schema.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Schema, DefaultIsTodaysTuple) {
  Schema s = Schema::default_for(128);
  EXPECT_EQ(s.tuple_bytes(), 128u);
  FieldRef seq, key;
  ASSERT_TRUE(s.find("seq", &seq));
  ASSERT_TRUE(s.find("key", &key));
  EXPECT_EQ(seq.offset, 0u);
  EXPECT_EQ(key.offset, 8u);  // transport/event.h's kTupleKeyOffset
  EXPECT_EQ(key.type, FieldType::kU32);
}

TEST(Schema, FieldsArePackedInOrderAfterSeq) {
  Schema s;
  ASSERT_TRUE(Schema::make("esper", {{"p0", FieldType::kI32}, {"p1", FieldType::kI64},
                                     {"tag", FieldType::kBytes, 3}, {"ts", FieldType::kTimestamp}},
                           0, &s));
  EXPECT_EQ(s.offsets(), (std::vector<uint32_t>{0, 8, 12, 20, 23}));
  EXPECT_EQ(s.tuple_bytes(), 31u);
  FieldRef p1;
  ASSERT_TRUE(s.find("p1", &p1));
  EXPECT_EQ(p1.offset, 12u);
  EXPECT_FALSE(s.find("p2", &p1));
  EXPECT_EQ(s.describe(), "esper{seq:u64,p0:i32,p1:i64,tag:bytes[3],ts:timestamp;tuple_bytes=31}");
}

TEST(Schema, ErrorsNameTheSchemaAndTheField) {
  Schema s;
  Status st = Schema::make("q", {{"a", FieldType::kI32}, {"a", FieldType::kI64}}, 0, &s);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("'a' is declared twice"), std::string::npos) << st.message();
  st = Schema::make("q", {{"seq", FieldType::kU64}}, 0, &s);
  EXPECT_NE(st.message().find("do not declare it"), std::string::npos) << st.message();
  st = Schema::make("q", {{"b", FieldType::kBytes}}, 0, &s);
  EXPECT_NE(st.message().find("needs a width"), std::string::npos) << st.message();
  st = Schema::make("q", {{"x", FieldType::kI64}}, 12, &s);
  EXPECT_NE(st.message().find("more than tuple_bytes 12"), std::string::npos) << st.message();
  st = Schema::make("q", {{"2x", FieldType::kI64}}, 0, &s);
  EXPECT_NE(st.message().find("'2x'"), std::string::npos) << st.message();
  st = Schema::make("q", {{"x", FieldType::kI32, 8}}, 0, &s);
  EXPECT_NE(st.message().find("not 8 bytes"), std::string::npos) << st.message();
}

TEST(Schema, SameLayoutIgnoresTheNameButNotATypeOrWidth) {
  Schema a, b, c;
  ASSERT_TRUE(Schema::make("a", {{"k", FieldType::kI32}, {"v", FieldType::kI64}}, 0, &a));
  ASSERT_TRUE(Schema::make("b", {{"k", FieldType::kI32}, {"v", FieldType::kI64}}, 0, &b));
  ASSERT_TRUE(Schema::make("a", {{"k", FieldType::kI32}, {"v", FieldType::kF64}}, 0, &c));
  EXPECT_TRUE(a.same_layout(b));
  EXPECT_FALSE(a.same_layout(c));
  FieldType t;
  EXPECT_TRUE(parse_field_type("timestamp", &t));
  EXPECT_EQ(t, FieldType::kTimestamp);
  EXPECT_FALSE(parse_field_type("int", &t));
}

}  // namespace
}  // namespace sluice

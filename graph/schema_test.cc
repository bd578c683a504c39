// Schema: offsets laid out after seq, errors that name the field.
#include "graph/schema.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Schema, FieldsFollowSeqPacked) {
  Schema s;
  ASSERT_TRUE(Schema::make("s", {{"a", FieldType::kI32}, {"b", FieldType::kF64}, {"c", FieldType::kBytes, 3}}, 0, &s).ok());
  FieldRef r;
  ASSERT_TRUE(s.find("a", &r));
  EXPECT_EQ(r.offset, 8u);
  ASSERT_TRUE(s.find("b", &r));
  EXPECT_EQ(r.offset, 12u);
  ASSERT_TRUE(s.find("c", &r));
  EXPECT_EQ(r.offset, 20u);
  EXPECT_EQ(r.width, 3u);
  EXPECT_EQ(s.tuple_bytes(), 23u);
  EXPECT_FALSE(s.find("zz", &r));
}

TEST(Schema, ErrorsNameTheField) {
  Schema s;
  Status st = Schema::make("s", {{"a", FieldType::kI32}, {"a", FieldType::kI64}}, 0, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'a'"), std::string::npos);
  st = Schema::make("s", {{"a", FieldType::kI64}}, 12, &s);
  EXPECT_FALSE(st.ok());
}

TEST(Schema, DefaultIsSeqThenKey) {
  Schema s = Schema::default_for(128);
  EXPECT_EQ(s.describe(), "default{seq:u64,key:u32;tuple_bytes=128}");
  EXPECT_TRUE(s.same_layout(Schema::default_for(128)));
  EXPECT_FALSE(s.same_layout(Schema::default_for(64)));
}

}  // namespace
}  // namespace sluice

#include "graph/schema.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Schema, DefaultIsTodaysTuple) {
  Schema s = Schema::default_for(128);
  EXPECT_EQ(s.tuple_bytes(), 128u);
  FieldRef key;
  ASSERT_TRUE(s.find("key", &key));
  EXPECT_EQ(key.offset, 8u);
  EXPECT_EQ(key.type, FieldType::kU32);
  EXPECT_EQ(s.describe(), "default{seq:u64,key:u32;tuple_bytes=128}");
}

TEST(Schema, PacksFieldsAfterSeq) {
  Schema s;
  ASSERT_TRUE(Schema::make("t", {{"a", FieldType::kI32, 0}, {"b", FieldType::kF64, 0},
                                 {"c", FieldType::kBytes, 5}},
                           0, &s)
                  .ok());
  EXPECT_EQ(s.tuple_bytes(), 8u + 4 + 8 + 5);
  FieldRef c;
  ASSERT_TRUE(s.find("c", &c));
  EXPECT_EQ(c.offset, 20u);
  EXPECT_EQ(c.width, 5u);
  Schema w;
  ASSERT_TRUE(Schema::make("t", {{"a", FieldType::kI32, 0}, {"b", FieldType::kF64, 0},
                                 {"c", FieldType::kBytes, 5}},
                           64, &w)
                  .ok());
  EXPECT_FALSE(s.same_layout(w));
}

TEST(Schema, RefusesBadDeclarations) {
  Schema s;
  EXPECT_NE(Schema::make("t", {{"seq", FieldType::kU64, 0}}, 0, &s).message().find("seq"),
            std::string::npos);
  EXPECT_NE(Schema::make("t", {{"a", FieldType::kU32, 0}, {"a", FieldType::kU32, 0}}, 0, &s)
                .message()
                .find("twice"),
            std::string::npos);
  EXPECT_NE(Schema::make("t", {{"b", FieldType::kBytes, 0}}, 0, &s).message().find("width"),
            std::string::npos);
  EXPECT_NE(Schema::make("t", {{"a", FieldType::kI64, 0}}, 12, &s).message().find("more than"),
            std::string::npos);
}

TEST(Schema, LoadsNumbers) {
  Schema s;
  ASSERT_TRUE(Schema::make("t", {{"i", FieldType::kI32, 0}, {"f", FieldType::kF64, 0}}, 0, &s).ok());
  std::byte t[32] = {};
  int32_t i = -5;
  double f = 2.5;
  FieldRef fi, ff;
  s.find("i", &fi);
  s.find("f", &ff);
  std::memcpy(t + fi.offset, &i, 4);
  std::memcpy(t + ff.offset, &f, 8);
  EXPECT_EQ(load_i64(t, fi), -5);
  EXPECT_EQ(load_f64(t, ff), 2.5);
}

}  // namespace
}  // namespace sluice

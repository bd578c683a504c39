// RecordDecoder: a Kafka record's value into a tuple of the schema, and
// the place of what does not decode.
#include <gtest/gtest.h>

#include <cstring>

#include "loadgen/kafka_source.h"

namespace sluice {
namespace {

Schema esper() {
  Schema s;
  EXPECT_TRUE(Schema::make("esper", {{"p0", FieldType::kI64}, {"p1", FieldType::kF64}, {"k", FieldType::kU32}}, 0, &s));
  return s;
}

std::string why_not(const RecordDecoder& d, const std::string& rec) {
  std::byte t[64] = {};
  std::string why;
  return d.decode(rec.data(), rec.size(), t, &why) ? "ok" : why;
}

TEST(RecordDecoder, CsvFieldsAfterSeqInOrder) {
  Status st;
  const Schema s = esper();
  auto d = RecordDecoder::make("csv", s, &st);
  ASSERT_TRUE(d) << st.message();
  std::byte t[64] = {};
  const uint64_t seq = 77;
  std::memcpy(t, &seq, 8);
  std::string why;
  const std::string rec = "-12,2.5,4000000000\n";
  ASSERT_TRUE(d->decode(rec.data(), rec.size(), t, &why)) << why;
  FieldRef p0, p1, k;
  ASSERT_TRUE(s.find("p0", &p0) && s.find("p1", &p1) && s.find("k", &k));
  EXPECT_EQ(load_i64(t, p0), -12);
  EXPECT_EQ(load_f64(t, p1), 2.5);
  uint32_t kv = 0;
  std::memcpy(&kv, t + k.offset, 4);
  EXPECT_EQ(kv, 4000000000u);
  uint64_t kept = 0;
  std::memcpy(&kept, t, 8);
  EXPECT_EQ(kept, seq) << "seq is the source's, not the record's";
}

TEST(RecordDecoder, WhatDoesNotDecodeIsNamedWithItsFieldAndColumn) {
  Status st;
  auto d = RecordDecoder::make("csv", esper(), &st);
  ASSERT_TRUE(d);
  EXPECT_EQ(why_not(*d, "1,x,3"), "field p1 (column 3): 'x' does not parse as f64");
  EXPECT_EQ(why_not(*d, "1,2"), "2 fields, the schema has 3 (k missing)");
  EXPECT_EQ(why_not(*d, "1,2,3,4"), "more than the schema's 3 fields (column 7 is past 'k')");
  EXPECT_EQ(why_not(*d, "1,2,99999999999"), "field k (column 5): '99999999999' does not parse as u32");
  EXPECT_EQ(why_not(*d, ""), "1 fields, the schema has 3 (p1 missing)");
  EXPECT_EQ(why_not(*d, ",2,3"), "field p0 (column 1): '' does not parse as i64");
}

TEST(RecordDecoder, OnlyCsvOfNumbers) {
  Status st;
  EXPECT_FALSE(RecordDecoder::make("avro", esper(), &st));
  EXPECT_NE(st.message().find("only csv"), std::string::npos) << st.message();
  Schema b;
  ASSERT_TRUE(Schema::make("b", {{"blob", FieldType::kBytes, 16}}, 0, &b));
  EXPECT_FALSE(RecordDecoder::make("csv", b, &st));
  EXPECT_NE(st.message().find("'blob' is bytes"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice

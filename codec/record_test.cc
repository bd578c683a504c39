// The record codecs: each format decodes what it should into the right bytes
// of a tuple, refuses what it should with the position and the reason, and
// encodes tuples into records that decode back to the same tuples.
#include "codec/record.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace sluice {
namespace {

// seq, a:i32, b:i64, c:u32, d:u64, t:timestamp, x:f64, s:bytes[6]
Schema all_types() {
  Schema s;
  Status st = Schema::make("all",
                           {{"a", FieldType::kI32, 0},
                            {"b", FieldType::kI64, 0},
                            {"c", FieldType::kU32, 0},
                            {"d", FieldType::kU64, 0},
                            {"t", FieldType::kTimestamp, 0},
                            {"x", FieldType::kF64, 0},
                            {"s", FieldType::kBytes, 6}},
                           0, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

Schema esper() {
  Schema s;
  EXPECT_TRUE(Schema::make("esper", {{"p0", FieldType::kI64, 0}, {"p1", FieldType::kI64, 0}}, 0, &s).ok());
  return s;
}

template <class T>
T field(const Schema& s, const std::vector<std::byte>& t, const char* name) {
  FieldRef r;
  EXPECT_TRUE(s.find(name, &r)) << name;
  T v{};
  std::memcpy(&v, t.data() + r.offset, sizeof v);
  return v;
}

RecordDecoder decoder(const Schema& s, RecordFormat f, std::vector<std::string> cols = {}) {
  RecordDecoder d;
  Status st = RecordDecoder::make(s, f, std::move(cols), &d);
  EXPECT_TRUE(st.ok()) << st.message();
  return d;
}

RecordEncoder encoder(const Schema& s, RecordFormat f, std::vector<std::string> cols = {}) {
  RecordEncoder e;
  Status st = RecordEncoder::make(s, f, std::move(cols), &e);
  EXPECT_TRUE(st.ok()) << st.message();
  return e;
}

// The message a record's decode fails with, at "in.csv:7"; "" if it decodes.
std::string failure(const RecordDecoder& d, std::string_view rec, const Schema& s) {
  std::vector<std::byte> t(s.tuple_bytes());
  RecordError e;
  if (d.decode(rec, t.data(), &e)) return "";
  return d.explain(e, rec, "in.csv:7");
}

TEST(RecordCsv, DecodesEveryTypeIntoItsField) {
  const Schema s = all_types();
  RecordDecoder d = decoder(s, RecordFormat::kCsv);
  std::vector<std::byte> t(s.tuple_bytes(), std::byte{0x55});
  RecordError e;
  ASSERT_TRUE(d.decode("-7,-9000000000,4000000000,18446744073709551615,1700000000000000000,2.5e-3,IBM",
                       t.data(), &e))
      << d.explain(e, "", "x");
  EXPECT_EQ(field<int32_t>(s, t, "a"), -7);
  EXPECT_EQ(field<int64_t>(s, t, "b"), -9000000000);
  EXPECT_EQ(field<uint32_t>(s, t, "c"), 4000000000u);
  EXPECT_EQ(field<uint64_t>(s, t, "d"), UINT64_MAX);
  EXPECT_EQ(field<uint64_t>(s, t, "t"), 1700000000000000000u);
  EXPECT_EQ(field<double>(s, t, "x"), 2.5e-3);
  char sym[6];
  std::memcpy(sym, t.data() + 8 + 4 + 8 + 4 + 8 + 8 + 8, 6);
  EXPECT_EQ(std::string(sym, 6), std::string("IBM\0\0\0", 6));  // zero-padded
  EXPECT_EQ(field<uint64_t>(s, t, "seq"), 0x5555555555555555u);  // the caller's to set
}

TEST(RecordCsv, ColumnsMapToFieldsByNameInAnyOrderAndUnknownOnesAreSkipped) {
  const Schema s = esper();
  // The header's order, with a column of no field and a seq column between.
  RecordDecoder d = decoder(s, RecordFormat::kCsv, {"p1", "note", "seq", "p0"});
  std::vector<std::byte> t(s.tuple_bytes());
  RecordError e;
  ASSERT_TRUE(d.decode("517,\"a, quoted note\",99,3", t.data(), &e)) << d.explain(e, "", "x");
  EXPECT_EQ(field<int64_t>(s, t, "p0"), 3);
  EXPECT_EQ(field<int64_t>(s, t, "p1"), 517);
  EXPECT_EQ(field<uint64_t>(s, t, "seq"), 0u);
}

TEST(RecordCsv, QuotedValuesAreRead) {
  const Schema s = all_types();
  RecordDecoder d = decoder(s, RecordFormat::kCsv);
  std::vector<std::byte> t(s.tuple_bytes());
  RecordError e;
  ASSERT_TRUE(d.decode("\"1\",2,3,4,5,\"6.5\",\"a,\"\"b\"", t.data(), &e)) << d.explain(e, "", "x");
  EXPECT_EQ(field<int32_t>(s, t, "a"), 1);
  EXPECT_EQ(field<double>(s, t, "x"), 6.5);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data()) + 48, 4), "a,\"b");
}

TEST(RecordCsv, BadValuesAreErrorsNamingLineColumnFieldAndText) {
  const Schema s = esper();
  RecordDecoder d = decoder(s, RecordFormat::kCsv);
  EXPECT_EQ(failure(d, "3,517", s), "");
  EXPECT_EQ(failure(d, "3,x17", s), "in.csv:7:3: field p1 (i64): 'x17' is not an integer");
  EXPECT_EQ(failure(d, "3.5,17", s), "in.csv:7:1: field p0 (i64): '3.5' is not an integer");
  EXPECT_EQ(failure(d, "3", s), "in.csv:7:2: 1 of 2 values: nothing for column 2 (p1)");
  EXPECT_EQ(failure(d, "3,4,5", s), "in.csv:7:4: more than the 2 values expected: ',5' after the last");
  EXPECT_EQ(failure(d, ",4", s), "in.csv:7:1: field p0 (i64): empty value");
  EXPECT_EQ(failure(d, "3,", s), "in.csv:7:3: field p1 (i64): empty value");
  EXPECT_EQ(failure(d, "3, 4", s), "in.csv:7:3: field p1 (i64): ' 4' is not an integer");
  EXPECT_EQ(failure(d, "99999999999999999999,4", s),
            "in.csv:7:1: field p0 (i64): '99999999999999999999' does not fit i64 "
            "(-9223372036854775808..9223372036854775807)");
  EXPECT_EQ(failure(d, "\"3,4", s),
            "in.csv:7:1: field p0 (i64): expected a closing quote before the record's end: '\"3,4'");
  EXPECT_EQ(failure(d, "\"3\"x,4", s),
            "in.csv:7:1: field p0 (i64): expected ',' after the closing quote: '\"3\"x'");
}

TEST(RecordCsv, ValuesThatDoNotFitTheirFieldAreErrors) {
  const Schema s = all_types();
  RecordDecoder d = decoder(s, RecordFormat::kCsv);
  EXPECT_EQ(failure(d, "2147483648,0,0,0,0,0,", s),
            "in.csv:7:1: field a (i32): '2147483648' does not fit i32 (-2147483648..2147483647)");
  EXPECT_EQ(failure(d, "0,0,-1,0,0,0,", s), "in.csv:7:5: field c (u32): '-1' does not fit u32 (0..4294967295)");
  EXPECT_EQ(failure(d, "0,0,4294967296,0,0,0,", s),
            "in.csv:7:5: field c (u32): '4294967296' does not fit u32 (0..4294967295)");
  EXPECT_EQ(failure(d, "0,0,0,0,0,1e999,", s),
            "in.csv:7:11: field x (f64): '1e999' does not fit f64 (a double's range)");
  EXPECT_EQ(failure(d, "0,0,0,0,0,0,ABCDEFG", s),
            "in.csv:7:13: field s (bytes, width 6): 'ABCDEFG' is longer than the field's 6 bytes");
  EXPECT_EQ(failure(d, "0,0,0,0,0,0,ABCDEF", s), "");
  EXPECT_EQ(failure(d, "0,0,0,0,0,0,", s), "");  // an empty bytes field is zeros
}

TEST(RecordCsv, HeaderNamesAreSplitAndUnquoted) {
  std::vector<std::string> names;
  RecordError e;
  ASSERT_TRUE(csv_header("\xEF\xBB\xBFp0,\"p1\",\"a \"\"b\"\"\"", &names, &e));
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "a \"b\""}));
  EXPECT_FALSE(csv_header("p0,\"p1", &names, &e));
  EXPECT_EQ(e.kind, RecordError::Kind::kBadQuote);
  EXPECT_EQ(e.offset, 3u);
}

TEST(RecordDecoderMake, EveryFieldNeedsAColumnAndAColumnAtMostOnce) {
  const Schema s = esper();
  RecordDecoder d;
  Status st = RecordDecoder::make(s, RecordFormat::kCsv, {"p0", "x"}, &d);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "field 'p1' of schema 'esper' has no column (the columns: p0, x)");
  st = RecordDecoder::make(s, RecordFormat::kCsv, {"p0", "p1", "p0"}, &d);
  EXPECT_EQ(st.message(), "column 'p0' appears twice");
  st = RecordDecoder::make(s, RecordFormat::kBinary, {"p0", "p1", "x"}, &d);
  EXPECT_EQ(st.message(), "binary column 'x' names no field of schema 'esper' (its width is unknown)");
}

TEST(RecordJsonl, DecodesFieldsByNameInAnyOrderAndSkipsOthers) {
  const Schema s = all_types();
  RecordDecoder d = decoder(s, RecordFormat::kJsonl);
  std::vector<std::byte> t(s.tuple_bytes());
  RecordError e;
  const std::string rec =
      R"( { "s": "A\"\u00e9", "x": -1.5E2, "extra": {"deep": [1, {"k": "v,}"}], "n": null},)"
      R"( "a":1, "b" : -2, "c":"3", "d":4, "t":5, "seq": 77 } )";
  ASSERT_TRUE(d.decode(rec, t.data(), &e)) << d.explain(e, rec, "x");
  EXPECT_EQ(field<int32_t>(s, t, "a"), 1);
  EXPECT_EQ(field<int64_t>(s, t, "b"), -2);
  EXPECT_EQ(field<uint32_t>(s, t, "c"), 3u);  // a number as a string
  EXPECT_EQ(field<uint64_t>(s, t, "d"), 4u);
  EXPECT_EQ(field<double>(s, t, "x"), -150.0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data()) + 48, 6), std::string("A\"\xC3\xA9\0\0", 6));
  EXPECT_EQ(field<uint64_t>(s, t, "seq"), 0u);
}

TEST(RecordJsonl, BadRecordsAreErrorsWithTheirColumn) {
  const Schema s = esper();
  RecordDecoder d = decoder(s, RecordFormat::kJsonl);
  EXPECT_EQ(failure(d, R"({"p0":3,"p1":517})", s), "");
  EXPECT_EQ(failure(d, R"({"p0":3})", s), "in.csv:7:8: no field 'p1' in the object");
  EXPECT_EQ(failure(d, R"({"p0":3,"p1":"x"})", s), "in.csv:7:14: field p1 (i64): '\"x\"' is not an integer");
  EXPECT_EQ(failure(d, R"({"p0":3,"p1":null})", s), "in.csv:7:14: field p1 (i64): 'null' is not a number");
  EXPECT_EQ(failure(d, R"({"p0":3,"p1":[1]})", s), "in.csv:7:14: field p1 (i64): '[1]' is not a number");
  EXPECT_EQ(failure(d, R"({"p0":3,"p0":4,"p1":5})", s), "in.csv:7:9: field 'p0' given twice");
  EXPECT_EQ(failure(d, R"({"p0":3 "p1":5})", s),
            "in.csv:7:9: not a flat JSON object: expected ',' or '}' after a value, found '\"p1\"'");
  EXPECT_EQ(failure(d, R"({"p0":3,"p1":5}x)", s),
            "in.csv:7:16: not a flat JSON object: expected the record's end after its '}', found 'x'");
  EXPECT_EQ(failure(d, R"([1,2])", s), "in.csv:7:1: not a flat JSON object: expected '{' to open the record, found '[1,2]'");
  EXPECT_EQ(failure(d, "", s), "in.csv:7:1: not a flat JSON object: expected '{' to open the record, found the record's end");
  EXPECT_EQ(failure(d, R"({"p0":3,"p1":5)", s),
            "in.csv:7:15: not a flat JSON object: expected ',' or '}' after a value, found the record's end");
  EXPECT_EQ(failure(d, R"({"p0":1.5,"p1":5})", s), "in.csv:7:7: field p0 (i64): '1.5' is not an integer");
}

TEST(RecordJsonl, DeepNestingInASkippedValueIsAnErrorNotACrash) {
  const Schema s = esper();
  RecordDecoder d = decoder(s, RecordFormat::kJsonl);
  std::string deep = R"({"x":)" + std::string(100000, '[') + std::string(100000, ']') + R"(,"p0":1,"p1":2})";
  EXPECT_NE(failure(d, deep, s).find("expected a JSON value"), std::string::npos);
  std::string ok = R"({"x":)" + std::string(60, '[') + std::string(60, ']') + R"(,"p0":1,"p1":2})";
  EXPECT_EQ(failure(d, ok, s), "");
}

TEST(RecordBinary, RecordsAreTheFieldsBackToBackAndASizeOtherThanTheRecordsIsAnError) {
  const Schema s = esper();
  RecordDecoder d = decoder(s, RecordFormat::kBinary);
  EXPECT_EQ(d.record_bytes(), 16u);
  const int64_t v[2] = {-3, 1234567890123};
  std::vector<std::byte> t(s.tuple_bytes());
  RecordError e;
  ASSERT_TRUE(d.decode(std::string_view(reinterpret_cast<const char*>(v), 16), t.data(), &e));
  EXPECT_EQ(field<int64_t>(s, t, "p0"), -3);
  EXPECT_EQ(field<int64_t>(s, t, "p1"), 1234567890123);
  // In another order.
  RecordDecoder r = decoder(s, RecordFormat::kBinary, {"p1", "p0"});
  ASSERT_TRUE(r.decode(std::string_view(reinterpret_cast<const char*>(v), 16), t.data(), &e));
  EXPECT_EQ(field<int64_t>(s, t, "p0"), 1234567890123);
  EXPECT_EQ(field<int64_t>(s, t, "p1"), -3);
  EXPECT_EQ(failure(d, std::string_view(reinterpret_cast<const char*>(v), 13), s),
            "in.csv:7: a record of 13 bytes, not 16 (the columns' bytes: p0:8, p1:8)");
}

// Tuples through every format's encoder and back through its decoder.
TEST(RecordRoundTrip, EveryFormatGivesBackTheTuple) {
  const Schema s = all_types();
  struct Row {
    int32_t a;
    int64_t b;
    uint32_t c;
    uint64_t d, t;
    double x;
    const char* text;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Row rows[] = {
      {0, 0, 0, 0, 0, 0.0, ""},
      {INT32_MIN, INT64_MIN, UINT32_MAX, UINT64_MAX, 1, -0.1, "a,\"b\n"},
      {INT32_MAX, INT64_MAX, 1, 2, UINT64_MAX, 4.9e-324, "\x01\\\x7f\xff"},
      {-1, -1, 7, 8, 9, 1.7976931348623157e308, "ABCDEF"},
      {5, 6, 7, 8, 9, -inf, "x"},
      {5, 6, 7, 8, 9, inf, "x"},
  };
  for (RecordFormat f : {RecordFormat::kCsv, RecordFormat::kJsonl, RecordFormat::kBinary}) {
    SCOPED_TRACE(record_format_name(f));
    RecordEncoder enc = encoder(s, f);
    RecordDecoder dec = decoder(s, f);
    for (const Row& r : rows) {
      std::vector<std::byte> t(s.tuple_bytes()), back(s.tuple_bytes());
      auto put = [&](const char* name, const void* v, size_t n) {
        FieldRef ref;
        ASSERT_TRUE(s.find(name, &ref));
        std::memcpy(t.data() + ref.offset, v, n);
      };
      put("a", &r.a, 4);
      put("b", &r.b, 8);
      put("c", &r.c, 4);
      put("d", &r.d, 8);
      put("t", &r.t, 8);
      put("x", &r.x, 8);
      put("s", r.text, std::strlen(r.text));
      std::string out(enc.max_bytes(), '\0');
      out.resize(enc.encode(t.data(), out.data()));
      ASSERT_LE(out.size(), enc.max_bytes());
      RecordError e;
      ASSERT_TRUE(dec.decode(out, back.data(), &e)) << dec.explain(e, out, "round trip") << " of " << out;
      EXPECT_EQ(0, std::memcmp(t.data() + 8, back.data() + 8, s.tuple_bytes() - 8)) << out;
    }
  }
}

TEST(RecordEncoder, WritesTheColumnsAsked) {
  const Schema s = esper();
  std::vector<std::byte> t(s.tuple_bytes());
  const int64_t v[3] = {41, 3, -517};
  std::memcpy(t.data(), v, 24);
  RecordEncoder csv = encoder(s, RecordFormat::kCsv, {"seq", "p1", "p0"});
  EXPECT_EQ(csv.csv_header(), "seq,p1,p0");
  std::string out(csv.max_bytes(), '\0');
  out.resize(csv.encode(t.data(), out.data()));
  EXPECT_EQ(out, "41,-517,3");
  RecordEncoder json = encoder(s, RecordFormat::kJsonl, {"p0", "p1"});
  out.assign(json.max_bytes(), '\0');
  out.resize(json.encode(t.data(), out.data()));
  EXPECT_EQ(out, R"({"p0":3,"p1":-517})");
  RecordEncoder bad;
  Status st = RecordEncoder::make(s, RecordFormat::kCsv, {"p0", "p2"}, &bad);
  EXPECT_EQ(st.message(), "column 'p2' names no field of schema 'esper' (its fields: seq, p0, p1)");
}

TEST(RecordEncoder, ANanGoesAsAStringInJsonAndComesBack) {
  Schema s;
  ASSERT_TRUE(Schema::make("f", {{"x", FieldType::kF64, 0}, {"y", FieldType::kI32, 0}}, 0, &s).ok());
  std::vector<std::byte> t(s.tuple_bytes());
  const double nan = std::nan("");
  std::memcpy(t.data() + 8, &nan, 8);
  RecordEncoder enc = encoder(s, RecordFormat::kJsonl);
  std::string out(enc.max_bytes(), '\0');
  out.resize(enc.encode(t.data(), out.data()));
  EXPECT_EQ(out, R"({"x":"nan","y":0})");
  std::vector<std::byte> back(s.tuple_bytes());
  RecordError e;
  ASSERT_TRUE(decoder(s, RecordFormat::kJsonl).decode(out, back.data(), &e));
  EXPECT_TRUE(std::isnan(field<double>(s, back, "x")));
}

}  // namespace
}  // namespace sluice

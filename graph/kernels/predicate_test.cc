// Filter and project against a direct evaluation of the tree, on random
// tuples, random trees and random run boundaries.
#include "graph/kernels/predicate.h"

#include <gtest/gtest.h>

#include "graph/kernels/test_util.h"

namespace sluice::kernels {
namespace {

using testing::Tuples;

Schema make_schema() {
  Schema s;
  EXPECT_TRUE(Schema::make("t", {{"a", FieldType::kI32}, {"b", FieldType::kI64}, {"c", FieldType::kU32},
                                 {"d", FieldType::kU64}, {"e", FieldType::kF64}, {"ts", FieldType::kTimestamp},
                                 {"pad", FieldType::kBytes, 3}}, 0, &s).ok());
  return s;
}

const char* kFields[] = {"a", "b", "c", "d", "e", "ts"};

// The reference: reads the field by its declared type and compares in that domain.
bool ref_eval(const PredicateSpec& p, const Tuples& t, size_t i) {
  if (p.kind == PredicateSpec::Kind::kAnd) {
    for (auto& c : p.children) if (!ref_eval(c, t, i)) return false;
    return true;
  }
  if (p.kind == PredicateSpec::Kind::kOr) {
    for (auto& c : p.children) if (ref_eval(c, t, i)) return true;
    return false;
  }
  const std::string& f = p.field;
  if (f == "a") return compare(p.op, int64_t{t.get<int32_t>(i, f)}, int64_t{std::stoll(p.value)});
  if (f == "b") return compare(p.op, t.get<int64_t>(i, f), int64_t{std::stoll(p.value)});
  if (f == "c") return compare(p.op, uint64_t{t.get<uint32_t>(i, f)}, uint64_t{std::stoull(p.value)});
  if (f == "e") return compare(p.op, t.get<double>(i, f), std::stod(p.value));
  return compare(p.op, t.get<uint64_t>(i, f), uint64_t{std::stoull(p.value)});
}

PredicateSpec random_tree(std::mt19937_64& rng, int depth) {
  if (depth == 0 || rng() % 3 == 0) {
    const char* f = kFields[rng() % 6];
    Cmp op = static_cast<Cmp>(rng() % 6);
    std::string v;
    std::string fs = f;
    if (fs == "a" || fs == "b") v = std::to_string(static_cast<int64_t>(rng() % 21) - 10);
    else if (fs == "e") v = std::to_string(static_cast<int>(rng() % 21) - 10) + ".5";
    else v = std::to_string(rng() % 12);
    return PredicateSpec::cmp(f, op, v);
  }
  std::vector<PredicateSpec> kids;
  size_t k = 2 + rng() % 2;
  for (size_t i = 0; i < k; ++i) kids.push_back(random_tree(rng, depth - 1));
  return rng() % 2 ? PredicateSpec::all(std::move(kids)) : PredicateSpec::any(std::move(kids));
}

void fill_random(Tuples& t, std::mt19937_64& rng) {
  for (size_t i = 0; i < t.size(); ++i) {
    t.set<int32_t>(i, "a", static_cast<int32_t>(rng() % 21) - 10);
    t.set<int64_t>(i, "b", static_cast<int64_t>(rng() % 21) - 10);
    t.set<uint32_t>(i, "c", static_cast<uint32_t>(rng() % 12));
    t.set<uint64_t>(i, "d", rng() % 12);
    t.set<double>(i, "e", static_cast<double>(static_cast<int>(rng() % 41) - 20) / 2);
    t.set<uint64_t>(i, "ts", rng() % 12);
  }
}

TEST(Predicate, MatchesReferenceOnRandomTrees) {
  Schema s = make_schema();
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    Tuples t(s, 3000);
    fill_random(t, rng);
    PredicateSpec spec = random_tree(rng, 3);
    Predicate p;
    ASSERT_TRUE(Predicate::make(s, spec, &p).ok()) << spec.describe();
    // The tree's text parses back to the same predicate.
    PredicateSpec reparsed;
    ASSERT_TRUE(parse_predicate(spec.describe(), &reparsed).ok()) << spec.describe();
    EXPECT_EQ(reparsed.describe(), spec.describe());
    std::vector<uint32_t> sel(t.size());
    for (auto [b, m] : testing::random_runs(t.size(), 2500, rng)) {
      size_t k = p.select(t.at(b), m, t.stride(), sel.data());
      std::vector<uint32_t> want;
      for (size_t i = 0; i < m; ++i) {
        if (ref_eval(spec, t, b + i)) want.push_back(static_cast<uint32_t>(i));
        EXPECT_EQ(p.eval(t.at(b + i)), ref_eval(spec, t, b + i));
      }
      ASSERT_EQ(std::vector<uint32_t>(sel.begin(), sel.begin() + k), want)
          << "seed " << seed << " " << spec.describe();
    }
  }
}

TEST(Predicate, ParseAndErrors) {
  Schema s = make_schema();
  PredicateSpec p;
  ASSERT_TRUE(parse_predicate("a >= 5 and (b<3 or d ne 0)", &p).ok());
  EXPECT_EQ(p.describe(), "(a >= 5 and (b < 3 or d != 0))");
  Status st = parse_predicate("a >= ", &p);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("expected a value"), std::string::npos) << st.message();
  st = parse_predicate("a => 3", &p);
  EXPECT_FALSE(st.ok());
  st = parse_predicate("(a > 3", &p);
  EXPECT_NE(st.message().find("')'"), std::string::npos) << st.message();
  Predicate q;
  st = Predicate::make(s, PredicateSpec::cmp("zz", Cmp::kLt, "3"), &q);
  EXPECT_NE(st.message().find("no field 'zz'"), std::string::npos) << st.message();
  st = Predicate::make(s, PredicateSpec::cmp("a", Cmp::kLt, "x3"), &q);
  EXPECT_NE(st.message().find("'x3' is not a i32"), std::string::npos) << st.message();
  st = Predicate::make(s, PredicateSpec::cmp("c", Cmp::kLt, "-1"), &q);
  EXPECT_FALSE(st.ok());
  st = Predicate::make(s, PredicateSpec::cmp("pad", Cmp::kLt, "1"), &q);
  EXPECT_NE(st.message().find("bytes"), std::string::npos) << st.message();
}

TEST(Projector, CopiesChosenFieldsIntoNewLayout) {
  Schema s = make_schema();
  Projector pr;
  ASSERT_TRUE(Projector::make(s, {"e", "a as x", "b", "pad"}, "out", &pr).ok());
  EXPECT_EQ(pr.output_schema().describe(), "out{seq:u64,e:f64,x:i32,b:i64,pad:bytes[3];tuple_bytes=31}");
  std::mt19937_64 rng(7);
  Tuples t(s, 500);
  fill_random(t, rng);
  for (size_t i = 0; i < t.size(); ++i) std::memset(t.at(i) + 48, static_cast<int>(i), 3);
  std::vector<std::byte> out(t.size() * pr.row_bytes());
  pr.project(t.data(), t.size(), t.stride(), out.data());
  const Schema& o = pr.output_schema();
  for (size_t i = 0; i < t.size(); ++i) {
    const std::byte* r = out.data() + i * pr.row_bytes();
    FieldRef f;
    ASSERT_TRUE(o.find("x", &f));
    EXPECT_EQ(load_i64(r, f), t.get<int32_t>(i, "a"));
    ASSERT_TRUE(o.find("e", &f));
    EXPECT_EQ(load_f64(r, f), t.get<double>(i, "e"));
    ASSERT_TRUE(o.find("b", &f));
    EXPECT_EQ(load_i64(r, f), t.get<int64_t>(i, "b"));
    ASSERT_TRUE(o.find("seq", &f));
    EXPECT_EQ(static_cast<uint64_t>(load_i64(r, f)), i);
    ASSERT_TRUE(o.find("pad", &f));
    EXPECT_EQ(std::memcmp(r + f.offset, t.at(i) + 48, 3), 0);
  }
  // project_sel + compact agree with a filter.
  Predicate p;
  ASSERT_TRUE(Predicate::make(s, PredicateSpec::cmp("a", Cmp::kGt, "0"), &p).ok());
  std::vector<uint32_t> sel(t.size());
  size_t k = p.select(t.data(), t.size(), t.stride(), sel.data());
  std::vector<std::byte> out2(k * pr.row_bytes());
  pr.project_sel(t.data(), sel.data(), k, t.stride(), out2.data());
  Tuples copy = t;
  compact(copy.at(0), sel.data(), k, t.stride());
  for (size_t j = 0; j < k; ++j) {
    EXPECT_GT(copy.get<int32_t>(j, "a"), 0);
    EXPECT_EQ(std::memcmp(copy.at(j), t.at(sel[j]), t.stride()), 0);
    EXPECT_EQ(std::memcmp(out2.data() + j * pr.row_bytes(), out.data() + sel[j] * pr.row_bytes(),
                          pr.row_bytes()), 0);
  }
  Status st = Projector::make(s, {"seq"}, "o", &pr);
  EXPECT_FALSE(st.ok());
  st = Projector::make(s, {"nope"}, "o", &pr);
  EXPECT_NE(st.message().find("no field 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace sluice::kernels

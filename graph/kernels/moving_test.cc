// Moving averages against the window recomputed from scratch, and the plain
// and cache-aware versions against each other, bit for bit.
#include "graph/kernels/moving.h"

#include <gtest/gtest.h>

#include <deque>

#include "graph/kernels/test_util.h"

namespace sluice::kernels {
namespace {

using testing::Tuples;

Schema make_schema() {
  Schema s;
  EXPECT_TRUE(Schema::make("t", {{"i", FieldType::kI32}, {"l", FieldType::kI64}, {"d", FieldType::kF64}}, 0, &s).ok());
  return s;
}

TEST(MovingAverage, MatchesWindowRecomputedAndVersionsAgree) {
  Schema s = make_schema();
  const uint64_t windows[] = {1, 2, 3, 17, 100, 1000, 4099};
  const uint32_t stagings[] = {1, 7, 64, 1024};
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    Tuples t(s, 9000);
    for (size_t i = 0; i < t.size(); ++i) {
      t.set<int32_t>(i, "i", static_cast<int32_t>(rng() % 2000001) - 1000000);
      t.set<int64_t>(i, "l", static_cast<int64_t>(rng() >> 16) - (int64_t{1} << 47));
      t.set<double>(i, "d", static_cast<double>(rng() % 100000) / 7.0);
    }
    for (const char* field : {"i", "l", "d"}) {
      for (uint64_t w : windows) {
        MovingAverage plain;
        ASSERT_TRUE(MovingAverage::make(s, field, w, &plain).ok());
        std::vector<double> want(t.size());
        for (auto [b, m] : testing::random_runs(t.size(), 1500, rng)) plain.consume(t.at(b), m, t.stride(), &want[b]);
        // Independent reference: the window's sum recomputed (exact for integers).
        std::deque<long double> win;
        for (size_t i = 0; i < t.size(); ++i) {
          FieldRef f;
          s.find(field, &f);
          win.push_back(std::string(field) == "d" ? t.get<double>(i, "d") : static_cast<long double>(load_i64(t.at(i), f)));
          if (win.size() > w) win.pop_front();
          if (std::string(field) == "d") {
            long double sum = 0;
            for (auto v : win) sum += v;
            ASSERT_NEAR(want[i], static_cast<double>(sum / win.size()), 1e-6 * (1 + std::abs(static_cast<double>(sum))))
                << field << " N=" << w << " i=" << i;
          } else if (i % 7 == 0 || w < 200) {
            __int128 sum = 0;
            for (auto v : win) sum += static_cast<int64_t>(v);
            ASSERT_EQ(want[i], static_cast<double>(static_cast<int64_t>(sum)) / static_cast<double>(win.size()))
                << field << " N=" << w << " i=" << i;
          }
        }
        for (uint32_t k : stagings) {
          MovingAverage ca;
          ASSERT_TRUE(make_cache_aware(s, field, w, &ca, k).ok());
          std::vector<double> got(t.size());
          for (auto [b, m] : testing::random_runs(t.size(), 1500, rng)) ca.consume(t.at(b), m, t.stride(), &got[b]);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(double)))
              << field << " N=" << w << " staging=" << k;
        }
      }
    }
  }
}

TEST(MovingAverage, HoldsTheColumnOnlyAndRejectsBadParameters) {
  Schema s = make_schema();
  MovingAverage m;
  ASSERT_TRUE(MovingAverage::make(s, "i", 100000, &m).ok());
  EXPECT_LT(m.bytes_held(), 100000 * 4 + 256);
  ASSERT_TRUE(make_cache_aware(s, "d", 100000, &m).ok());
  EXPECT_LT(m.bytes_held(), 100000 * 8 + 1024 * 8 + 256);
  EXPECT_FALSE(MovingAverage::make(s, "nope", 10, &m).ok());
  EXPECT_FALSE(MovingAverage::make(s, "i", 0, &m).ok());
}

}  // namespace
}  // namespace sluice::kernels

// Moving average over a count-based sliding window of the last N tuples
// (CQL: SELECT avg(F) FROM S [ROWS N SLIDE 1]): one result per tuple.
//
// Both versions keep only the referenced column, in a ring of N values of the
// field's own width (4 bytes for i32/u32, 8 for the rest) allocated at make(),
// and a running sum updated as sum += new - old (old is 0 while the window
// fills), so one tuple costs O(1) whatever N is.
//   - MovingAverage: the plain column-store ring; each tuple reads the value it
//     evicts and writes its own in the same place.
//   - CacheAwareMovingAverage (Mendes, Bizarro, Marques, Table 3): new values
//     go to a small staging buffer (`staging` values, L1-resident) and are
//     copied into the window a block at a time; the values evicted are read
//     from the window in the same blocks.
// Both produce bit-identical results. Integer fields are summed exactly in 64
// bits (u64 read as i64); f64 fields in double, in arrival order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/snapshot.h"
#include "base/status.h"
#include "graph/schema.h"

namespace sluice::kernels {

class MovingAverage {
 public:
  MovingAverage();
  ~MovingAverage();
  MovingAverage(MovingAverage&&) noexcept;
  MovingAverage& operator=(MovingAverage&&) noexcept;

  // window: 1 .. 2^32 tuples. staging 0: the plain ring; else the cache-aware
  // version with that many values staged (make_cache_aware's default 1024).
  static Status make(const Schema& in, const std::string& field, uint64_t window,
                     MovingAverage* out, uint32_t staging = 0);
  // out[i]: the average over the window ending at tuple i (room for n).
  void consume(const std::byte* tuples, size_t n, uint32_t stride, double* out);

  // The window's values and running sum, and back: load() into a moving
  // average made alike continues bit-identically. Error: the bytes do not fit.
  void save(SnapshotOut& out) const;
  Status load(SnapshotIn& in);

  size_t bytes_held() const;
  uint64_t window() const;

  struct Impl;  // the ring, per stored type and version (moving.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

// The cache-aware version, by name.
inline Status make_cache_aware(const Schema& in, const std::string& field, uint64_t window,
                               MovingAverage* out, uint32_t staging = 1024) {
  return MovingAverage::make(in, field, window, out, staging == 0 ? 1024 : staging);
}

}  // namespace sluice::kernels

// Tuples for the kernels' tests and benchmarks: a run laid out by a Schema,
// fields written by name.
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/schema.h"

namespace sluice::kernels::testing {

class Tuples {
 public:
  Tuples(const Schema& s, size_t n) : s_(s), buf_(n * s.tuple_bytes()), n_(n) {
    for (size_t i = 0; i < n; ++i) set<uint64_t>(i, "seq", i);
  }
  template <class T>
  void set(size_t i, const std::string& field, T v) {
    FieldRef r;
    if (!s_.find(field, &r)) std::abort();
    std::memcpy(&buf_[i * s_.tuple_bytes() + r.offset], &v, sizeof v);
  }
  template <class T>
  T get(size_t i, const std::string& field) const {
    FieldRef r;
    if (!s_.find(field, &r)) std::abort();
    T v;
    std::memcpy(&v, &buf_[i * s_.tuple_bytes() + r.offset], sizeof v);
    return v;
  }
  const std::byte* at(size_t i) const { return buf_.data() + i * s_.tuple_bytes(); }
  std::byte* at(size_t i) { return buf_.data() + i * s_.tuple_bytes(); }
  const std::byte* data() const { return buf_.data(); }
  size_t size() const { return n_; }
  uint32_t stride() const { return s_.tuple_bytes(); }

 private:
  const Schema& s_;
  std::vector<std::byte> buf_;
  size_t n_;
};

// Cuts [0, n) into runs of random lengths 1..max_run.
inline std::vector<std::pair<size_t, size_t>> random_runs(size_t n, size_t max_run, std::mt19937_64& rng) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < n;) {
    size_t m = 1 + rng() % max_run;
    if (m > n - i) m = n - i;
    runs.emplace_back(i, m);
    i += m;
  }
  return runs;
}

// Collects emitted rows.
struct Collect {
  std::vector<std::vector<std::byte>> rows;
  uint32_t row_bytes;
  explicit Collect(uint32_t rb) : row_bytes(rb) {}
  void operator()(const std::byte* r, size_t n) {
    for (size_t i = 0; i < n; ++i) rows.emplace_back(r + i * row_bytes, r + (i + 1) * row_bytes);
  }
};

template <class T>
T row_get(const std::vector<std::byte>& row, uint32_t off) {
  T v;
  std::memcpy(&v, row.data() + off, sizeof v);
  return v;
}

}  // namespace sluice::kernels::testing

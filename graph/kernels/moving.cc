#include "graph/kernels/moving.h"

#include <fmt/format.h>

#include <cstring>
#include <type_traits>

namespace sluice::kernels {

namespace {

template <class T>
struct Acc {
  using type = int64_t;
};
template <>
struct Acc<double> {
  using type = double;
};

// s + v - old. Integers wrap (in u64): the same sum whenever the window's
// true sum fits in 64 bits, and defined when it does not (extreme i64 values,
// or a restored snapshot's sum), where signed overflow would be undefined.
template <class A, class T>
inline A slide(A s, T v, T old) {
  if constexpr (std::is_floating_point_v<A>) {
    return s + static_cast<A>(v) - static_cast<A>(old);
  } else {
    return static_cast<A>(static_cast<uint64_t>(s) + static_cast<uint64_t>(static_cast<A>(v)) -
                          static_cast<uint64_t>(static_cast<A>(old)));
  }
}

}  // namespace

struct MovingAverage::Impl {
  virtual ~Impl() = default;
  virtual void consume(const std::byte* t, size_t n, uint32_t stride, double* out) = 0;
  virtual size_t bytes() const = 0;
  virtual void save(SnapshotOut& out) const = 0;
  virtual void load(SnapshotIn& in) = 0;
  uint64_t window = 0;
};

namespace {

// T: the stored type (the field's). Staged: the cache-aware version.
template <class T, bool kStaged>
struct Ring final : MovingAverage::Impl {
  using A = typename Acc<T>::type;
  std::unique_ptr<T[]> ring;
  std::unique_ptr<T[]> stage;
  uint32_t k = 0;        // staging capacity
  uint32_t staged = 0;   // values in stage, destined to ring[pos - staged ..)
  uint64_t pos = 0;      // ring position of the next tuple
  uint64_t count = 0;    // values in the window
  A sum = 0;
  uint32_t off = 0;

  Ring(uint64_t n, uint32_t field_off, uint32_t staging) : off(field_off) {
    window = n;
    ring.reset(new T[n]());  // zero: what a not yet full window evicts
    if (kStaged) {
      k = staging;
      stage.reset(new T[staging]);
    }
  }

  size_t bytes() const override { return sizeof(*this) + window * sizeof(T) + k * sizeof(T); }

  // The window's values in ring order, the staged ones put where they go.
  void save(SnapshotOut& out) const override {
    out.put<uint64_t>(window);
    out.put<uint32_t>(sizeof(T));
    out.put<uint64_t>(count);
    out.put<uint64_t>(pos);
    out.put<A>(sum);
    const uint64_t valid = count < window ? count : window;
    const uint64_t from = pos - staged;  // a block never wraps: pos >= staged
    out.bytes(ring.get(), from * sizeof(T));
    if (staged) out.bytes(stage.get(), size_t{staged} * sizeof(T));
    if (valid > pos) out.bytes(ring.get() + pos, (valid - pos) * sizeof(T));
  }
  void load(SnapshotIn& in) override {
    const uint64_t w = in.get<uint64_t>();
    const uint32_t width = in.get<uint32_t>();
    const uint64_t c = in.get<uint64_t>(), p = in.get<uint64_t>();
    const A s = in.get<A>();
    if (in.ok() && (w != window || width != sizeof(T)))
      in.fail(fmt::format("holds a moving average over {} values of {} bytes, this one keeps {} of {}",
                          w, width, window, sizeof(T)));
    if (in.ok() && (c > window || (c < window && p != c) || (c == window && p >= window)))
      in.fail(fmt::format("names position {} with {} values in a window of {}", p, c, window));
    if (!in.ok()) return;
    const uint64_t valid = c < window ? c : window;
    in.bytes(ring.get(), valid * sizeof(T));
    if (!in.ok()) return;
    if constexpr (!std::is_floating_point_v<A>) {  // a double's sum depends on its order: not checked
      A want = 0;
      for (uint64_t i = 0; i < valid; ++i) want = slide<A, T>(want, ring[i], T{});
      if (want != s) {
        in.fail(fmt::format("holds a running sum of {} for values that sum to {}", s, want));
        return;
      }
    }
    count = c;
    pos = p;
    sum = s;
    staged = 0;
  }

  void consume(const std::byte* t, size_t n, uint32_t stride, double* out) override {
    t += off;
    const uint64_t N = window;
    T* __restrict w = ring.get();
    A s = sum;
    uint64_t c = count, p = pos;
    if constexpr (!kStaged) {
      for (size_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, t + i * stride, sizeof v);
        s = slide<A, T>(s, v, w[p]);
        w[p] = v;
        if (++p == N) p = 0;
        c += c < N;
        out[i] = static_cast<double>(s) / static_cast<double>(c);
      }
    } else {
      T* __restrict st = stage.get();
      size_t i = 0;
      while (i < n) {
        // A block that neither overflows the stage nor wraps the ring.
        size_t b = n - i;
        if (b > k - staged) b = k - staged;
        if (b > N - p) b = N - p;
        const T* __restrict old = w + p;
        T* __restrict dst = st + staged;
        for (size_t j = 0; j < b; ++j) {
          T v;
          std::memcpy(&v, t + (i + j) * stride, sizeof v);
          dst[j] = v;
          s = slide<A, T>(s, v, old[j]);
          c += c < N;
          out[i + j] = static_cast<double>(s) / static_cast<double>(c);
        }
        i += b;
        p += b;
        staged += static_cast<uint32_t>(b);
        if (staged == k || p == N) {
          std::memcpy(w + p - staged, st, size_t{staged} * sizeof(T));
          staged = 0;
          if (p == N) p = 0;
        }
      }
    }
    sum = s;
    count = c;
    pos = p;
  }
};

template <bool kStaged>
std::unique_ptr<MovingAverage::Impl> make_ring(FieldType t, uint64_t n, uint32_t off, uint32_t k) {
  switch (t) {
    case FieldType::kI32: return std::make_unique<Ring<int32_t, kStaged>>(n, off, k);
    case FieldType::kU32: return std::make_unique<Ring<uint32_t, kStaged>>(n, off, k);
    case FieldType::kF64: return std::make_unique<Ring<double, kStaged>>(n, off, k);
    default: return std::make_unique<Ring<int64_t, kStaged>>(n, off, k);
  }
}

}  // namespace

MovingAverage::MovingAverage() = default;
MovingAverage::~MovingAverage() = default;
MovingAverage::MovingAverage(MovingAverage&&) noexcept = default;
MovingAverage& MovingAverage::operator=(MovingAverage&&) noexcept = default;

Status MovingAverage::make(const Schema& in, const std::string& field, uint64_t window,
                           MovingAverage* out, uint32_t staging) {
  FieldRef f;
  if (!in.find(field, &f)) {
    return Status::Error(fmt::format("moving average: schema '{}' has no field '{}'", in.name(), field));
  }
  if (f.type == FieldType::kBytes) {
    return Status::Error(fmt::format("moving average: field '{}' is bytes, not a number", field));
  }
  if (window == 0 || window > (uint64_t{1} << 32)) {
    return Status::Error(fmt::format("moving average: window {} is not in 1..2^32 tuples", window));
  }
  if (staging > (1u << 20)) {
    return Status::Error(fmt::format("moving average: staging {} values is more than 2^20", staging));
  }
  out->impl_ = staging ? make_ring<true>(f.type, window, f.offset, staging)
                       : make_ring<false>(f.type, window, f.offset, 0);
  return {};
}

void MovingAverage::consume(const std::byte* tuples, size_t n, uint32_t stride, double* out) {
  impl_->consume(tuples, n, stride, out);
}
size_t MovingAverage::bytes_held() const { return impl_->bytes(); }
void MovingAverage::save(SnapshotOut& out) const { impl_->save(out); }
Status MovingAverage::load(SnapshotIn& in) {
  impl_->load(in);
  return in.ok() ? Status() : Status::Error(in.what());
}
uint64_t MovingAverage::window() const { return impl_->window; }

}  // namespace sluice::kernels

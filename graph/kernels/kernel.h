// graph/kernels/: the query kernels, pure operator cores over tuples already in
// memory. They know nothing of slots, descriptors or events: the runtime's
// operators wrap them (take a run of tuples out of an event, hand a kernel its
// tuples, copy what it emits into slots).
//
// What every kernel shares:
//   1. It is made once from a Schema and its parameters; field names are
//      resolved to FieldRefs then, never per tuple. A bad parameter is a Status
//      naming the kernel and the parameter.
//   2. Its state is sized at construction (declared capacities); bytes_held()
//      says how much it holds. Nothing allocates per tuple or per batch; a
//      declared capacity that is exceeded is a counted, documented event
//      (an error Status, an eviction), never a reallocation.
//   3. Input is a run of tuples: `const std::byte* tuples, size_t n, uint32_t
//      stride` (stride = the schema's tuple_bytes; tuples need no alignment).
//   4. Output rows are laid out by the kernel's output_schema() (seq first,
//      like every tuple) and handed to a RowEmit in contiguous blocks: one call
//      per block, not per row. An emit must accept what it is given (copy it
//      out, or block until it can); the rows are valid only during the call.
//   5. A kernel instance is used by one thread at a time.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace sluice::kernels {

// Tuples are evaluated column-at-a-time in chunks of this many (scratch arrays
// of this length stay in L1).
inline constexpr size_t kChunk = 1024;

// A non-owning reference to a callable `void(const std::byte* rows, size_t n)`:
// n rows of the kernel's output row size, contiguous. One indirect call per
// block of rows.
class RowEmit {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RowEmit>>>
  RowEmit(F& f)  // NOLINT: implicit on purpose, like function_ref
      : obj_(static_cast<void*>(&f)), call_([](void* o, const std::byte* r, size_t n) {
          (*static_cast<F*>(o))(r, n);
        }) {}
  void operator()(const std::byte* rows, size_t n) const { call_(obj_, rows, n); }

 private:
  void* obj_;
  void (*call_)(void*, const std::byte*, size_t);
};

// Large state (a join's index, a big window) in anonymous memory, asked to be
// backed by 2 MiB pages (madvise(MADV_HUGEPAGE); THP in "madvise" mode honours
// it, "never" ignores it): random probes over hundreds of MiB then miss the
// cache but not the TLB, which in a VM costs a two-level page walk per probe.
// Zero-filled. Not copyable.
class BigBuffer {
 public:
  BigBuffer() = default;
  explicit BigBuffer(size_t bytes) : bytes_(bytes ? bytes : 1) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (bytes_ >= (size_t{2} << 20)) ::madvise(p, bytes_, MADV_HUGEPAGE);
    p_ = static_cast<std::byte*>(p);
  }
  BigBuffer(BigBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  BigBuffer& operator=(BigBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~BigBuffer() { release(); }
  std::byte* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (p_) ::munmap(p_, bytes_);
    p_ = nullptr;
  }
  std::byte* p_ = nullptr;
  size_t bytes_ = 0;
};

enum class Cmp : uint8_t { kLt, kLe, kGt, kGe, kEq, kNe };
// "lt" "le" "gt" "ge" "eq" "ne", and the symbols < <= > >= == (=) !=.
bool parse_cmp(const char* s, size_t len, Cmp* out);
const char* cmp_name(Cmp c);

template <Cmp C, class T>
inline bool compare(T a, T b) {
  if constexpr (C == Cmp::kLt) return a < b;
  if constexpr (C == Cmp::kLe) return a <= b;
  if constexpr (C == Cmp::kGt) return a > b;
  if constexpr (C == Cmp::kGe) return a >= b;
  if constexpr (C == Cmp::kEq) return a == b;
  return a != b;
}
template <class T>
inline bool compare(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::kLt: return a < b;
    case Cmp::kLe: return a <= b;
    case Cmp::kGt: return a > b;
    case Cmp::kGe: return a >= b;
    case Cmp::kEq: return a == b;
    default: return a != b;
  }
}

// 64-bit mix (the finalizer of splitmix64 / murmur3): keys that differ in any
// bit land in unrelated slots and partitions.
inline uint64_t hash_key(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

}  // namespace sluice::kernels

// Operator state as bytes: what a stateful operator writes into a snapshot
// and reads back on restart (node/checkpoint.h frames, checksums and stores
// it). Little-endian fixed-width fields, in the order the writer chose; the
// reader checks every length against what is left, so a truncated or altered
// snapshot is an error, never a read past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace sluice {

class SnapshotOut {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
  }
  void bytes(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  // A length-prefixed block.
  void block(const void* p, size_t n) {
    put<uint64_t>(n);
    bytes(p, n);
  }
  const std::string& data() const { return buf_; }
  void clear() { buf_.clear(); }

 private:
  std::string buf_;  // reused from one snapshot to the next
};

class SnapshotIn {
 public:
  SnapshotIn(const void* p, size_t n) : p_(static_cast<const std::byte*>(p)), n_(n) {}
  // False once a read ran past the end or a check failed; what() says which.
  bool ok() const { return error_.empty(); }
  const std::string& what() const { return error_; }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    bytes(&v, sizeof v);
    return v;
  }
  void bytes(void* out, size_t n) {
    if (!ok() || n > n_ - off_) {
      fail("ends early");
      return;
    }
    std::memcpy(out, p_ + off_, n);
    off_ += n;
  }
  // A block written by SnapshotOut::block that must be exactly `n` bytes.
  void block(void* out, size_t n) {
    uint64_t len = get<uint64_t>();
    if (ok() && len != n) {
      fail("holds a block of " + std::to_string(len) + " bytes where " + std::to_string(n) +
           " were expected (a different operator configuration?)");
      return;
    }
    bytes(out, n);
  }
  size_t left() const { return n_ - off_; }

 private:
  const std::byte* p_;
  size_t n_, off_ = 0;
  std::string error_;
};

}  // namespace sluice

// The buffer pool: fixed-size slots allocated once, at start, and (for the
// RDMA transports) registered once. An event lives in one slot from the moment
// it is received (or generated) until the send stage is told its bytes are
// gone. Nothing on the data path allocates: a slot is taken from the free ring
// and given back to it.
//
// acquire() is called by one thread (the receiving side), release() by one
// other thread (the side that learns the bytes are gone); the free ring is a
// single-producer single-consumer ring between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/descriptor.h"
#include "base/ring.h"

namespace sluice {

class SlotPool {
 public:
  // slot_bytes is rounded up to a cache line. Memory is mapped, touched and
  // (best effort) backed by huge pages up front, so RSS stays flat afterwards.
  SlotPool(size_t slots, size_t slot_bytes);
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  size_t slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  std::byte* base() const { return base_; }
  size_t bytes() const { return map_bytes_; }
  std::byte* slot(uint32_t i) const { return base_ + size_t{i} * slot_bytes_; }

  // A free slot, or kNoSlot when all are in use.
  uint32_t try_acquire();
  // Waits for a free slot (or close()); kNoSlot once closed.
  uint32_t acquire(Wait policy);
  void release(uint32_t slot);
  size_t free_slots() const { return free_.size(); }
  void close() { free_.close(); }

 private:
  size_t slots_;
  size_t slot_bytes_;
  size_t map_bytes_;
  std::byte* base_ = nullptr;
  SpscRing<uint32_t> free_;
};

}  // namespace sluice

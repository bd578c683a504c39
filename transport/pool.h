// The buffer pool: fixed-size slots allocated once, at start, and (for the
// RDMA carriers) registered once. An event lives in one slot from the moment
// it is received (or generated) until the last holder of its descriptor is
// told its bytes are gone. Nothing on the data path allocates: a slot is
// taken from the free queue and given back to it.
//
//   1. One thread, the pool's owner (the receive stage, or the load
//      generator), acquires free slots: a slot then has one holder.
//   2. retain() adds holders (an event copied to several downstream links).
//   3. Any thread releases a holder. The last release puts the slot on the
//      free queue (multi-producer, single-consumer) and wakes the owner.
//   4. A pool may keep a reserve: its last `reserved` slots have a free queue
//      of their own, consumed by one other thread (the process stage, whose
//      operators emit new events into them). They never mix with the
//      owner's slots, so the owner's credits stay one per slot.
//   5. A release of a slot that has no holder (a double release), or of a
//      slot number the pool does not have (a foreign one), is an error, not
//      silently lost.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/descriptor.h"
#include "base/ring.h"
#include "base/status.h"

namespace sluice {

class SlotPool {
 public:
  // slot_bytes is rounded up to a cache line. Memory is mapped, touched and
  // (best effort) backed by huge pages up front, so RSS stays flat afterwards.
  SlotPool(size_t slots, size_t slot_bytes, size_t reserved = 0);
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  size_t slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  std::byte* base() const { return base_; }
  size_t bytes() const { return map_bytes_; }
  std::byte* slot(uint32_t i) const { return base_ + size_t{i} * slot_bytes_; }

  // The owner: a free slot (now with one holder), or kNoSlot when none is.
  uint32_t try_acquire();
  size_t try_acquire_n(uint32_t* out, size_t max);
  // Waits for a free slot (or close()); kNoSlot once closed.
  uint32_t acquire(Wait policy);

  // The reserve's consumer: slots [reserve_first(), slots()).
  size_t reserved() const { return slots_ - reserve_first_; }
  uint32_t reserve_first() const { return static_cast<uint32_t>(reserve_first_); }
  uint32_t try_acquire_reserved();
  // Waits for a free reserved slot (or close()); kNoSlot once closed.
  uint32_t acquire_reserved(Wait policy);

  // Any thread.
  Status retain(uint32_t slot, uint32_t more);
  Status release(uint32_t slot);

  // Where the owner sleeps until a slot is freed (futex, or its fd). A
  // release wakes it once `threshold` slots are free (default 1): an owner
  // that returns credits in batches sleeps until a batch is ready, instead
  // of waking (and costing a syscall) per slot. It lowers the threshold to 1
  // when it waits for one particular slot.
  EventCount& freed() { return freed_; }
  // What a release that would wake the owner calls first, where the owner
  // set one: true if it dealt with the freed slots itself, and the owner
  // need not wake (node/net.cc: a receive stage asleep on tcp links lets
  // the releasing thread give the slots back and return the credits, as
  // one thread's wake-up less in every credit round trip).
  class FreedHook {
   public:
    virtual ~FreedHook() = default;
    virtual bool on_freed() = 0;
  };
  void set_freed_hook(FreedHook* h) { hook_.store(h, std::memory_order_release); }
  void set_wake_threshold(size_t threshold) {
    wake_threshold_.store(threshold ? threshold : 1, std::memory_order_seq_cst);
  }
  size_t free_slots() const;
  void close();

  // Runs `f` when the pool goes, before its memory is unmapped (a carrier
  // that registered the pool's pages deregisters them there).
  void on_destroy(std::function<void()> f) { on_destroy_.push_back(std::move(f)); }
  // For a carrier that replaced the pool's pages with its library's own
  // (ucx rma over shared memory: memory a peer can attach): from now on the
  // range is unmapped by `unmap`, run when the pool goes, and never by the
  // pool. Whoever replaced the pages keeps them until then, so the range is
  // never free while the pool lives: giving it back to anonymous memory
  // would leave a moment in which another thread could map into it, and
  // lose that mapping to the pool's. Once only.
  void hand_over(std::function<void()> unmap);
  bool closed() const { return closed_.load(std::memory_order_acquire); }

 private:
  struct alignas(16) Cell {
    std::atomic<uint64_t> seq;
    uint32_t slot;
  };
  void push_free(uint32_t slot);
  // The reserve's own queue (the same algorithm as the owner's, below).
  struct Reserve {
    std::unique_ptr<Cell[]> cells;
    uint64_t mask = 0;
    alignas(kCacheLine) std::atomic<uint64_t> tail{0};
    alignas(kCacheLine) std::atomic<uint64_t> head{0};
    EventCount freed;
  };
  void push_reserved(uint32_t slot);
  size_t reserve_first_;
  std::unique_ptr<Reserve> reserve_;

  size_t slots_;
  size_t slot_bytes_;
  size_t map_bytes_;
  std::byte* base_ = nullptr;
  std::unique_ptr<std::atomic<uint32_t>[]> holders_;
  std::unique_ptr<Cell[]> cells_;
  uint64_t mask_ = 0;
  alignas(kCacheLine) std::atomic<uint64_t> tail_{0};  // producers
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};  // written by the owner only
  std::atomic<size_t> wake_threshold_{1};
  alignas(kCacheLine) std::atomic<bool> closed_{false};
  EventCount freed_;
  std::atomic<FreedHook*> hook_{nullptr};
  std::vector<std::function<void()>> on_destroy_;
  std::function<void()> unmap_;  // set by hand_over
};

}  // namespace sluice

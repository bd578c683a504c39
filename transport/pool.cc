#include "transport/pool.h"

#include <sys/mman.h>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace sluice {
namespace {
size_t pow2_at_least(size_t n) {
  size_t p = 2;
  while (p < n) p <<= 1;
  return p;
}
}  // namespace

SlotPool::SlotPool(size_t slots, size_t slot_bytes, size_t reserved)
    : slots_(slots + reserved), slot_bytes_((slot_bytes + kCacheLine - 1) / kCacheLine * kCacheLine) {
  if (slots == 0 || slot_bytes == 0) throw std::invalid_argument("pool needs slots and slot bytes");
  reserve_first_ = slots;
  if (slots_ >= kNoSlot) throw std::invalid_argument("too many slots");
  map_bytes_ = slots_ * slot_bytes_;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("mmap of " + std::to_string(map_bytes_) + " pool bytes failed: " +
                             std::strerror(errno));
  madvise(p, map_bytes_, MADV_HUGEPAGE);
  std::memset(p, 0, map_bytes_);  // fault every page in now, not on the data path
  base_ = static_cast<std::byte*>(p);
  holders_.reset(new std::atomic<uint32_t>[slots_]);
  const size_t cap = pow2_at_least(reserve_first_);
  mask_ = cap - 1;
  cells_.reset(new Cell[cap]);
  for (size_t i = 0; i < cap; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  for (uint32_t i = 0; i < slots_; ++i) holders_[i].store(0, std::memory_order_relaxed);
  for (uint32_t i = 0; i < reserve_first_; ++i) push_free(i);
  if (reserved) {
    reserve_ = std::make_unique<Reserve>();
    const size_t rcap = pow2_at_least(reserved);
    reserve_->mask = rcap - 1;
    reserve_->cells.reset(new Cell[rcap]);
    for (size_t i = 0; i < rcap; ++i) reserve_->cells[i].seq.store(i, std::memory_order_relaxed);
    for (size_t i = reserve_first_; i < slots_; ++i) push_reserved(static_cast<uint32_t>(i));
  }
}

SlotPool::~SlotPool() {
  for (auto& f : on_destroy_) f();
  if (unmap_)
    unmap_();
  else if (base_)
    munmap(base_, map_bytes_);
}

void SlotPool::hand_over(std::function<void()> unmap) {
  if (unmap_) throw std::logic_error("a pool's pages can be handed over once");
  unmap_ = std::move(unmap);
}

// A bounded multi-producer queue (Vyukov's): a producer claims a position with
// one fetch_add and publishes the cell with its sequence number. It can never
// be full: a slot is on it at most once, and it has room for every slot.
void SlotPool::push_free(uint32_t slot) {
  const uint64_t pos = tail_.fetch_add(1, std::memory_order_relaxed);
  Cell& c = cells_[pos & mask_];
  while (c.seq.load(std::memory_order_acquire) != pos) SLUICE_CPU_RELAX();  // owner mid-pop
  c.slot = slot;
  c.seq.store(pos + 1, std::memory_order_release);
}

void SlotPool::push_reserved(uint32_t slot) {
  Reserve& r = *reserve_;
  const uint64_t pos = r.tail.fetch_add(1, std::memory_order_relaxed);
  Cell& c = r.cells[pos & r.mask];
  while (c.seq.load(std::memory_order_acquire) != pos) SLUICE_CPU_RELAX();
  c.slot = slot;
  c.seq.store(pos + 1, std::memory_order_release);
}

uint32_t SlotPool::try_acquire_reserved() {
  if (!reserve_) return kNoSlot;
  Reserve& r = *reserve_;
  const uint64_t head = r.head.load(std::memory_order_relaxed);
  Cell& c = r.cells[head & r.mask];
  if (c.seq.load(std::memory_order_acquire) != head + 1) return kNoSlot;
  const uint32_t s = c.slot;
  c.seq.store(head + r.mask + 1, std::memory_order_release);
  r.head.store(head + 1, std::memory_order_relaxed);
  holders_[s].store(1, std::memory_order_relaxed);
  return s;
}

uint32_t SlotPool::acquire_reserved(Wait policy) {
  if (!reserve_) return kNoSlot;
  Reserve& r = *reserve_;
  for (;;) {
    uint32_t s = try_acquire_reserved();
    if (s != kNoSlot) return s;
    if (closed()) return kNoSlot;
    wait_until(
        policy, r.freed,
        [&] {
          const uint64_t h = r.head.load(std::memory_order_relaxed);
          return r.cells[h & r.mask].seq.load(std::memory_order_acquire) == h + 1;
        },
        [&] { return closed(); });
  }
}

size_t SlotPool::try_acquire_n(uint32_t* out, size_t max) {
  uint64_t head = head_.load(std::memory_order_relaxed);
  size_t n = 0;
  while (n < max) {
    Cell& c = cells_[head & mask_];
    if (c.seq.load(std::memory_order_acquire) != head + 1) break;
    const uint32_t s = c.slot;
    c.seq.store(head + mask_ + 1, std::memory_order_release);
    ++head;
    holders_[s].store(1, std::memory_order_relaxed);
    out[n++] = s;
  }
  if (n) head_.store(head, std::memory_order_relaxed);
  return n;
}

uint32_t SlotPool::try_acquire() {
  uint32_t s;
  return try_acquire_n(&s, 1) ? s : kNoSlot;
}

uint32_t SlotPool::acquire(Wait policy) {
  for (;;) {
    uint32_t s = try_acquire();
    if (s != kNoSlot) return s;
    if (closed()) return kNoSlot;
    wait_until(
        policy, freed_,
        [&] {
          const uint64_t h = head_.load(std::memory_order_relaxed);
          return cells_[h & mask_].seq.load(std::memory_order_acquire) == h + 1;
        },
        [&] { return closed(); });
  }
}

size_t SlotPool::free_slots() const {
  const uint64_t t = tail_.load(std::memory_order_acquire);
  const uint64_t h = head_.load(std::memory_order_relaxed);
  return t > h ? t - h : 0;
}

Status SlotPool::retain(uint32_t slot, uint32_t more) {
  if (slot >= slots_)
    return Status::Error(fmt::format("retain of slot {} of a pool of {} slots", slot, slots_));
  if (holders_[slot].fetch_add(more, std::memory_order_relaxed) == 0) {
    holders_[slot].fetch_sub(more, std::memory_order_relaxed);
    return Status::Error(fmt::format("retain of slot {}, which is free", slot));
  }
  return {};
}

Status SlotPool::release(uint32_t slot) {
  if (slot >= slots_)
    return Status::Error(
        fmt::format("release of slot {}, which is not in this pool of {} slots", slot, slots_));
  uint32_t h = holders_[slot].load(std::memory_order_relaxed);
  do {
    if (h == 0)
      return Status::Error(fmt::format("slot {} released twice (it was already free)", slot));
  } while (!holders_[slot].compare_exchange_weak(h, h - 1, std::memory_order_acq_rel,
                                                 std::memory_order_relaxed));
  if (h == 1 && slot >= reserve_first_) {
    push_reserved(slot);
    reserve_->freed.notify();
  } else if (h == 1) {
    push_free(slot);
    // The fence in notify() orders the push before the loads behind it; the
    // owner announces itself, then re-reads the free count, before it sleeps.
    const size_t t = wake_threshold_.load(std::memory_order_relaxed);
    if (t <= 1 || free_slots() >= t) {
      FreedHook* h = hook_.load(std::memory_order_acquire);
      if (!h || !h->on_freed()) freed_.notify();
    }
  }
  return {};
}

void SlotPool::close() {
  closed_.store(true, std::memory_order_seq_cst);
  freed_.notify();
  if (reserve_) reserve_->freed.notify();
}

}  // namespace sluice

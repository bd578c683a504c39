#include "transport/pool.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
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

SlotPool::SlotPool(size_t slots, size_t slot_bytes)
    : slots_(slots),
      slot_bytes_((slot_bytes + kCacheLine - 1) / kCacheLine * kCacheLine),
      free_(pow2_at_least(slots)) {
  if (slots == 0 || slot_bytes == 0) throw std::invalid_argument("pool needs slots and slot bytes");
  if (slots >= kNoSlot) throw std::invalid_argument("too many slots");
  map_bytes_ = slots_ * slot_bytes_;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("mmap of " + std::to_string(map_bytes_) + " pool bytes failed: " +
                             std::strerror(errno));
  madvise(p, map_bytes_, MADV_HUGEPAGE);
  std::memset(p, 0, map_bytes_);  // fault every page in now, not on the data path
  base_ = static_cast<std::byte*>(p);
  for (uint32_t i = 0; i < slots_; ++i) free_.try_push(i);
}

SlotPool::~SlotPool() {
  if (base_) munmap(base_, map_bytes_);
}

uint32_t SlotPool::try_acquire() {
  uint32_t s;
  return free_.try_pop(s) ? s : kNoSlot;
}

uint32_t SlotPool::acquire(Wait policy) {
  uint32_t s;
  return free_.pop_n(&s, 1, policy) == 1 ? s : kNoSlot;
}

void SlotPool::release(uint32_t slot) { free_.try_push(slot); }

}  // namespace sluice

// Descriptor rings: bounded single-producer single-consumer queues between two
// stages, and the one place where a stage decides how to wait.
//
// 1. The producer try_push()es; the consumer try_pop()s. Neither ever blocks:
//    they return false / 0 when the ring is full / empty.
// 2. A stage that must wait calls push() / pop_n() with a Wait policy:
//    kBlock sleeps on a futex (the default: no cycles burnt while idle),
//    kSpin spins, kHybrid spins a short while and then sleeps.
// 3. close() wakes everybody; pop_n() then drains what is left and returns 0.
//
// Head, tail and each side's cached copy of the other's index live on their
// own cache lines; a side re-reads the other's index only when its cached copy
// says the ring is full (producer) or empty (consumer).
#pragma once

#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SLUICE_CPU_RELAX() _mm_pause()
#else
#define SLUICE_CPU_RELAX() asm volatile("" ::: "memory")
#endif

namespace sluice {

inline constexpr size_t kCacheLine = 64;

enum class Wait { kBlock, kSpin, kHybrid };

inline const char* wait_name(Wait w) {
  switch (w) {
    case Wait::kBlock: return "block";
    case Wait::kSpin: return "spin";
    case Wait::kHybrid: return "hybrid";
  }
  return "?";
}

inline bool parse_wait(std::string_view s, Wait* w) {
  if (s == "block") *w = Wait::kBlock;
  else if (s == "spin") *w = Wait::kSpin;
  else if (s == "hybrid") *w = Wait::kHybrid;
  else return false;
  return true;
}

// An eventcount: a waiter announces itself, re-checks its condition, then
// sleeps; a notifier makes a syscall only when somebody announced. A waiter
// sleeps on a futex, or (after enable_fd()) in poll/epoll on fd() together
// with other fds: the bridge a stage uses to wait on a ring and on a
// transport's completion handle at once.
class EventCount {
 public:
  EventCount() = default;
  EventCount(const EventCount&) = delete;
  EventCount& operator=(const EventCount&) = delete;
  ~EventCount() {
    if (fd_ >= 0) ::close(fd_);
  }

  // The futex form. The waiters and an epoch share one word: a notify that
  // finds waiters moves the epoch and clears them in one step, so the
  // notifies that follow (before a woken waiter has run: about 30 us on a
  // VM) find none and make no syscall. A load generator's send stage made
  // 1.8 FUTEX_WAKEs a frame that way, ~20 for each time its generator
  // waited on the pool.
  uint32_t prepare_wait() {
    return epoch_of(state_.fetch_add(1, std::memory_order_seq_cst));
  }
  void cancel_wait(uint32_t key) { leave(key); }
  void wait(uint32_t key) {
    syscall(SYS_futex, epoch_word(), FUTEX_WAIT_PRIVATE, key, nullptr, nullptr, 0);
    leave(key);  // woken for nothing (a signal): still counted, unless notified since
  }

  // The fd form, for the one thread that waits this way. enable_fd() (from
  // that thread, any time: a notifier looks at the fd only once a waiter
  // announced itself); then prepare_fd_wait(); re-check; sleep in
  // poll/epoll on fd() (and more); finish_fd_wait(fd was readable) in every
  // case, woken or not.
  bool enable_fd() {
    if (fd_.load(std::memory_order_relaxed) < 0)
      fd_.store(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), std::memory_order_release);
    return fd_.load(std::memory_order_relaxed) >= 0;
  }
  int fd() const { return fd_.load(std::memory_order_relaxed); }
  void prepare_fd_wait() {
    // Armed before the announcement, so a notifier that sees the waiter
    // sees it armed (or disarmed by another notifier, which wrote).
    fd_armed_.store(true, std::memory_order_relaxed);
    fd_waiters_.fetch_add(1, std::memory_order_seq_cst);
  }
  void finish_fd_wait(bool readable) {
    fd_waiters_.fetch_sub(1, std::memory_order_relaxed);
    uint64_t v;
    if (readable) (void)!::read(fd(), &v, sizeof v);  // one read resets the counter
  }

  // Caller has published its change; the fence orders that store before the
  // loads of the waiter counts (each waiter's fetch_add orders the other way).
  void notify() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    uint64_t st = state_.load(std::memory_order_relaxed);
    while ((st & kWaiterMask) != 0) {
      if (state_.compare_exchange_weak(st, (st | kWaiterMask) + 1, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
        syscall(SYS_futex, epoch_word(), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
        break;
      }
    }
    // One write per wait: the first notifier disarms it, and the eventfd
    // stays readable until the waiter reads it, so the writes after it
    // would wake nobody (with acks, 2 of 3 were such: a node's send thread
    // notified its receive stage 0.18 times a frame, which slept 0.06).
    if (fd_waiters_.load(std::memory_order_acquire) != 0 &&
        fd_armed_.exchange(false, std::memory_order_acq_rel)) {
      const uint64_t one = 1;
      (void)!::write(fd_.load(std::memory_order_acquire), &one, sizeof one);
    }
  }

 private:
  // state_: the epoch in the high 32 bits (the futex word), the futex
  // waiters in the low 32. (st | kWaiterMask) + 1 is the next epoch with no
  // waiters.
  static constexpr uint64_t kWaiterMask = 0xffffffffu;
  static uint32_t epoch_of(uint64_t st) { return static_cast<uint32_t>(st >> 32); }
  uint32_t* epoch_word() {
    static_assert(sizeof(state_) == 8 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                  "the epoch is the high half of state_");
    return reinterpret_cast<uint32_t*>(&state_) + 1;
  }
  // A waiter that was not notified (its epoch is still current) takes
  // itself off the count; a notify since has cleared it already.
  void leave(uint32_t key) {
    uint64_t st = state_.load(std::memory_order_relaxed);
    while (epoch_of(st) == key && (st & kWaiterMask) != 0 &&
           !state_.compare_exchange_weak(st, st - 1, std::memory_order_relaxed)) {
    }
  }

  alignas(kCacheLine) std::atomic<uint64_t> state_{0};
  std::atomic<uint32_t> fd_waiters_{0};
  std::atomic<bool> fd_armed_{false};
  std::atomic<int> fd_{-1};
};

// Spins of kHybrid before it sleeps: about 10 us of pause instructions.
inline constexpr int kHybridSpins = 2000;

// Waits until ready() is true or closed() is true, by policy.
template <class Ready, class Closed>
void wait_until(Wait policy, EventCount& ec, Ready ready, Closed closed) {
  int spins = 0;
  while (!ready() && !closed()) {
    if (policy == Wait::kSpin || (policy == Wait::kHybrid && spins < kHybridSpins)) {
      ++spins;
      SLUICE_CPU_RELAX();
      continue;
    }
    uint32_t key = ec.prepare_wait();
    if (ready() || closed()) {
      ec.cancel_wait(key);
      return;
    }
    ec.wait(key);
  }
}

template <class T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity) {
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
      throw std::invalid_argument("ring capacity must be a power of two >= 2");
    mask_ = capacity - 1;
    slots_ = std::make_unique<T[]>(capacity);
  }
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // Producer side.
  bool try_push(const T& v) { return try_push_n(&v, 1) == 1; }
  size_t try_push_n(const T* v, size_t n) {
    const uint64_t tail = p_.tail.load(std::memory_order_relaxed);
    size_t free = capacity() - (tail - p_.cached_head);
    if (free < n) {
      p_.cached_head = head_.load(std::memory_order_acquire);
      free = capacity() - (tail - p_.cached_head);
    }
    if (n > free) n = free;
    for (size_t i = 0; i < n; ++i) slots_[(tail + i) & mask_] = v[i];
    if (n) {
      p_.tail.store(tail + n, std::memory_order_release);
      not_empty_.notify();
    }
    return n;
  }

  // Consumer side.
  bool try_pop(T& out) { return try_pop_n(&out, 1) == 1; }
  size_t try_pop_n(T* out, size_t max) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    size_t avail = c_.cached_tail - head;
    if (avail == 0) {
      c_.cached_tail = p_.tail.load(std::memory_order_acquire);
      avail = c_.cached_tail - head;
    }
    if (avail > max) avail = max;
    for (size_t i = 0; i < avail; ++i) out[i] = slots_[(head + i) & mask_];
    if (avail) {
      head_.store(head + avail, std::memory_order_release);
      not_full_.notify();
    }
    return avail;
  }

  // Blocking forms. push() returns false if the ring was closed first.
  bool push(const T& v, Wait policy) {
    for (;;) {
      if (closed()) return false;
      if (try_push(v)) return true;
      wait_until(policy, not_full_,
                 [&] { return capacity() - (p_.tail.load(std::memory_order_relaxed) -
                                            head_.load(std::memory_order_acquire)) > 0; },
                 [&] { return closed(); });
    }
  }
  // Waits for at least one item; returns how many it popped, 0 once closed
  // and empty.
  size_t pop_n(T* out, size_t max, Wait policy) {
    for (;;) {
      size_t n = try_pop_n(out, max);
      if (n) return n;
      if (closed()) {
        n = try_pop_n(out, max);  // an item pushed just before close
        return n;
      }
      wait_until(policy, not_empty_, [&] { return size() > 0; }, [&] { return closed(); });
    }
  }

  size_t size() const {
    return p_.tail.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }
  // The consumer's wake-up, for a consumer that also waits on other fds.
  EventCount& not_empty() { return not_empty_; }

  void close() {
    closed_.store(true, std::memory_order_seq_cst);
    not_empty_.notify();
    not_full_.notify();
  }
  bool closed() const { return closed_.load(std::memory_order_acquire); }

 private:
  struct alignas(kCacheLine) Producer {
    std::atomic<uint64_t> tail{0};
    uint64_t cached_head = 0;
  };
  struct alignas(kCacheLine) Consumer {
    uint64_t cached_tail = 0;
  };
  Producer p_;
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};
  Consumer c_;
  alignas(kCacheLine) std::atomic<bool> closed_{false};
  EventCount not_empty_;
  EventCount not_full_;
  size_t mask_ = 0;
  std::unique_ptr<T[]> slots_;
};

}  // namespace sluice

// The locks of libfabric shm's segments that a killed process leaves held.
//
// libfabric's shm provider (1.17, Debian 12's; 1.18 too) keeps each
// endpoint's queues in a segment in /dev/shm, guarded by a pthread spin lock
// in the segment itself: the segment's owner takes it in its progress
// (fi_cq_read), its peer in every send into it (fi_sendmsg, fi_writemsg). A
// process SIGKILLed while it holds one (its progress copying a 32 KiB frame,
// a send posting) never lets it go, and its peer's next call spins on it for
// ever on a core: it never returns, so the link never reads its control
// connection, which says the peer died. (Seen: the three-kill fault run hung
// about once in 120 kills of a fabric shm process: the load generator spun
// in fi_sendmsg on the lock of the dead node-a's segment, its pid in the
// segment's name.) libfabric 1.18 narrowed the lock to the pool of large
// messages' buffers (017f27141, an atomic command queue), and nothing in
// its API frees a lock a dead process held.
//
// So what a robust mutex does (EOWNERDEAD), done from outside: each shm
// endpoint's LockWatch counts its calls into libfabric (odd: inside one),
// and one thread in the process looks at every watch each 200 ms. A call
// that has not returned for a second, on a link whose peer process is gone,
// waits on a lock only the dead peer can hold (a thread spins on a
// segment's lock holding no other segment's: 1.17's nested take is a
// trylock, and each segment is one link's, between two processes), so
// the watch frees the held locks of the two segments it mapped. The call
// then ends (a send into a full dead queue says "again"; progress reads
// what the dead peer left, and its copies from a dead process fail), the
// link sees the control connection's hang-up and fails as for any dead
// peer, and replay does the rest. The two segments are discarded with the
// link (a reconnect makes new ones), so what the dead process left half
// written in them is never used again.
//
// It touches libfabric's memory only where it checked the layout: a
// segment's header (struct smr_region of 1.17/1.18's include/ofi_shm.h,
// mirrored in shm_locks.cc) must say version 4, the pid in its name, its
// own size and its own name at its name offset; else the link runs without
// a watch and says why once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace sluice::fabric::shm {

class LockWatch {
 public:
  // Maps the headers of this endpoint's segment (`own`) and its peer's, both
  // sluice's names (sluice-PID-INCARNATION-N, fabric.cc's shm_name), checks
  // them, and starts watching. `link` names the link in what it logs. Null,
  // and why in *why, if a header is not the layout it knows.
  static std::unique_ptr<LockWatch> make(const std::string& own, const std::string& peer,
                                         std::string link, std::string* why);
  ~LockWatch();
  LockWatch(const LockWatch&) = delete;
  LockWatch& operator=(const LockWatch&) = delete;

  // Around each call into libfabric on this endpoint (one thread at a time):
  // two plain stores, no fence.
  void enter() { calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  void leave() { calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

 private:
  struct Segment;
  LockWatch(std::string link, int peer_pid);
  friend class Watcher;
  // The watcher's round (under its lock): frees the held locks if a call has
  // been stuck for kStuckRounds rounds and the peer process is gone.
  void check();

  std::atomic<uint32_t> calls_{0};
  const std::string link_;
  const int peer_pid_;
  std::unique_ptr<Segment> own_, peer_;
  uint32_t last_ = 0;  // the watcher's: calls_ at its last round
  int stuck_ = 0;      // rounds in a row inside the same call
};

// The guard of one call (a null watch: no watch, nothing done).
class InCall {
 public:
  explicit InCall(LockWatch* w) : w_(w) {
    if (w_) w_->enter();
  }
  ~InCall() {
    if (w_) w_->leave();
  }
  InCall(const InCall&) = delete;
  InCall& operator=(const InCall&) = delete;

 private:
  LockWatch* const w_;
};

// The pid in one of sluice's segment names (sluice-PID-...), or 0.
int pid_of_segment(const std::string& name);

namespace testing {
// Takes the lock of segment `name` (/dev/shm/NAME), keeps it, and signals
// the segment's owner: what a process killed inside a send leaves (it posts
// and signals under the lock). Checks the layout as LockWatch does.
Status hold_lock(const std::string& name);
}  // namespace testing

}  // namespace sluice::fabric::shm

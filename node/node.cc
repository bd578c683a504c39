// The instance: its receive, process and send stages, the rings between them,
// and how they share threads (dedicated, shared, adaptive: "Run to
// completion" in docs/DESIGN.md). The network stages are in net.cc.
#include "node/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

namespace sluice {
namespace {
constexpr size_t kReceiveBatch = 64;
constexpr size_t kProcessBatch = 256;
constexpr size_t kSendBatch = 1024;  // everything queued, up to one gather list
// threads: adaptive: batches in a row that came without a wait, beyond which
// the stream is backed up and the receiving thread hands off.
constexpr uint32_t kBacklogBatches = 8;
// threads: adaptive: the most bytes a batch may name and still run to
// completion. Run to completion saves the hand-offs' fixed cost (a wake-up,
// tens of microseconds); a large batch costs its bytes, and receiving the
// next one while sending this one wins: with 32 KiB events run inline, a
// full-rate pipeline moves fewer tuples/s than dedicated's.
constexpr uint64_t kInlineBytes = 8192;

struct Counts {
  uint64_t events, tuples, bytes;
};
// Events, tuples and bytes named by a batch (an END names none).
Counts count(const Descriptor* d, size_t n) {
  Counts c{0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    if (d[i].flags & kDescEnd) continue;
    c.events += d[i].events;
    c.tuples += d[i].tuples;
    c.bytes += d[i].bytes;
  }
  return c;
}
}  // namespace

const char* threads_name(Threads t) {
  switch (t) {
    case Threads::kDedicated: return "dedicated";
    case Threads::kShared: return "shared";
    case Threads::kAdaptive: return "adaptive";
  }
  return "?";
}

bool parse_threads(const std::string& s, Threads* t) {
  if (s == "dedicated") *t = Threads::kDedicated;
  else if (s == "shared") *t = Threads::kShared;
  else if (s == "adaptive") *t = Threads::kAdaptive;
  else return false;
  return true;
}

bool Source::idle_wait(std::span<const int> fds, int ms, Status* st) {
  if (!idle_ || !idle_->busy()) return false;
  if (!(*st = idle_->progress()).ok() || !idle_->busy()) return true;
  idle_fds_.clear();
  idle_->wait_fds(&idle_fds_);
  idle_poll_.clear();
  for (int fd : fds) idle_poll_.push_back({fd, POLLIN, 0});
  for (int fd : idle_fds_) idle_poll_.push_back({fd, POLLIN, 0});
  // Bounded: a carrier whose peer died may say so only when asked.
  ::poll(idle_poll_.data(), idle_poll_.size(), ms < 0 || ms > 200 ? 200 : ms);
  return true;
}

// ---- Instance ---------------------------------------------------------------

Instance::Instance(const InstanceConfig& cfg, std::unique_ptr<Source> source,
                   std::unique_ptr<Destination> dest, OperatorChain chain,
                   std::function<void()> on_first_event, std::unique_ptr<HandoverPool> handover)
    : cfg_(cfg),
      source_(std::move(source)),
      handover_(std::move(handover)),
      dest_(std::move(dest)),
      chain_(std::move(chain)),
      on_first_event_(std::move(on_first_event)),
      to_process_(cfg.ring_slots),
      to_send_(cfg.ring_slots) {}

Instance::~Instance() { join(); }

void Instance::start() {
  // The process stage's state, set up before any thread may run it.
  work_pool_ = handover_ ? &handover_->pool : &source_->pool();
  for (size_t i = 0; i < chain_.size(); ++i) emitters_.push_back(std::make_unique<ChainEmitter>(this, i));
  watermark_.assign(chain_.size(), 0);
  nested_s_.assign(chain_.size(), 0);
  if (handover_) cfg_.threads = Threads::kDedicated;
  // Checkpoints are taken by the process thread, also while no input comes
  // (its wait is timed): no other thread may run the operators meanwhile.
  checkpointing_ = !cfg_.checkpoint_path.empty() && (!chain_.empty() || dest_->saves_state());
  if (checkpointing_) {
    cfg_.threads = Threads::kDedicated;
    // Claimed frames are bounded by the links' acknowledgement windows
    // (Receiver::window), held slots by the pool.
    held_.reserve(work_pool_->slots() * (cfg_.input_ledger ? kAckWindowPerSlot : 1));
    ck_.watermarks.assign(chain_.size(), 0);
    ck_async_ = chain_.empty();  // a sink: its state is its destination's alone
    ck_node_async_ = !ck_async_ && !dest_->saves_state();
    if (ck_async_) cuts_ = std::make_unique<Cut[]>(kCuts);
  }
  if (cfg_.threads == Threads::kShared) {
    threads_[0] = std::thread([this] { run_stage(0, &Instance::shared_loop); });
    return;
  }
  threads_[0] = std::thread([this] { run_stage(0, &Instance::receive_loop); });
  threads_[1] = std::thread([this] { run_stage(1, &Instance::process_loop); });
  threads_[2] = std::thread([this] { run_stage(2, &Instance::send_loop); });
}

// Stage i's thread: pinned first when the config says so (a pin that fails
// fails the instance before the stage does anything), then its loop, then
// where it ran, for the summary.
void Instance::run_stage(int i, void (Instance::*loop)()) {
  const pid_t tid = gettid();
  tid_[i].store(tid, std::memory_order_release);
  if (cfg_.stage_cpu[i] >= 0) {
    if (Status st = pin_thread({static_cast<unsigned>(cfg_.stage_cpu[i])}); !st)
      fail(Status::Error(fmt::format("{}/{}: {}", stage_name(i), cfg_.index, st.message())));
  }
  (this->*loop)();
  stage_cpus_[i] = thread_cpus();
  last_cpu_[i] = last_cpu(tid);
}

// A stage's thread is through: the last one rings done_fd_ (once).
void Instance::stage_done(int stages) {
  if (done_.fetch_add(stages, std::memory_order_acq_rel) + stages == kStages && done_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(done_fd_, &one, sizeof one);
  }
}

const char* Instance::stage_name(int i) {
  static const char* names[kStages] = {"receive", "process", "send"};
  return i >= 0 && i < kStages ? names[i] : "?";
}

void Instance::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

Status Instance::status() const {
  std::lock_guard lk(mu_);
  return error_;
}

// The first failure wins; everything else in the instance is told to stop so
// no stage stays blocked on a ring or a socket.
void Instance::fail(const Status& st) {
  {
    std::lock_guard lk(mu_);
    if (!error_.ok()) return;
    error_ = st;
  }
  to_process_.close();
  to_send_.close();
  source_->shutdown();
  if (handover_) handover_->pool.close();
}

bool Instance::push_all(int stage, SpscRing<Descriptor>& ring, const Descriptor* d, size_t n) {
  while (n) {
    size_t k = ring.try_push_n(d, n);
    d += k;
    n -= k;
    if (n) {
      const uint64_t t = mono_ns();
      const bool pushed = ring.push(*d, cfg_.wait);  // waits; false when closed
      add_blocked(stage, kRingFull, t);
      if (!pushed) return false;
      ++d;
      --n;
    }
  }
  return true;
}

// The receive stage's step: the source's next batch, counted. *n = 0: the
// stream ended (or the status says why not).
Status Instance::receive_batch(std::span<Descriptor> batch, size_t* n, uint64_t* bytes) {
  Status st = source_->next(batch, n);
  if (!st.ok() || *n == 0) return st;
  const auto [ev, tu, by] = count(batch.data(), *n);
  if (bytes) *bytes = by;
  if (!first_event_seen_ && ev) {
    first_event_seen_ = true;
    on_first_event_();
  }
  in_.add(ev, tu, by);
  count_stage(0, ev);
  return st;
}

void Instance::receive_loop() {
  const CpuTimes c0 = CpuTimes::thread();
  // Downstream first: what the source makes or accepts before the send
  // stage's links are up waits in the pool for their connect (a refused
  // one is retried every 20 ms): a 20-34 ms stall in every run's maximum
  // latency, found by experiments/latency.py. shared_loop does the same.
  bool dest_ok;
  {
    std::unique_lock lk(start_mu_);
    start_cv_.wait(lk, [&] { return dest_start_done_; });
    dest_ok = dest_ok_;
  }
  Status st = dest_ok ? source_->start()
                      : Status::Error("the send stage did not start");  // it said why first
  Descriptor batch[kReceiveBatch];
  while (st.ok()) {
    size_t n = 0;
    uint64_t bytes = 0;
    st = receive_batch(batch, &n, &bytes);
    if (!st.ok() || n == 0) break;
    // Run to completion: the stream is not backed up (the source waited for
    // this batch) and the process stage holds nothing (it finished all it
    // was handed): this thread runs the operators itself, and sends too if
    // the batch is small and the send stage idle. A large batch goes to the
    // send stage, whose send overlaps the next receive, but not through the
    // process thread: that hand-off (a ring, and a futex wake of a thread
    // that sleeps between batches) cost more than the operators' pass over
    // tuples this thread has just read into its cache. END always goes
    // through the stages. One batch that came at once is no backlog (the
    // next event was there as this thread finished the last one); a run of
    // them is.
    unwaited_ = source_->waited() ? 0 : unwaited_ + 1;
    if (cfg_.threads == Threads::kAdaptive && unwaited_ <= kBacklogBatches &&
        processed_.load(std::memory_order_acquire) == handed_ && !(batch[n - 1].flags & kDescEnd)) {
      inline_ = true;
      send_inline_ = bytes <= kInlineBytes;
      const uint64_t ev = count(batch, n).events;
      const bool ok = process_batch(batch, n);
      inline_ = false;
      if (!ok) break;
      inline_events_.fetch_add(ev, std::memory_order_relaxed);
      continue;
    }
    handed_ += n;
    if (!push_all(0, to_process_, batch, n)) break;
  }
  // A sink restored after its END shut its source down while it waited
  // for an upstream: no failure.
  if (!st.ok() && !restored_end_.load(std::memory_order_acquire)) fail(st);
  to_process_.close();
  cpu_[0] = CpuTimes::thread() - c0;
  stage_done(1);
}

// Copies the event run into a fresh handover slot and frees the received
// slot (its credit goes upstream now). False once the pool was closed.
bool Instance::hand_over(Descriptor& d) {
  uint32_t slot = handover_->pool.acquire(cfg_.wait);
  if (slot == kNoSlot) return false;
  std::memcpy(handover_->pool.slot(slot), source_->pool().slot(d.slot) + d.offset, d.bytes);
  Status st = source_->pool().release(d.slot);
  if (!st) {
    fail(st);
    return false;
  }
  d.slot = slot;
  d.offset = 0;
  return true;
}

// The process stage's Emitter for operator i: slots from the reserve (or,
// with a handover copy, the handover pool, which this stage owns); what is
// committed runs through operators i+1.. and goes to the send stage.
class Instance::ChainEmitter final : public Emitter {
 public:
  ChainEmitter(Instance* in, size_t op) : in_(in), op_(op) {}
  std::byte* acquire(uint32_t* capacity) override {
    SlotPool& pool = *in_->work_pool_;
    // The last operator, with one thread: straight into the downstream
    // receiver's slot where the link offers it (Destination::room), its
    // descriptor sent on this thread in the order committed.
    in_place_ = false;
    if (in_->cfg_.threads == Threads::kShared && op_ + 1 == in_->chain_.size()) {
      uint32_t cap = 0;
      if (std::byte* r = in_->dest_->room(&cap)) {
        in_place_ = true;
        slot_ = kNoSlot;
        *capacity = in_->cfg_.emit_capacity ? std::min(in_->cfg_.emit_capacity, cap) : cap;
        return r;
      }
    }
    slot_ = in_->emit_slot();
    if (slot_ == kNoSlot) return nullptr;
    *capacity = in_->cfg_.emit_capacity ? std::min<uint32_t>(in_->cfg_.emit_capacity, pool.slot_bytes())
                                        : static_cast<uint32_t>(pool.slot_bytes());
    return pool.slot(slot_);
  }
  void commit(uint32_t bytes, uint32_t events, uint32_t tuples) override {
    commit_with(bytes, events, tuples, 0);
  }
  void commit_to(uint32_t link, uint32_t bytes, uint32_t events, uint32_t tuples) override {
    commit_with(bytes, events, tuples, kDescRouted | (link << kDescLinkShift));
  }

 private:
  void commit_with(uint32_t bytes, uint32_t events, uint32_t tuples, uint32_t flags) {
    Descriptor d{slot_, 0, bytes, events, tuples, flags | (in_place_ ? kDescInPlace : 0u)};
    slot_ = kNoSlot;
    if (in_place_) {
      in_place_ = false;
      if (events == 0) return;  // the room stays set aside for the next
    } else if (events == 0) {
      (void)in_->work_pool_->release(d.slot);
      return;
    }
    auto& c = in_->chain_.cost(op_);
    c.events_out += events;
    c.tuples_out += tuples;
    const bool timed = in_->timing_ != 0;
    const double t0 = timed ? thread_cpu_s() : 0;
    if (in_->run_chain(d, op_ + 1)) in_->forward(&d, 1);
    if (timed) in_->nested_s_[op_] += thread_cpu_s() - t0;
  }

  Instance* in_;
  size_t op_;
  uint32_t slot_ = kNoSlot;
  bool in_place_ = false;  // the slot acquired last is the downstream room
};

// A slot for an emitting operator. shared: while none is free and the send
// stage's carrier has sends to complete (they free slots), this thread reaps
// them, there being no other.
uint32_t Instance::emit_slot() {
  SlotPool& pool = *work_pool_;
  if (handover_) return pool.acquire(cfg_.wait);
  for (;;) {
    const uint32_t slot = pool.try_acquire_reserved();
    if (slot != kNoSlot || pool.closed()) return slot;
    Status st;  // the idle work is set in shared mode only
    if (!source_->idle_wait({}, 10, &st)) return pool.acquire_reserved(cfg_.wait);
    if (!st) {
      fail(st);
      return kNoSlot;
    }
  }
}

double Instance::time_pass() {
  if (passes_++ < kTimedAlways) return 1;
  sample_rng_ ^= sample_rng_ << 13;  // xorshift32: no period to alias with a window's
  sample_rng_ ^= sample_rng_ >> 17;
  sample_rng_ ^= sample_rng_ << 5;
  return sample_rng_ % kTimeOneIn == 0 ? kTimeOneIn : 0;
}

bool Instance::run_chain(Descriptor& d, size_t from) {
  for (size_t i = from; i < chain_.size(); ++i) {
    auto& c = chain_.cost(i);
    c.events_in += d.events;
    c.tuples_in += d.tuples;
    Operator& op = chain_.op(i);
    // The thread's CPU time (not wall time: a wait for a reserve slot or a
    // preemption is no cost of the operator), read per operator per
    // descriptor (a batch of events) of a timed pass, not per tuple; what it
    // emits is timed again by the operators after it, and taken out of its
    // own time.
    const bool timed = timing_ != 0;
    const double nested0 = nested_s_[i];
    const double t0 = timed ? thread_cpu_s() : 0;
    const Operator::Result r = op.process(work_pool_->slot(d.slot) + d.offset, d, *emitters_[i]);
    if (timed) c.cpu_s += timing_ * (thread_cpu_s() - t0 - (nested_s_[i] - nested0));
    if (Status st = op.status(); !st) {
      fail(Status::Error(fmt::format("operator {} ({}): {}", i, op.name(), st.message())));
      return false;
    }
    if (r == Operator::kConsumed) {
      if (Status st = work_pool_->release(d.slot); !st) fail(st);
      return false;
    }
    c.events_out += d.events;
    c.tuples_out += d.tuples;
  }
  return true;
}

// END: every operator, in order, sees time run out and flushes (what it
// emits still passes the operators after it), then adds its accounts and
// derived streams to END's payload, rewritten in its slot.
bool Instance::end_chain(Descriptor& d) {
  timing_ = 1;  // once: always timed
  for (size_t i = 0; i < chain_.size(); ++i) {
    const double nested0 = nested_s_[i];
    const double t0 = thread_cpu_s();
    chain_.op(i).on_time(UINT64_MAX, *emitters_[i]);
    chain_.op(i).flush(*emitters_[i]);
    chain_.cost(i).cpu_s += thread_cpu_s() - t0 - (nested_s_[i] - nested0);
  }
  auto eos = std::make_unique<EndOfStream>();  // once, at the end
  std::byte* p = work_pool_->slot(d.slot) + d.offset;
  read_end(p, d.bytes, eos.get());
  for (size_t i = 0; i < chain_.size(); ++i) chain_.op(i).end(eos.get());
  if (d.offset + eos->wire_bytes() > work_pool_->slot_bytes()) {
    fail(Status::Error(fmt::format("the end of the stream with the operators' accounts is {} "
                                   "bytes, more than a slot ({}); raise slot_bytes",
                                   eos->wire_bytes(), work_pool_->slot_bytes())));
    return false;
  }
  write_end(*eos, p);
  d.bytes = static_cast<uint32_t>(eos->wire_bytes());
  return true;
}

// The process stage's work on one batch from the receive stage, on the
// process thread or (run to completion) the receiving thread.
bool Instance::process_batch(Descriptor* batch, size_t n) {
  SlotPool& pool = *work_pool_;
  bool ok = true;
  // With a handover copy, one event at a time: a copy waits for a free
  // handover slot only after every earlier copy is on its way to the send
  // stage, which frees them. Waiting with copies held back would deadlock.
  const size_t step = handover_ ? 1 : n;
  for (size_t i = 0; ok && i < n; i += step) {
    size_t kept = i, from = i;  // batch[from, kept): kept, not yet forwarded
    for (size_t j = i; j < i + step; ++j) {
      Descriptor d = batch[j];
      if (handover_ && !(ok = hand_over(d))) break;
      if (chain_.empty() && !checkpointing_) {
        batch[kept++] = d;
        continue;
      }
      if (d.flags & kDescEnd) {
        if (checkpointing_) {
          // Held until the final checkpoint: a crash before then has END replayed.
          if (!hold(d)) return false;
          saw_end_ = true;
        }
        ok = end_chain(d);
        batch[kept++] = d;
        continue;
      }
      if (checkpointing_) {
        if (!trim_replayed(d)) continue;
        // Held (one holder more, or claimed) until a snapshot holds its
        // effect: only then may its upstream hear that it is acknowledged.
        if (!hold(d)) return false;
        ck_in_tuples_ += d.tuples;
        if (chain_.empty()) {  // a sink: its verifier is what keeps state
          batch[kept++] = d;
          // A cut every checkpoint_hold descriptors, not only after the
          // batch: a held slot waits for the first cut after it.
          if (ck_async_ && ck_uncut() >= cfg_.checkpoint_hold && ck_on_way() < kCuts) {
            ok = forward(batch + from, kept - from) && ck_complete() && ck_post();
            from = kept;
            if (!ok) break;
          }
          continue;
        }
      }
      count_stage(1, d.events);
      timing_ = time_pass();
      // The watermark: the newest event time seen (one header read per
      // descriptor), less each operator's lateness.
      uint64_t ts;
      std::memcpy(&ts, pool.slot(d.slot) + d.offset + offsetof(EventHeader, send_ts_ns), 8);
      if (ts > max_ts_) max_ts_ = ts;
      const bool keep = run_chain(d, 0);
      if (keep) batch[kept++] = d;
      for (size_t o = 0; o < chain_.size(); ++o) {
        const uint64_t late = chain_.spec(o).lateness_ns;
        const uint64_t wm = max_ts_ > late ? max_ts_ - late : 0;
        if (wm > watermark_[o]) {
          watermark_[o] = wm;
          chain_.op(o).on_time(wm, *emitters_[o]);
        }
      }
    }
    ok = ok && forward(batch + from, kept - from);
  }
  return ok;
}

void Instance::process_loop() {
  const CpuTimes c0 = CpuTimes::thread();
  Descriptor batch[kProcessBatch];
  bool ok = true;
  if (checkpointing_) {
    if (Status st = restore(); !st) {
      fail(st);
      ok = false;
    }
    last_ck_ns_ = mono_ns();
    if (ok && dest_->stream_ended()) {
      // A sink restarted after its END (killed before its summary): its
      // upstreams had that END acknowledged and have gone. It takes nothing
      // in; the send stage finishes it from the restored state.
      spdlog::info("instance {}: its stream had ended before the restart; reporting from snapshot {}",
                   cfg_.index, ck_restored_);
      restored_end_.store(true, std::memory_order_release);
      source_->shutdown();
      ok = false;
    }
  }
  while (ok) {
    size_t n = to_process_.try_pop_n(batch, kProcessBatch);
    if (n == 0 && ck_async_ && !held_.empty() && !saw_end_) {
      // Idle with input held: as below, but the snapshot's state comes from
      // the send stage, which may be busy with what came before. A cut at
      // everything held (at most one each checkpoint_idle_gap_ns), then a
      // wait for the send stage's capture until it is written.
      const uint64_t first = cuts_first_;
      ok = ck_complete();
      if (!ok || held_.empty()) continue;
      const uint64_t gap = std::min<uint64_t>(cfg_.checkpoint_idle_gap_ns, uint64_t{cfg_.checkpoint_ms} * 1000000);
      const uint64_t t = mono_ns();
      if (ck_uncut() > 0 && t >= last_ck_ns_ + gap) {
        // Again at once only if a cut went out or one was written: with
        // kCuts on their way (a send stage busy for milliseconds, a Kafka
        // sink committing its transaction) ck_post posts nothing, and
        // looping back would spin this core against the send stage's.
        const uint64_t posted = cuts_posted_.load(std::memory_order_relaxed);
        ok = ck_post() && ck_complete();
        if (!ok || cuts_posted_.load(std::memory_order_relaxed) != posted || cuts_first_ != first) {
          ck_idle_wait_ns_ = kCkIdleWaitMinNs;
          continue;
        }
      }
      if (cuts_first_ != first) ck_idle_wait_ns_ = kCkIdleWaitMinNs;
      if (ck_on_way() > 0) {
        if (!status().ok()) break;  // the send stage may never get there
        // The send stage's capture wakes this wait (ck_capture notifies;
        // one made before the wait began keeps it from sleeping); the
        // timeout only covers the send stage stopping idle exactly at a
        // cut while this thread's try of its lock failed, so it grows
        // while nothing is written: 50 us, doubling up to 1 ms.
        const uint64_t wait = ck_idle_wait_ns_;
        ck_idle_wait_ns_ = std::min(ck_idle_wait_ns_ * 2, kCkIdleWaitMaxNs);
        if (to_process_.closed()) std::this_thread::sleep_for(std::chrono::microseconds(50));
        else wait_input_until(t + wait, &ck_captured_);
      } else {
        wait_input_until(last_ck_ns_ + gap);
      }
      add_blocked(1, kRingEmpty, t);
      continue;
    }
    if (n == 0 && checkpointing_ && !held_.empty() && !saw_end_) {
      // Idle with input held: a snapshot now (at most one each checkpoint_idle_gap_ns),
      // not when the interval is up: the upstream waits for its
      // acknowledgements, and a node upstream of it may wait for those in
      // turn before its own snapshot.
      const uint64_t gap = std::min<uint64_t>(cfg_.checkpoint_idle_gap_ns, uint64_t{cfg_.checkpoint_ms} * 1000000);
      if (ck_node_pending_) {
        // One taken, its outputs not all acknowledged yet: a look every
        // 50 us, or at once when input comes.
        if (!(ok = ck_node_commit())) continue;
        if (ck_node_pending_) {
          const uint64_t t = mono_ns();
          wait_input_until(t + 50000);
          add_blocked(1, kRingEmpty, t);
          continue;
        }
        if (held_.empty()) continue;
      }
      if (mono_ns() >= last_ck_ns_ + gap) {
        ok = checkpoint(false);
        continue;
      }
      const uint64_t t = mono_ns();
      wait_input_until(last_ck_ns_ + gap);
      add_blocked(1, kRingEmpty, t);
      continue;
    }
    if (n == 0) {
      const uint64_t t = mono_ns();
      n = to_process_.pop_n(batch, kProcessBatch, cfg_.wait);
      add_blocked(1, kRingEmpty, t);
    }
    if (n == 0) break;
    ok = process_batch(batch, n);
    if (ok && checkpointing_) {
      if (saw_end_) {
        ok = checkpoint(true);
      } else if (ck_async_) {
        ok = ck_complete();
        if (ok && (ck_uncut() >= cfg_.checkpoint_hold || (ck_uncut() > 0 && checkpoint_due())))
          ok = ck_post() && ck_complete();
      } else if (ck_node_pending_ || held_.size() >= cfg_.checkpoint_hold || checkpoint_due()) {
        ok = checkpoint(false);
      }
    }
    // Done with them (all forwarded): the receiving thread may run the next
    // batch itself.
    if (cfg_.threads == Threads::kAdaptive) processed_.fetch_add(n, std::memory_order_release);
  }
  to_send_.close();
  cpu_[1] = CpuTimes::thread() - c0;
  stage_done(1);
}

// Sleeps until input arrives, the ring closes, or the deadline.
namespace {
// Sleeps on a ring's eventfd (enabled) until it has something, closes, or
// left_ns pass. True: it rang.
template <class R>
bool sleep_on_ring(R& ring, uint64_t left_ns, const std::atomic<uint64_t>* unless = nullptr) {
  EventCount& ready = ring.not_empty();
  ready.prepare_fd_wait();
  bool rang = false;
  if (ring.size() == 0 && !ring.closed() && !(unless && unless->load(std::memory_order_acquire))) {
    pollfd p{ready.fd(), POLLIN, 0};
    const timespec ts{static_cast<time_t>(left_ns / 1000000000), static_cast<long>(left_ns % 1000000000)};
    rang = ::ppoll(&p, 1, &ts, nullptr) > 0;
  }
  ready.finish_fd_wait(rang);
  return rang;
}
}  // namespace

bool Instance::wait_input_until(uint64_t deadline_ns, const std::atomic<uint64_t>* unless) {
  EventCount& ready = to_process_.not_empty();
  if (!ready.enable_fd()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return false;
  }
  const uint64_t now = mono_ns();
  if (now >= deadline_ns) return false;
  return sleep_on_ring(to_process_, deadline_ns - now, unless);
}

// Run to completion's send half: the calling thread consumes d itself when
// it may (shared: always; adaptive: the send thread has consumed all it was
// given and is not using dest_); else the send stage's ring takes them.
bool Instance::forward(Descriptor* d, size_t n) {
  if (n == 0) return true;
  if (inline_ && send_inline_) {
    bool ok = true;
    if (send_here(d, n, &ok)) return ok;
  }
  // adaptive: counted before the push: the count may run ahead of the ring,
  // never behind it, so an inline send never overtakes a queued descriptor.
  if (cfg_.threads == Threads::kAdaptive) queued_.fetch_add(n, std::memory_order_release);
  if (checkpointing_) ck_queued_.fetch_add(n, std::memory_order_release);
  // A full ring is the blocked time of the stage doing the process work.
  return push_all(inline_ ? 0 : 1, to_send_, d, n);
}

bool Instance::send_here(const Descriptor* d, size_t n, bool* ok) {
  std::unique_lock lk(send_mu_, std::defer_lock);
  if (cfg_.threads == Threads::kAdaptive) {
    // (dest_ started: the receiving thread waited for that before its source.)
    if (!lk.try_lock() ||
        queued_.load(std::memory_order_acquire) != sent_.load(std::memory_order_acquire))
      return false;
  }
  const auto [ev, tu, by] = count(d, n);
  Status st = dest_->consume(std::span<const Descriptor>(d, n));
  if (!st.ok()) {
    if (lk.owns_lock()) lk.unlock();
    fail(st);
    *ok = false;
    return true;
  }
  if ((d[n - 1].flags & kDescEnd) && !dest_->took_back_end()) ended_ = true;
  out_.add(ev, tu, by);
  count_stage(2, ev);
  if (cfg_.threads == Threads::kShared) inline_events_.fetch_add(ev, std::memory_order_relaxed);
  // Sends left to complete (fabric, ucx): the send thread reaps them.
  // Frames left to acknowledge need it only if it sleeps on its ring alone:
  // asleep on dest_'s fds, their acknowledgements wake it (a kick there
  // would wake it for nothing, once per event at a moderate rate).
  if (cfg_.threads == Threads::kAdaptive && dest_->busy() &&
      (!send_on_dest_fds_ || dest_->carrier_busy())) {
    kick_.store(true, std::memory_order_release);
    to_send_.not_empty().notify();
  }
  return true;
}

// threads: shared: one thread; the send stage's carrier work is done while
// the source waits (Source::idle_wait).
void Instance::shared_loop() {
  const CpuTimes c0 = CpuTimes::thread();
  // Downstream first: a process upstream connects to this one's listener,
  // which takes the connection whenever the source starts.
  Status st = dest_->start();
  if (st.ok()) st = source_->start();
  source_->set_idle_work(dest_.get());
  Descriptor batch[kReceiveBatch];
  bool ok = true, finished = false;
  inline_ = send_inline_ = true;
  // After END went out the source is still asked for more: it returns 0
  // once every upstream link finished (its last credits went back).
  while (st.ok() && ok) {
    size_t n = 0;
    st = receive_batch(batch, &n);
    if (!st.ok() || n == 0) break;
    ok = process_batch(batch, n);
    if (ok && ended_ && !finished) {
      finished = true;
      st = dest_->finish();
    }
  }
  if (!st.ok()) fail(st);
  if (!finished) dest_->abort();
  to_process_.close();
  to_send_.close();
  cpu_[0] = CpuTimes::thread() - c0;
  stage_done(3);
}

// What the send stage does next: descriptors from its ring, waiting on the
// ring alone while its destination is idle (tcp: always), or on the ring's
// eventfd and the destination's fds together while a carrier has
// completions to reap. 0: the ring was closed (or progress failed: *st).
size_t Instance::next_to_send(Descriptor* batch, size_t max, Status* st) {
  std::vector<int>& fds = send_fds_;
  const bool adaptive = cfg_.threads == Threads::kAdaptive;
  const bool acked = adaptive && dest_->acknowledged();
  // adaptive: dest_ is shared with the receiving thread's inline sends.
  std::unique_lock lk(send_mu_, std::defer_lock);
  for (;;) {
    size_t n = to_send_.try_pop_n(batch, max);
    if (n) return n;
    const uint64_t t = mono_ns();
    if (adaptive) lk.lock();
    const bool busy = dest_->busy();
    // adaptive with acks: asleep on dest_'s fds while idle too. An inline
    // send leaves frames to acknowledge; on the ring alone this thread would
    // need waking (a kick) to watch for them, once per event at a moderate
    // rate. On dest_'s fds only their acknowledgements wake it.
    const bool watch = busy || acked;
    if (adaptive && !watch) {
      send_on_dest_fds_ = false;
      lk.unlock();
    }
    if (!watch || cfg_.wait == Wait::kSpin) {
      if (!adaptive) {
        n = to_send_.pop_n(batch, max, cfg_.wait);
        add_blocked(2, kRingEmpty, t);
        return n;
      }
      if (lk.owns_lock()) {
        send_on_dest_fds_ = false;  // kSpin: on the ring alone
        lk.unlock();
      }
      // Woken by a push, or by an inline send that left work to reap.
      wait_until(cfg_.wait, to_send_.not_empty(),
                 [&] { return to_send_.size() > 0 || kick_.load(std::memory_order_acquire); },
                 [&] { return to_send_.closed(); });
      add_blocked(2, kRingEmpty, t);
      kick_.store(false, std::memory_order_relaxed);
      if (to_send_.closed() && to_send_.size() == 0) return 0;
      continue;
    }
    // Reads what came in on dest_'s fds (acknowledgements, credits, a
    // broken link), busy or not: left unread, they would end every sleep.
    *st = dest_->progress();
    const bool still = st->ok() && (acked || dest_->busy());
    if (still) {
      fds.clear();
      dest_->wait_fds(&fds);
    }
    EventCount& ready = to_send_.not_empty();
    const bool fd_ok = ready.enable_fd();
    if (lk.owns_lock()) {
      send_on_dest_fds_ = still && fd_ok;
      lk.unlock();
    }
    if (!st->ok()) return 0;
    if (!still) continue;
    if (!fd_ok) {
      n = to_send_.pop_n(batch, max, cfg_.wait);
      add_blocked(2, kRingEmpty, t);
      return n;
    }
    std::vector<pollfd>& p = send_poll_;
    p.clear();
    for (int fd : fds) p.push_back({fd, POLLIN, 0});
    p.push_back({ready.fd(), POLLIN, 0});
    ready.prepare_fd_wait();
    // A bounded sleep: a carrier whose peer died may say so only when asked
    // (progress), and unacknowledged frames must not wait on it forever.
    if (to_send_.size() == 0 && !to_send_.closed()) ::poll(p.data(), p.size(), 200);
    ready.finish_fd_wait(p.back().revents & POLLIN);
    add_blocked(2, kRingEmpty, t);
    if (to_send_.closed() && to_send_.size() == 0) return 0;
  }
}

// max_delay_us: waits, at most the bound from the first descriptor's taking,
// for more to fill a frame (emit_capacity bytes: the smallest receiver's
// slot), then sends what it has. END ends the wait.
size_t Instance::gather(Descriptor* batch, size_t n) {
  if (!cfg_.emit_capacity) return n;
  EventCount& ready = to_send_.not_empty();
  if (!ready.enable_fd()) return n;
  const uint64_t deadline = mono_ns() + uint64_t{cfg_.max_delay_us} * 1000;
  uint64_t bytes = count(batch, n).bytes;
  while (n < kSendBatch && bytes < cfg_.emit_capacity && !(batch[n - 1].flags & kDescEnd)) {
    if (const size_t k = to_send_.try_pop_n(batch + n, kSendBatch - n); k) {
      bytes += count(batch + n, k).bytes;
      n += k;
      continue;
    }
    const uint64_t now = mono_ns();
    if (now >= deadline || to_send_.closed()) break;
    sleep_on_ring(to_send_, deadline - now);
  }
  return n;
}

void Instance::send_loop() {
  const CpuTimes c0 = CpuTimes::thread();
  Status st = dest_->start();
  if (!st.ok()) fail(st);  // first: the receive stage, told next, then fails for this
  {
    std::lock_guard lk(start_mu_);
    dest_start_done_ = true;
    dest_ok_ = st.ok();
  }
  start_cv_.notify_all();
  Descriptor batch[kSendBatch];
  bool ended = false;
  while (st.ok() && !ended) {
    size_t n = next_to_send(batch, kSendBatch, &st);
    if (n == 0) break;  // closed without END: somebody failed, and said so
    if (cfg_.max_delay_us) n = gather(batch, n);
    if (batch[n - 1].flags & kDescEnd) ended = true;
    const auto [ev, tu, by] = count(batch, n);
    const bool adaptive = cfg_.threads == Threads::kAdaptive;
    std::unique_lock lk(send_mu_, std::defer_lock);
    if (adaptive || ck_async_) lk.lock();
    // A sink's cuts: its state is copied out between the descriptor a cut
    // covers last and the next (ck_post).
    for (size_t done = 0; st.ok() && done < n;) {
      size_t k = n - done;
      const uint64_t at = ck_sent_.load(std::memory_order_relaxed);
      uint64_t cut = kNoCut;
      if (ck_async_) {
        const uint64_t posted = cuts_posted_.load(std::memory_order_acquire);
        while (cut_next_ < posted && cuts_[cut_next_ % kCuts].target < at) ++cut_next_;  // passed, no copy
        if (cut_next_ < posted && ck_captured_.load(std::memory_order_acquire) == 0) {
          for (uint64_t j = cut_next_; j < posted && cuts_[j % kCuts].target <= at + k; ++j) cut = j;
          // At the cut already (the last batch ended there before it was
          // posted): the copy comes before anything after it is consumed.
          if (cut != kNoCut && cuts_[cut % kCuts].target == at) {
            ck_capture(cut);
            continue;
          }
          if (cut != kNoCut) k = static_cast<size_t>(cuts_[cut % kCuts].target - at);
        }
      }
      st = dest_->consume(std::span<const Descriptor>(batch + done, k));
      if (!st.ok()) break;
      done += k;
      if (checkpointing_) ck_sent_.fetch_add(k, std::memory_order_release);
      if (cut != kNoCut) ck_capture(cut);
    }
    if (!st.ok()) break;
    // Its upstreams were made to send everything again (node_backup:
    // upstream): END comes again after it.
    if (ended && dest_->took_back_end()) ended = false;
    out_.add(ev, tu, by);
    count_stage(2, ev);
    if (adaptive) sent_.fetch_add(n, std::memory_order_release);
  }
  if (restored_end_.load(std::memory_order_acquire)) ended = true;  // END was consumed before the restart
  {
    // A sink's final snapshot (checkpoint(true)) saves its state on the
    // process thread: not while finish() flushes its results.
    std::unique_lock lk(send_mu_, std::defer_lock);
    if (cfg_.threads == Threads::kAdaptive || ck_async_) lk.lock();
    if (st.ok() && ended) st = dest_->finish();
    if (!st.ok()) fail(st);
    if (!st.ok() || !ended) dest_->abort();
  }
  cpu_[2] = CpuTimes::thread() - c0;
  stage_done(1);
}

void Instance::live(LiveInstance* out) const {
  out->in = StageTotals::of(in_);
  out->out = StageTotals::of(out_);
  for (int i = 0; i < kStages; ++i) {
    out->stages[i].events = stage_events(i);
    out->stages[i].tid = stage_tid(i);
    for (int r = 0; r < kBlockReasons; ++r)
      out->stages[i].blocked_ns[r] = blocked_ns_[i].ns[r].load(std::memory_order_relaxed);
  }
  out->ring[0] = ring_size(0);
  out->ring[1] = ring_size(1);
  out->ring_capacity = ring_capacity();
  out->links.clear();
  source_->live_links(&out->links);
  dest_->live_links(&out->links);
  for (const auto& l : out->links)
    if (l.out) out->stages[2].blocked_ns[kNoCredit] += l.stats.credit_wait_ns;
}

// After join(): the stages' CPU times, and what live() reads.
void Instance::report(ProcessSummary& s) const {
  LiveInstance li;
  live(&li);
  for (int i = 0; i < kStages; ++i) {
    StageSummary st{fmt::format("{}/{}", stage_name(i), cfg_.index), cpu_[i].user_s, cpu_[i].sys_s,
                    li.stages[i].events, cpu_[i].voluntary, cpu_[i].involuntary, stage_cpus_[i],
                    last_cpu_[i]};
    for (int r = 0; r < kBlockReasons; ++r) st.blocked_s[r] = li.stages[i].blocked_ns[r] / 1e9;
    s.stages.push_back(std::move(st));
  }
  for (const auto& l : li.links)
    s.links.push_back({l.name, l.out, l.stats.frames, l.stats.bytes, l.stats.syscalls,
                       l.stats.credit_waits, l.stats.credit_wait_ns / 1e9, l.stats.window_mean,
                       l.stats.rtt_us, l.stats.in_place, l.stats.credit_msgs});
  source_->report(s);
  dest_->report(s);
  s.threads = threads_name(cfg_.threads);
  s.inline_events += inline_events();
  if (checkpointing_) {
    s.checkpoints += ck_.number;
    s.snapshot_bytes = std::max<uint64_t>(s.snapshot_bytes, ck_bytes_last_);
    s.restored_checkpoint = std::max(s.restored_checkpoint, ck_restored_);
    s.deduplicated += ck_dropped_;
    s.restored_tuples += restored_tuples_;
    s.checkpoint_wait_s += ck_wait_s_;
    s.checkpoint_write_s += ck_write_s_;
  }
  // Operators: one entry per place in the chain, instances added up.
  for (size_t i = 0; i < chain_.size(); ++i) {
    const std::string name = fmt::format("{}:{}", i, chain_.op(i).name());
    OperatorSummary* o = nullptr;
    for (auto& e : s.operators)
      if (e.name == name) o = &e;
    if (!o) {
      s.operators.push_back({});
      o = &s.operators.back();
      o->name = name;
    }
    const auto& c = chain_.cost(i);
    o->events_in += c.events_in;
    o->events_out += c.events_out;
    o->tuples_in += c.tuples_in;
    o->tuples_out += c.tuples_out;
    o->cpu_s += c.cpu_s;
    o->state_bytes += chain_.op(i).state_bytes();
  }
}

}  // namespace sluice

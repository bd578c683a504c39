// The node: receive, process and send stages, one thread each, joined by two
// descriptor rings.
//
//  upstream ─► [receive] ─ring─► [process: operators] ─ring─► [send] ─► downstream
//                 ▲                                               │
//                 └──────── slot released, credit upstream ◄──────┘
//
// The receive stage's work is a Source (a network link, or the load
// generator); the send stage's work is a Destination (a network link, or the
// sink's verifier). The load generator and the sink are nodes with one stage
// swapped, measured exactly like a node.
//
// An instance is one such chain of three threads with its own pool and its own
// links; a process hosts `instances` independent instances. When one stage of
// an instance fails, the instance stops (its rings close, its links shut), and
// the other instances keep serving.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "graph/operator.h"
#include "node/metrics.h"
#include "base/ring.h"
#include "transport/pool.h"
#include "transport/transport.h"

namespace sluice {

// What the receive stage does: hand out descriptors of events that arrived.
class Source {
 public:
  virtual ~Source() = default;
  // Runs first on the receive thread (accepting the upstream link, say).
  virtual Status start() { return {}; }
  // Waits for descriptors; *n = 0 once the stream has ended (after END).
  virtual Status next(std::span<Descriptor> out, size_t* n) = 0;
  virtual SlotPool& pool() = 0;
  // Where the send stage gives slots back.
  virtual SlotReleaser& releaser() = 0;
  // From another thread: unblock next()/start().
  virtual void shutdown() = 0;
  virtual void report(ProcessSummary&) const {}
};

// What the send stage does with descriptors: send them on, or verify them.
class Destination {
 public:
  virtual ~Destination() = default;
  // Runs first on the send thread (connecting downstream, say).
  virtual Status start() { return {}; }
  // Consumes descriptors in order and releases each slot when done with it.
  virtual Status consume(std::span<const Descriptor> descs) = 0;
  // After END was consumed: flush and close.
  virtual Status finish() { return {}; }
  // After a failure: close at once, without END, so downstream learns of it.
  virtual void abort() {}
  virtual void report(ProcessSummary&) const {}
};

// A network link's receiving end: binds at construction, accepts in start().
class NetSource final : public Source, private SlotReleaser {
 public:
  static std::unique_ptr<NetSource> make(const LinkOptions& opts, Status* st);
  Status start() override;
  Status next(std::span<Descriptor> out, size_t* n) override;
  SlotPool& pool() override { return pool_; }
  SlotReleaser& releaser() override { return *this; }
  void shutdown() override;
  void report(ProcessSummary& s) const override;

 private:
  explicit NetSource(const LinkOptions& opts);
  void release(uint32_t slot) override { receiver_->release(slot); }
  LinkOptions opts_;
  SlotPool pool_;
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<Receiver> receiver_;
  std::mutex mu_;  // guards receiver_ against shutdown() from another thread
  bool shut_ = false;
};

// A network link's sending end: connects in start().
class NetDestination final : public Destination {
 public:
  NetDestination(const LinkOptions& opts, const SlotPool& pool, SlotReleaser& releaser)
      : opts_(opts), pool_(pool), releaser_(releaser) {}
  Status start() override;
  Status consume(std::span<const Descriptor> descs) override { return sender_->send(descs); }
  Status finish() override { return sender_->close(); }
  void abort() override;
  void report(ProcessSummary& s) const override;

 private:
  LinkOptions opts_;
  const SlotPool& pool_;
  SlotReleaser& releaser_;
  std::unique_ptr<Sender> sender_;
  LinkStats last_stats_;
};

// The `handover: copy` choice (original Borealis): the process stage copies
// each event into a fresh slot of this pool and frees the received one at
// once; the send stage then sends from, and releases into, this pool.
struct HandoverPool {
  HandoverPool(size_t slots, size_t slot_bytes) : pool(slots, slot_bytes), releaser(pool) {}
  SlotPool pool;
  PoolReleaser releaser;
};

struct InstanceConfig {
  uint32_t index = 0;
  Wait wait = Wait::kBlock;
  uint32_t ring_slots = 1024;
  std::vector<OperatorConfig> operators;
};

class Instance {
 public:
  // The source's pool must outlive nothing but the instance; dest may use it.
  // With a handover pool, `dest` must have been made over it.
  Instance(const InstanceConfig& cfg, std::unique_ptr<Source> source,
           std::unique_ptr<Destination> dest, OperatorChain chain,
           std::function<void()> on_first_event,
           std::unique_ptr<HandoverPool> handover = nullptr);
  ~Instance();
  void start();
  void join();
  bool done() const { return done_.load(std::memory_order_acquire) == 3; }
  Status status() const;
  void report(ProcessSummary& s) const;
  // Live counters for progress lines.
  const StageCounters& in() const { return in_; }
  const StageCounters& out() const { return out_; }

 private:
  void receive_loop();
  void process_loop();
  void send_loop();
  void fail(const Status& st);
  bool hand_over(Descriptor& d);
  bool push_all(SpscRing<Descriptor>& ring, const Descriptor* d, size_t n);

  InstanceConfig cfg_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<HandoverPool> handover_;  // outlives dest_, which uses it
  std::unique_ptr<Destination> dest_;
  OperatorChain chain_;
  std::function<void()> on_first_event_;
  SpscRing<Descriptor> to_process_;
  SpscRing<Descriptor> to_send_;
  StageCounters in_, out_;
  CpuTimes cpu_[3];
  uint64_t stage_events_[3] = {0, 0, 0};
  std::atomic<int> done_{0};
  mutable std::mutex mu_;
  Status error_;
  std::thread threads_[3];
};

}  // namespace sluice

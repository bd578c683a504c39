// node/: may include base/, transport/ and graph/.
//
// The node: receive, process and send stages, one thread each, joined by two
// descriptor rings.
//
//  upstream ─► [receive] ─ring─► [process: operators] ─ring─► [send] ─► downstream
//                 ▲                                               │
//                 └──────── slot released, credit upstream ◄──────┘
//
// The receive stage's work is a Source (the upstream links, or the load
// generator); the send stage's work is a Destination (the downstream links,
// or the sink's verifier). The load generator and the sink are nodes with one stage
// swapped, measured exactly like a node.
//
// `threads:` chooses how the stages share threads (Threads below): one thread
// each (dedicated), one thread for all three (shared), or dedicated threads
// whose receiving thread runs process and send itself while they are idle
// (adaptive: run to completion when idle, pipeline when busy).
//
// An instance is one such chain of three threads with its own pool and its own
// links; a process hosts `instances` independent instances. When one stage of
// an instance fails, the instance stops (its rings close, its links shut), and
// the other instances keep serving.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graph/checkpoint.h"
#include "graph/operator.h"
#include "graph/partition.h"
#include "node/metrics.h"
#include "base/ring.h"
#include "graph/config.h"
#include "transport/event.h"
#include "transport/link.h"
#include "transport/pool.h"
#include "transport/transport.h"

namespace sluice {

// One link as its stage sees it now, for the live counters.
struct LiveLink {
  std::string name;
  bool out = false;  // a downstream link (this side sends)
  LinkStats stats;
};

class Destination;

// What the receive stage does: hand out descriptors of events that arrived.
class Source {
 public:
  virtual ~Source() = default;
  // Runs first on the receive thread (accepting the upstream links, say).
  virtual Status start() { return {}; }
  // Waits for descriptors; *n = 0 once the stream has ended (after END).
  virtual Status next(std::span<Descriptor> out, size_t* n) = 0;
  // The pool the events live in; stages downstream release into it.
  virtual SlotPool& pool() = 0;
  // From another thread: unblock next()/start().
  virtual void shutdown() = 0;
  virtual void report(ProcessSummary&) const {}
  // From any thread, while it runs: its links and their counters.
  virtual void live_links(std::vector<LiveLink>*) const {}
  // Whether the last next() slept (or paced) before it had descriptors: the
  // stream is not backed up. threads: adaptive runs to completion only then;
  // a source that cannot tell is taken to be backed up.
  virtual bool waited() const { return false; }
  // threads: shared: the destination's work (a carrier reaping completions)
  // is done by this stage's thread while it waits, there being no other.
  void set_idle_work(Destination* d) { idle_ = d; }
  // Drives the idle work; while it stays busy, sleeps at most ms (and at
  // most 200) on fds and the work's wait fds together. False: it had no
  // work (none set, or not busy), and the caller sleeps its own way. The
  // source's own waits call it, and the instance's, on the same thread.
  bool idle_wait(std::span<const int> fds, int ms, Status* st);

 protected:
  Destination* idle_ = nullptr;

 private:
  std::vector<int> idle_fds_;
  std::vector<pollfd> idle_poll_;
};

// What the send stage does with descriptors: send them on, or verify them.
class Destination {
 public:
  virtual ~Destination() = default;
  // Runs first on the send thread (connecting downstream, say).
  virtual Status start() { return {}; }
  // Consumes descriptors in order (END last) and releases each slot when done.
  virtual Status consume(std::span<const Descriptor> descs) = 0;
  // After a consume() with END: true if END did not go, because the
  // upstreams were made to send everything again (AckLedger) and END comes
  // again after it. Asked once per END.
  virtual bool took_back_end() { return false; }
  // After END was consumed: flush and close.
  virtual Status finish() { return {}; }
  // After a failure: close at once, without END, so downstream learns of it.
  virtual void abort() {}
  // From another thread, the instance stopping at once (Instance::stop): a
  // consume() or finish() waiting on a receiver that grants nothing fails
  // now instead (Sender::interrupt).
  virtual void interrupt() {}
  // Work to do while nothing new arrives (a carrier reaping completions):
  // the send stage then calls progress() and sleeps on its ring and on
  // wait_fds() together instead of on its ring alone.
  virtual bool busy() const { return false; }
  // Of busy(): the carriers' own completions to reap, not only frames
  // waiting for their acknowledgements (which arrive on wait_fds(): a
  // thread already asleep on those needs no waking for them).
  virtual bool carrier_busy() const { return busy(); }
  // Frames it sends wait for acknowledgements (acks: on): threads: adaptive
  // then keeps the send thread asleep on wait_fds() even while not busy(),
  // so the receiving thread's inline sends need not wake it to watch them.
  virtual bool acknowledged() const { return false; }
  virtual Status progress() { return {}; }
  virtual void wait_fds(std::vector<int>* fds) const {}
  // From any thread: everything it consumed so far was acknowledged by its
  // receivers (acks: on), so no crash of this process can lose it. A
  // checkpoint waits for this before it writes a snapshot.
  virtual bool settled() const { return true; }
  // From any thread: where what it consumed so far ends in its links' logs
  // (one mark per link; none where nothing is kept), and whether everything
  // up to such marks was acknowledged since: settled() as of when the marks
  // were taken. A node's snapshot taken at the marks may be written then
  // (Instance::ck_node_begin), while what came after is still on its way.
  virtual void log_marks(std::vector<uint64_t>* marks) const { marks->clear(); }
  virtual bool settled_through(const std::vector<uint64_t>& marks) const { return settled(); }
  // In place: room for the next events of a node's last operator straight
  // in the downstream receiver's slot (Sender::room: one link whose carrier
  // maps the receiver's slots here), and its *capacity; the descriptor of
  // what was written there carries kDescInPlace. nullptr: write into a slot
  // of this process's pool. On the thread that consumes.
  virtual std::byte* room(uint32_t* capacity) { return nullptr; }
  // Checkpoints, as an operator's (graph/operator.h (f)): whether it keeps
  // state worth a snapshot (a sink's verifier). save() runs between two
  // consume() calls, on the send thread or, while the send stage is idle,
  // on the process thread; load() on the process thread before the first.
  virtual bool saves_state() const { return false; }
  virtual void save(SnapshotOut&) const {}
  virtual Status load(SnapshotIn&) { return {}; }
  // After load(): the state is of one that had seen its stream's END (a
  // sink's last snapshot): a restart has nothing left to take in.
  virtual bool stream_ended() const { return false; }
  virtual void report(ProcessSummary&) const {}
  // From any thread, while it runs: its links and their counters, and (a
  // sink) the latency histogram it fills.
  virtual void live_links(std::vector<LiveLink>*) const {}
  virtual const LiveHistogram* live_latency() const { return nullptr; }
};

// The upstream links of one instance: frames from all of them flow into the
// receive stage in arrival order (union); the stream ends after every link
// has ended, with one END whose per-stream totals merge theirs. The links
// share one pool, each owning a range of its slots (one per credit); this
// stage owns the pool and every link's receiving end: slots released by any
// stage come back here, and here they are posted again and credited. It
// sleeps on every link's wait handle and the pool's fd at once.
class NetSource final : public Source, public AckLedger, private SlotPool::FreedHook {
 public:
  // `reserve`: extra slots for the process stage's operators to emit into
  // (SlotPool's reserve), beside the links' slots.
  static std::unique_ptr<NetSource> make(const std::vector<LinkOptions>& links,
                                         TransportContext& ctx, Status* st, size_t reserve = 0);
  ~NetSource() override;
  Status start() override;
  Status next(std::span<Descriptor> out, size_t* n) override;
  SlotPool& pool() override { return *pool_; }
  void shutdown() override;
  void report(ProcessSummary& s) const override;
  void live_links(std::vector<LiveLink>* out) const override;
  bool waited() const override { return waited_; }
  // The frames of this source's links are claimed (AckLedger) and
  // acknowledged once ack() says so: by a node that keeps no copies
  // (node_backup: upstream), whose sender claims the frames it forwards, and
  // by a sink that snapshots, once a snapshot holds them. Before start().
  void claim_frames() { claims_ = true; }
  Take claim(uint32_t slot, Claim* c) override;
  void ack(const Claim& c) override;
  void acked() override;
  void replay_upstream() override;
  bool stale(uint32_t slot) const override;

 private:
  explicit NetSource(const std::vector<LinkOptions>& links);
  // The receive stage's side of the ledger: breaks the links that must send
  // again (replay_upstream), and acknowledges upstream what the sender said
  // was acknowledged downstream (acked).
  Status tend_claims();
  Status give_back_freed();
  Status sleep();
  // The releasing thread's turn (SlotPool::FreedHook): while this stage
  // sleeps in epoll on links that allow it, the thread whose release
  // completed a credit batch gives the freed slots back and sends the
  // credits itself, instead of waking this stage to do it. False: it did
  // not (this stage is awake, or a link failed): wake it.
  bool on_freed() override;
  bool merge_end(const Descriptor& d);
  // acks: a link that broke waits for its slots, then for its upstream to
  // connect again (the listener's next accept, on a thread of its own).
  Status link_broke(size_t i, const Status& why);
  Status tend_broken();

  std::vector<LinkOptions> opts_;
  std::unique_ptr<SlotPool> pool_;
  std::vector<uint32_t> first_;                   // each link's first slot
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<Receiver>> links_;
  std::vector<uint16_t> owner_;                   // slot -> link
  std::vector<uint8_t> watching_;                 // link's fd in the epoll set
  // epoll said the link's fd is readable since it was last polled; a link
  // whose carrier read it empty (Receiver::drained) is not polled without
  // this, which saves a read that would only say EAGAIN per wake-up.
  std::vector<uint8_t> ready_;
  int epfd_ = -1;
  size_t rr_ = 0, ended_ = 0, wake_threshold_ = 1;
  bool waited_ = true;
  bool read_next_ = false;  // sleep() chose the link's read as the wait: next() polls at once
  bool end_out_ = false;
  std::unique_ptr<EndOfStream> merged_;
  mutable std::mutex mu_;  // guards links_ against shutdown() and live_links() from other threads
  // on_freed(): every link allows it; asleep_ is set, under give_mu_, while
  // this stage sleeps in epoll, and give_mu_ serializes the give-backs.
  bool helped_ = false;
  std::mutex give_mu_;
  std::atomic<bool> asleep_{false};
  std::atomic<bool> shut_{false};
  // Broken links (acks): down, and the accept that will replace them.
  struct Rejoin {
    bool down = false;
    uint64_t down_ns = 0;       // when it went down
    uint64_t said_ns = 0;       // the last "waiting for slots" line
    std::thread accepting;
    std::atomic<bool> done{false};
    std::unique_ptr<Receiver> next;
    Status error;
  };
  std::vector<std::unique_ptr<Rejoin>> rejoin_;
  size_t down_ = 0;  // links down now: tend_broken has nothing to do without one
  uint64_t reconnects_ = 0;
  // The ledger (claim_frames). Each link slot's epoch when it was handed
  // out; the epoch asked for (replay_upstream, the sender's thread) and the
  // one the frames now handed out belong to (this stage's, once it broke
  // the links); each link's connection, counted.
  bool claims_ = false;
  std::unique_ptr<std::atomic<uint8_t>[]> slot_epoch_;
  std::atomic<uint32_t> replay_req_{0};
  uint32_t epoch_ = 0;
  std::unique_ptr<std::atomic<uint32_t>[]> gen_;
  std::atomic<bool> acks_due_{false};
};

// The downstream links of one instance. With one link, descriptors go
// straight to it. With several, `split` decides: by stream (stream s to link
// s % n; a descriptor's events are cut into runs, one per link, that share
// the slot, and the END each link gets names only its streams) or copy
// (every descriptor to every link). A slot sent to several links is retained
// once per extra link, so it frees after its last send. By key, the process
// stage's partition operator (graph/partition.h) already cut the events into
// one part per link and named the link in each descriptor; each link's END
// carries every stream, with `tally`'s partitioned account for that link.
class NetDestination final : public Destination {
 public:
  NetDestination(std::vector<LinkOptions> links, Split split, SlotPool& pool, TransportContext& ctx,
                 std::shared_ptr<const PartitionTally> tally = nullptr);
  // With acks, its links keep events by header, made again by `r` for a
  // replay (transport/link.h). Before start(); `r` outlives it.
  void set_remaker(Remaker* r) { remaker_ = r; }
  // A node that keeps no copies: its one link claims what it forwards from
  // `l` (the receive stage, AckLedger). Before start().
  void set_ledger(AckLedger* l) { ledger_ = l; }
  Status start() override;
  bool took_back_end() override { return std::exchange(end_taken_back_, false); }
  Status consume(std::span<const Descriptor> descs) override;
  Status finish() override;
  void abort() override;
  void interrupt() override;
  bool busy() const override;
  bool carrier_busy() const override;
  bool acknowledged() const override;
  Status progress() override;
  void wait_fds(std::vector<int>* fds) const override;
  bool settled() const override;
  void log_marks(std::vector<uint64_t>* marks) const override;
  bool settled_through(const std::vector<uint64_t>& marks) const override;
  std::byte* room(uint32_t* capacity) override;
  void report(ProcessSummary& s) const override;
  void live_links(std::vector<LiveLink>* out) const override;
  // With acks on every link: per link, the events it sent that its
  // receiver has acknowledged as safe downstream, in the order they were
  // given to consume() (any thread). false: a link without acks, or not
  // every link connected yet.
  bool acked_events(std::vector<uint64_t>* per_link) const;

 private:
  bool settled_locked() const;  // settled(), mu_ held
  Status split_by_stream(const Descriptor& d);
  Status route(const Descriptor& d);
  Status flush(size_t link);
  Status end(const Descriptor& d);

  std::vector<LinkOptions> opts_;
  Split split_;
  SlotPool& pool_;
  TransportContext& ctx_;
  std::shared_ptr<const PartitionTally> tally_;
  std::vector<std::unique_ptr<Sender>> links_;
  Remaker* remaker_ = nullptr;
  AckLedger* ledger_ = nullptr;
  bool end_taken_back_ = false;
  std::vector<std::vector<Descriptor>> batch_;   // per link, sized at start
  std::vector<size_t> nbatch_;
  std::vector<Descriptor> runs_;                 // one descriptor's runs, sized at start
  std::unique_ptr<EndOfStream> end_, end_all_;
  std::unique_ptr<std::byte[]> end_wire_;
  std::vector<LinkStats> last_stats_;
  mutable std::mutex mu_;  // links_ while start() fills it, against live_links()
};

// The `handover: copy` choice (original Borealis): the process stage copies
// each event into a fresh slot of this pool and frees the received one at
// once; the send stage then sends from, and releases into, this pool.
struct HandoverPool {
  HandoverPool(size_t slots, size_t slot_bytes) : pool(slots, slot_bytes) {}
  SlotPool pool;
};

// How an instance's stages share threads (`threads:`).
enum class Threads { kDedicated, kShared, kAdaptive };
const char* threads_name(Threads t);
bool parse_threads(const std::string& s, Threads* t);

struct InstanceConfig {
  uint32_t index = 0;
  // A handover copy (original) is always dedicated: the study's baseline.
  Threads threads = Threads::kDedicated;
  Wait wait = Wait::kBlock;
  uint32_t ring_slots = 1024;
  std::vector<OperatorConfig> operators;
  // The CPU each stage thread (receive, process, send) is pinned to; -1:
  // it runs where the process may.
  int stage_cpu[3] = {-1, -1, -1};
  uint32_t emit_capacity = 0;  // bytes an emitted slot may fill (the smallest downstream slot)
  // The send stage may wait this long for more to fill emit_capacity bytes
  // before it sends what it has (the links' max_delay_us); 0: at once.
  uint32_t max_delay_us = 0;
  // Operator snapshots ("Operator snapshots" in docs/DESIGN.md): the file
  // (empty: none), the run it belongs to, how often (ms), and how many input
  // slots may wait for a snapshot before one is taken at once (half the
  // smallest input link's slots, so an upstream never runs out of credit
  // waiting for it). Needs acks on every link; runs dedicated threads.
  std::string checkpoint_path;
  std::string checkpoint_token;
  uint32_t checkpoint_ms = 0;
  bool checkpoint_sync = false;  // snapshot_sync: fdatasync each snapshot
  uint32_t checkpoint_hold = 1;
  // The least time between two snapshots taken because the process stage
  // went idle with input held (at most checkpoint_ms). A process upstream
  // may be waiting for the acknowledgements they release (a node's own
  // snapshot); where none can be, a sink waits longer (runtime/process.cc).
  uint64_t checkpoint_idle_gap_ns = 1000000;
  // A sink that snapshots, whose input links all have acks: it *claims* each
  // input frame (AckLedger) instead of holding its slot, so the slot and its
  // credit come back once the verifier is done with it and only the
  // acknowledgement waits for the snapshot that holds its effect. null: it
  // holds the slots (a node's operators, or a handover copy).
  AckLedger* input_ledger = nullptr;
};

// What one instance counts, read while it runs (or after): the one set of
// live counters the exporter, the progress line and the summary all read.
struct LiveStage {
  uint64_t events = 0;
  uint64_t blocked_ns[kBlockReasons] = {0, 0, 0};
  pid_t tid = 0;
};
struct LiveInstance {
  StageTotals in, out;  // events, tuples, bytes received / sent
  LiveStage stages[3];  // receive, process, send
  size_t ring[2] = {0, 0}, ring_capacity = 0;
  std::vector<LiveLink> links;
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
  // From any thread: every stage ends at once, without END, with `why` as
  // the instance's status (a SIGTERM'd process, which still reports); a
  // send stage waiting on a receiver that grants nothing stops waiting.
  void stop(const Status& why) {
    fail(why);
    dest_->interrupt();
  }
  void join();
  bool done() const { return done_.load(std::memory_order_acquire) == 3; }
  // An eventfd written once when done() turns true, so whoever waits for it
  // sleeps instead of polling (set before start()).
  void set_done_fd(int fd) { done_fd_ = fd; }
  Status status() const;
  void report(ProcessSummary& s) const;
  // Each operator's tuples and events in and out and time (process stage only; after join()).
  const OperatorChain& chain() const { return chain_; }
  // Live counters for progress lines and the metrics exporter: written by
  // the stage threads only, read by anyone while they run.
  const StageCounters& in() const { return in_; }
  const StageCounters& out() const { return out_; }
  static constexpr int kStages = 3;  // receive, process, send
  static const char* stage_name(int i);
  // The stage's thread (its id, for its CPU time in /proc), 0 before it started.
  pid_t stage_tid(int i) const { return tid_[i].load(std::memory_order_acquire); }
  uint64_t stage_events(int i) const { return stage_events_[i].n.load(std::memory_order_relaxed); }
  // Descriptors waiting in the rings: 0 receive -> process, 1 process -> send.
  size_t ring_size(int r) const { return r == 0 ? to_process_.size() : to_send_.size(); }
  size_t ring_capacity() const { return cfg_.ring_slots; }
  // Everything above, and the links' counters (the send stage's credit
  // waits are its no_credit time), from any thread.
  void live(LiveInstance* out) const;
  const LiveHistogram* live_latency() const { return dest_->live_latency(); }
  // Events the receiving thread ran through the process stage itself
  // (adaptive; and, a small batch with the send stage idle, sent), or
  // (shared) sent.
  uint64_t inline_events() const { return inline_events_.load(std::memory_order_relaxed); }

 private:
  void receive_loop();
  void shared_loop();
  Status receive_batch(std::span<Descriptor> batch, size_t* n, uint64_t* bytes = nullptr);
  bool first_event_seen_ = false;  // the receiving thread's
  // The process stage's work on a batch; what it keeps goes to forward().
  bool process_batch(Descriptor* batch, size_t n);
  // To the send stage: consumed here (shared; adaptive while the send
  // thread is idle) or pushed to its ring.
  bool forward(Descriptor* d, size_t n);
  bool send_here(const Descriptor* d, size_t n, bool* ok);
  uint32_t emit_slot();
  void process_loop();
  void send_loop();
  size_t next_to_send(Descriptor* batch, size_t max, Status* st);
  size_t gather(Descriptor* batch, size_t n);
  void fail(const Status& st);
  bool hand_over(Descriptor& d);
  bool push_all(int stage, SpscRing<Descriptor>& ring, const Descriptor* d, size_t n);
  void add_blocked(int stage, BlockReason r, uint64_t since_ns) {
    auto& a = blocked_ns_[stage].ns[r];
    a.store(a.load(std::memory_order_relaxed) + (mono_ns() - since_ns), std::memory_order_relaxed);
  }
  class ChainEmitter;
  friend class ChainEmitter;
  // Runs descriptor d through operators from..end; false: consumed (its
  // slot freed). Emitted events go through the rest and on to the send stage.
  bool run_chain(Descriptor& d, size_t from);
  bool end_chain(Descriptor& d);
  SlotPool* work_pool_ = nullptr;
  std::vector<std::unique_ptr<ChainEmitter>> emitters_;
  std::vector<uint64_t> watermark_;
  std::vector<double> nested_s_;
  uint64_t max_ts_ = 0;
  // Operator cost is timed on a sample of the chain's passes: a read of the
  // thread's CPU clock is a system call (1-2 us on this VM, two per operator
  // per descriptor), as much as the rest of a hop at low rates. The first
  // kTimedAlways passes are timed (weight 1), then one in kTimeOneIn at
  // random (weight kTimeOneIn): the sum stays an unbiased estimate. One in
  // 16 would put the two reads on 6% of a node's events, inside its p99
  // latency; one in 256 keeps them below 0.4%.
  static constexpr uint32_t kTimedAlways = 16, kTimeOneIn = 256;
  double time_pass();          // the weight of the pass about to start; 0: not timed
  double timing_ = 1;          // the weight of the pass running now (0: untimed)
  uint64_t passes_ = 0;
  uint32_t sample_rng_ = 0x9e3779b9u;

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
  // Written by one stage each, per batch: a cache line apiece (three
  // threads writing one line made it bounce between the cores on every
  // batch). Likewise the blocked times and run to completion's counters.
  struct alignas(kCacheLine) StageEvents {
    std::atomic<uint64_t> n{0};
  };
  StageEvents stage_events_[3];
  std::atomic<pid_t> tid_[3] = {0, 0, 0};
  // Where each stage ran, read by its thread as it ends.
  std::string stage_cpus_[3];
  int last_cpu_[3] = {-1, -1, -1};
  void run_stage(int i, void (Instance::*loop)());
  struct alignas(kCacheLine) Blocked {
    std::atomic<uint64_t> ns[kBlockReasons] = {};
  };
  Blocked blocked_ns_[3];
  void count_stage(int i, uint64_t ev) {
    stage_events_[i].n.store(stage_events_[i].n.load(std::memory_order_relaxed) + ev,
                             std::memory_order_relaxed);
  }
  std::atomic<int> done_{0};
  int done_fd_ = -1;
  void stage_done(int stages);
  // threads: adaptive and shared ("Run to completion" in node.cc).
  bool inline_ = false;           // the receiving thread runs process (and send) now
  bool send_inline_ = false;      // ... and may send what it processed (a small batch; shared: always)
  alignas(kCacheLine) uint64_t handed_ = 0;  // descriptors pushed to to_process_ (receive thread only)
  uint32_t unwaited_ = 0;         // batches in a row that came without a wait (receive thread only)
  alignas(kCacheLine) std::atomic<uint64_t> processed_{0};  // of those, done by the process thread
  alignas(kCacheLine) std::atomic<uint64_t> queued_{0};  // descriptors pushed to to_send_, by whoever produced them
  alignas(kCacheLine) std::atomic<uint64_t> sent_{0};    // of those, consumed by the send thread
  std::mutex send_mu_;            // dest_: the send thread, or the receiving thread sending inline
  // next_to_send's wait: the destination's fds and the ring's, kept from one
  // wait to the next (the send stage's own; sized once, no allocation per wait).
  std::vector<int> send_fds_;
  std::vector<pollfd> send_poll_;
  std::atomic<bool> kick_{false};       // an inline send left dest_ busy: the send thread reaps
  // adaptive, under send_mu_: the send thread's last choice was to sleep on
  // dest_'s fds with its ring's (dest_ busy, or acks), not on the ring
  // alone: what an inline send leaves to be acknowledged wakes it there,
  // without a kick.
  bool send_on_dest_fds_ = false;
  std::mutex start_mu_;           // the receive stage starts its source after dest_ started
  std::condition_variable start_cv_;
  bool dest_start_done_ = false, dest_ok_ = false;  // under start_mu_
  bool ended_ = false;            // shared: END was consumed
  std::atomic<uint64_t> inline_events_{0};
  // Checkpoints (process thread, except the two counters).
  bool checkpointing_ = false;
  bool saw_end_ = false;
  Status restore();
  bool trim_replayed(Descriptor& d);   // false: all of d was in the snapshot
  bool checkpoint_due() const;
  bool checkpoint(bool final);         // false: the instance stopped meanwhile
  // A node's snapshots (operators, not a sink): taken between two batches
  // and written once what the operators emitted before it was acknowledged
  // downstream, while the process stage goes on (snapshot.cc). One at a
  // time; its input acknowledgements wait for the write.
  bool ck_node_begin();                // process thread; false: the instance failed
  bool ck_node_commit();               // process thread: writes the pending one if it may
  bool ck_node_async_ = false;
  bool ck_node_pending_ = false, ck_node_marked_ = false;
  uint64_t ck_node_target_ = 0;        // ck_queued_ when it was taken
  std::string ck_node_bytes_;          // its encoded snapshot
  std::vector<uint64_t> ck_node_marks_;  // where its outputs end in the links' logs
  uint64_t ck_node_held_ = 0;          // the input held up to it (its number is ck_.number's)
  bool write_snapshot(const CheckpointState& st);
  bool release_held();                 // all of held_
  bool hold(const Descriptor& d);      // false: the instance failed
  // Sleeps until input arrives, the ring closes or the deadline passes; with
  // `unless`, not at all if it is nonzero once the wait is armed (so a
  // notify that came just before is not slept through).
  bool wait_input_until(uint64_t deadline_ns, const std::atomic<uint64_t>* unless = nullptr);
  // An input frame whose effect no snapshot holds yet: its slot, held (one
  // holder more), or, with cfg_.input_ledger, its claim (the slot went on).
  struct Held {
    AckLedger::Claim claim;
    uint32_t slot = 0;
    bool claimed = false;
  };
  std::vector<Held> held_;
  CheckpointState ck_;
  SnapshotOut ck_scratch_;
  std::string ck_bytes_;
  std::unique_ptr<SnapshotFiles> ck_files_;
  uint64_t last_ck_ns_ = 0, ck_dropped_ = 0, ck_restored_ = 0, ck_bytes_last_ = 0;
  // A destination that saves state (a sink): the tuples this process took in
  // (after replays were dropped) before the snapshot it restored, and since.
  uint64_t restored_tuples_ = 0, ck_in_tuples_ = 0;
  // Restored from a snapshot taken after END (a sink killed between its END
  // and its summary): it reports from the snapshot, no upstream is waited for.
  std::atomic<bool> restored_end_{false};
  SnapshotOut ck_dest_;
  double ck_wait_s_ = 0, ck_write_s_ = 0;
  // Descriptors to the send stage, and consumed there.
  alignas(kCacheLine) std::atomic<uint64_t> ck_queued_{0};
  alignas(kCacheLine) std::atomic<uint64_t> ck_sent_{0};
  // A sink without operators snapshots without stopping its send stage
  // ("Operator snapshots" in docs/DESIGN.md). The process stage posts cuts:
  // the descriptors it forwarded so far, with its streams' positions then.
  // The send stage copies the destination's state out when it has consumed
  // exactly up to a cut (the latest one it reaches while the copy is free),
  // or the process stage does, if the send stage is idle there (it only
  // tries the lock, never waits out a batch). The process stage writes the
  // copy and releases the input slots the cut covers, while the send stage
  // goes on. Cuts are posted while earlier ones are still on their way: a
  // held slot waits for the send stage to reach it and for one write, not
  // for everything queued before it to drain first and then its own turn.
  bool ck_async_ = false;
  struct Cut {
    uint64_t target = 0;  // ck_queued_ when it was posted
    uint64_t tuples = 0;  // the tuples taken in as of then
    uint64_t held = 0;    // input slots held as of then (held_base_ + held_.size())
    uint64_t max_ts = 0;
    uint64_t next_seq[kMaxStreams] = {};
  };
  static constexpr uint64_t kCuts = 8;
  static constexpr uint64_t kNoCut = UINT64_MAX;
  std::unique_ptr<Cut[]> cuts_;         // a ring of kCuts, written by the process thread only
  uint64_t cuts_first_ = 0;             // process thread: the oldest cut neither written nor passed
  std::atomic<uint64_t> cuts_posted_{0};  // cuts posted; cut i is cuts_[i % kCuts]
  uint64_t cut_next_ = 0;               // under send_mu_: the first cut the send stage has not passed
  std::atomic<uint64_t> ck_captured_{0};  // cut + 1 whose state is in ck_dest_, not yet taken (0: free)
  uint64_t held_base_ = 0;              // process thread: input slots held and released, ever
  CheckpointState ck_pending_state_;    // process thread: the snapshot being written
  void ck_capture(uint64_t cut);        // under send_mu_, with ck_sent_ at the cut's target
  void ck_try_capture();                // process thread: captures if the send stage is idle at a cut
  bool ck_post();                       // process thread: a cut at what it forwarded so far
  bool ck_complete();                   // process thread: writes a captured snapshot
  uint64_t ck_uncut() const;            // process thread: input slots held beyond the last cut
  uint64_t ck_on_way() const {          // process thread: cuts posted, neither written nor passed
    return cuts_posted_.load(std::memory_order_relaxed) - cuts_first_;
  }
  bool release_held_to(uint64_t held);  // process thread: the held slots before `held`
  // process thread: how long an idle wait for a cut on its way lasts (grows
  // while nothing is written, back to the least once something is).
  static constexpr uint64_t kCkIdleWaitMinNs = 50000, kCkIdleWaitMaxNs = 1000000;
  uint64_t ck_idle_wait_ns_ = kCkIdleWaitMinNs;
  mutable std::mutex mu_;
  Status error_;
  std::thread threads_[3];
};

}  // namespace sluice

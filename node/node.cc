#include "node/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>

namespace sluice {
namespace {
constexpr size_t kReceiveBatch = 64;
constexpr size_t kProcessBatch = 256;
constexpr size_t kSendBatch = 1024;  // everything queued, up to one gather list

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

// ---- NetSource --------------------------------------------------------------

NetSource::NetSource(const LinkOptions& opts) : opts_(opts), pool_(opts.slots, opts.slot_bytes) {}

std::unique_ptr<NetSource> NetSource::make(const LinkOptions& opts, Status* st) {
  std::unique_ptr<NetSource> s(new NetSource(opts));
  s->listener_ = make_listener(opts, s->pool_, st);
  if (!s->listener_) return nullptr;
  return s;
}

Status NetSource::start() {
  Status st;
  auto r = listener_->accept(&st);
  std::lock_guard lk(mu_);
  if (!r) return st;
  if (shut_) {
    r->shutdown();
    return Status::Error("shut down while accepting");
  }
  receiver_ = std::move(r);
  return {};
}

Status NetSource::next(std::span<Descriptor> out, size_t* n) { return receiver_->receive(out, n); }

void NetSource::shutdown() {
  std::lock_guard lk(mu_);
  shut_ = true;
  listener_->shutdown();
  if (receiver_) receiver_->shutdown();
  pool_.close();
}

void NetSource::report(ProcessSummary& s) const {}

// ---- NetDestination ---------------------------------------------------------

Status NetDestination::start() {
  Status st;
  sender_ = make_sender(opts_, pool_, releaser_, &st);
  return sender_ ? Status() : st;
}

void NetDestination::abort() {
  if (sender_) last_stats_ = sender_->stats();
  sender_.reset();  // closes the socket: the receiver sees the stream cut short
}

void NetDestination::report(ProcessSummary& s) const {
  s.credit_waits += sender_ ? sender_->stats().credit_waits : last_stats_.credit_waits;
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
  threads_[0] = std::thread([this] { receive_loop(); });
  threads_[1] = std::thread([this] { process_loop(); });
  threads_[2] = std::thread([this] { send_loop(); });
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

bool Instance::push_all(SpscRing<Descriptor>& ring, const Descriptor* d, size_t n) {
  while (n) {
    size_t k = ring.try_push_n(d, n);
    d += k;
    n -= k;
    if (n && !ring.push(*d, cfg_.wait)) return false;  // waits; false when closed
    if (n) {
      ++d;
      --n;
    }
  }
  return true;
}

void Instance::receive_loop() {
  const CpuTimes c0 = CpuTimes::thread();
  Status st = source_->start();
  Descriptor batch[kReceiveBatch];
  bool first = true;
  while (st.ok()) {
    size_t n = 0;
    st = source_->next(batch, &n);
    if (!st.ok() || n == 0) break;
    const auto [ev, tu, by] = count(batch, n);
    if (first && ev) {
      first = false;
      on_first_event_();
    }
    in_.add(ev, tu, by);
    stage_events_[0] += ev;
    if (!push_all(to_process_, batch, n)) break;
  }
  if (!st.ok()) fail(st);
  to_process_.close();
  cpu_[0] = CpuTimes::thread() - c0;
  done_.fetch_add(1, std::memory_order_acq_rel);
}

// Copies the event run into a fresh handover slot and frees the received
// slot (its credit goes upstream now). False once the pool was closed.
bool Instance::hand_over(Descriptor& d) {
  uint32_t slot = handover_->pool.acquire(cfg_.wait);
  if (slot == kNoSlot) return false;
  std::memcpy(handover_->pool.slot(slot), source_->pool().slot(d.slot) + d.offset, d.bytes);
  source_->releaser().release(d.slot);
  d.slot = slot;
  d.offset = 0;
  return true;
}

void Instance::process_loop() {
  const CpuTimes c0 = CpuTimes::thread();
  Descriptor batch[kProcessBatch];
  SlotPool& pool = handover_ ? handover_->pool : source_->pool();
  bool ok = true;
  while (ok) {
    size_t n = to_process_.pop_n(batch, kProcessBatch, cfg_.wait);
    if (n == 0) break;
    // With a handover copy, one event at a time: a copy waits for a free
    // handover slot only after every earlier copy is on its way to the send
    // stage, which frees them. Waiting with copies held back would deadlock.
    const size_t step = handover_ ? 1 : n;
    for (size_t i = 0; ok && i < n; i += step) {
      for (size_t j = i; j < i + step; ++j) {
        Descriptor& d = batch[j];
        if (handover_ && !(ok = hand_over(d))) break;
        if (!(d.flags & kDescEnd) && !chain_.empty()) {
          chain_.process(pool.slot(d.slot) + d.offset, d);
          stage_events_[1] += d.events;
        }
      }
      ok = ok && push_all(to_send_, batch + i, step);
    }
  }
  to_send_.close();
  cpu_[1] = CpuTimes::thread() - c0;
  done_.fetch_add(1, std::memory_order_acq_rel);
}

void Instance::send_loop() {
  const CpuTimes c0 = CpuTimes::thread();
  Status st = dest_->start();
  Descriptor batch[kSendBatch];
  bool ended = false;
  while (st.ok() && !ended) {
    size_t n = to_send_.pop_n(batch, kSendBatch, cfg_.wait);
    if (n == 0) break;  // closed without END: somebody failed, and said so
    if (batch[n - 1].flags & kDescEnd) ended = true;
    const auto [ev, tu, by] = count(batch, n);
    st = dest_->consume(std::span<const Descriptor>(batch, n));
    if (!st.ok()) break;
    out_.add(ev, tu, by);
    stage_events_[2] += ev;
  }
  if (st.ok() && ended) st = dest_->finish();
  if (!st.ok()) fail(st);
  if (!st.ok() || !ended) dest_->abort();
  cpu_[2] = CpuTimes::thread() - c0;
  done_.fetch_add(1, std::memory_order_acq_rel);
}

void Instance::report(ProcessSummary& s) const {
  static const char* names[3] = {"receive", "process", "send"};
  for (int i = 0; i < 3; ++i)
    s.stages.push_back({fmt::format("{}/{}", names[i], cfg_.index), cpu_[i].user_s,
                        cpu_[i].sys_s, stage_events_[i]});
  source_->report(s);
  dest_->report(s);
}

}  // namespace sluice

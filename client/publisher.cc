// The publisher: the application's thread claims room in a slot of the
// pool, writes tuples there and commits; the event's descriptor goes
// through a ring to the instance's receive stage (AppSource), and on
// through its stages to the downstream links (NetDestination), as a load
// generator's events go.
#include "sluice/publisher.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>

#include "base/fd.h"
#include "client/internal.h"
#include "transport/event.h"

namespace sluice {
namespace client {
namespace {

// The receive stage's work: what the application committed. The pool's
// free queue is the application's (claim takes from it); the stages
// release into it once a slot's event is sent (acks: acknowledged).
class AppSource final : public Source {
 public:
  AppSource(size_t slots, size_t slot_bytes, int started_fd)
      : pool_(slots, slot_bytes), ring_(std::bit_ceil(slots + 2)), started_fd_(started_fd) {}
  // Runs once the send stage's links are up.
  Status start() override {
    const uint64_t one = 1;
    (void)!::write(started_fd_, &one, sizeof one);
    return {};
  }
  Status next(std::span<Descriptor> out, size_t* n) override {
    *n = 0;
    waited_ = false;
    if (ended_) return {};
    EventCount& ready = ring_.not_empty();
    for (;;) {
      if (const size_t k = ring_.try_pop_n(out.data(), out.size()); k) {
        ended_ = out[k - 1].flags & kDescEnd;
        *n = k;
        return {};
      }
      if (ring_.closed()) return Status::Error("the publisher was shut down");
      waited_ = true;
      if (!ready.enable_fd()) return Status::Error("eventfd for the publisher's ring failed");
      ready.prepare_fd_wait();
      if (ring_.size() || ring_.closed()) {
        ready.finish_fd_wait(false);
        continue;
      }
      // threads: shared: the send stage's carrier work (acknowledgements to
      // read, completions to reap) is this thread's while it waits.
      Status st;
      const int fd = ready.fd();
      if (idle_wait(std::span<const int>(&fd, 1), 200, &st)) {
        ready.finish_fd_wait(true);
        if (!st) return st;
        continue;
      }
      ready.finish_fd_wait(wait_fd(fd, -1));
    }
  }
  SlotPool& pool() override { return pool_; }
  void shutdown() override {
    shut_.store(true, std::memory_order_release);
    ring_.close();
    pool_.close();
  }
  bool waited() const override { return waited_; }
  bool shut() const { return shut_.load(std::memory_order_acquire); }
  SpscRing<Descriptor>& ring() { return ring_; }

 private:
  SlotPool pool_;
  SpscRing<Descriptor> ring_;
  const int started_fd_;
  bool waited_ = false, ended_ = false;
  std::atomic<bool> shut_{false};
};

}  // namespace
}  // namespace client

using namespace client;

class PublisherImpl {
 public:
  Endpoint e;
  Layout layout;
  uint32_t tuple_bytes = 0, max_tuples = 0, streams = 0, first_stream = 0;
  TransportContext ctx;
  Fd started{::eventfd(0, EFD_CLOEXEC)}, done{::eventfd(0, EFD_CLOEXEC)};
  AppSource* src = nullptr;
  AppInstance ai;
  Measure measure;
  std::atomic<bool> stop{false};
  std::vector<uint64_t> next_seq, events;  // per stream
  std::atomic<uint64_t> committed{0};
  mutable std::mutex ack_mu;
  mutable uint64_t ack_floor = 0;  // a split over several links: all acknowledged up to here
  mutable std::vector<uint64_t> acked_scratch;
  EventHeader header{};
  std::string error;
  bool closed = false, joined = false;

  Code fail(std::string msg) {
    error = std::move(msg);
    return Code::kError;
  }
  // The instance failed (a link without acks broke, a receiver refused):
  // its own words.
  Code failed() {
    Status st = ai.instance->status();
    return fail(st.ok() ? "the publisher's stages stopped" : st.message());
  }
  // A free slot, waiting up to timeout_ms for one.
  uint32_t acquire(int timeout_ms) {
    SlotPool& pool = src->pool();
    uint32_t slot = pool.try_acquire();
    if (slot != kNoSlot || timeout_ms <= 0) return slot;
    const uint64_t deadline = mono_ns() + uint64_t(timeout_ms) * 1000000;
    EventCount& freed = pool.freed();
    if (!freed.enable_fd()) return kNoSlot;
    while (slot == kNoSlot && !src->shut()) {
      freed.prepare_fd_wait();
      slot = pool.try_acquire();
      if (slot != kNoSlot) {
        freed.finish_fd_wait(false);
        break;
      }
      const int left = ms_until(deadline);
      freed.finish_fd_wait(left > 0 && wait_fd(freed.fd(), left));
      if (left == 0) break;
      slot = pool.try_acquire();
    }
    return slot;
  }
  uint64_t sent() const { return StageTotals::of(ai.instance->out()).events; }
  uint64_t acknowledged() const {
    std::lock_guard lk(ack_mu);
    if (ai.out->acked_events(&acked_scratch)) {
      if (acked_scratch.size() == 1) return acked_scratch[0];
    }
    const uint64_t s = sent();
    if (ai.out->acknowledged() && ai.out->settled()) ack_floor = std::max(ack_floor, s);
    return ack_floor;
  }
  void join() {
    if (joined) return;
    ai.instance->join();
    joined = true;
  }
  Result finish_summary() {
    ProcessSummary s;
    summarize(e, *ai.instance, measure, &s);
    Status st = ai.instance->status();
    s.ok = st.ok();
    s.error = st.message();
    if (Status w = write_summary(e, s); !w && st.ok()) st = w;
    return st.ok() ? Result{} : error_of(st);
  }
  static Result error_of(const Status& st) { return {Code::kError, st.message()}; }
};

Publisher::Publisher(std::unique_ptr<PublisherImpl> impl) : impl_(std::move(impl)) {}

Publisher::~Publisher() {
  if (impl_ && !impl_->closed) close();
}

Result Publisher::open(const Connect& c, std::unique_ptr<Publisher>* out) {
  out->reset();
  auto p = std::make_unique<PublisherImpl>();
  if (Status st = open_endpoint(c, Role::kPublisher, &p->e); !st) return client::error(std::move(st));
  if (!p->started.valid() || !p->done.valid()) return {Code::kError, "eventfd failed"};
  const Deployment& d = p->e.d;
  p->layout = layout_of(p->e.schema);
  p->tuple_bytes = p->e.schema.tuple_bytes();
  p->max_tuples = tuples_per_event(p->tuple_bytes, d.event_bytes);
  p->streams = d.streams;
  p->first_stream = d.first_stream(p->e.index);
  p->next_seq.assign(p->streams, 0);
  p->events.assign(p->streams, 0);
  // The pool: a queue of 1 MiB of events, as the load generator's, and
  // with acks the links' unacknowledged windows besides (what is kept for
  // a replay stays in its slot until acknowledged).
  const size_t ev = event_wire_bytes(p->tuple_bytes, p->max_tuples);
  size_t window = 0;
  uint32_t slot_bytes = 0;
  for (size_t l : d.outputs_of(p->e.index)) {
    const LinkOptions o = d.link_options(l, p->e.instance);
    if (o.acks) window = std::max<size_t>(window, size_t{o.slots} * kAckWindowPerSlot);
    slot_bytes = slot_bytes ? std::min(slot_bytes, o.slot_bytes) : o.slot_bytes;
  }
  if (ev > slot_bytes)
    return {Code::kError, fmt::format("an event of {} tuples of {} bytes ({} bytes) does not fit the "
                                      "receiver's {}-byte slots",
                                      p->max_tuples, p->tuple_bytes, ev, slot_bytes)};
  const size_t slots = std::min<size_t>(d.loadgen_slots, std::max<size_t>(16, (1u << 20) / ev) + window);
  const size_t end_bytes = EndOfStream::end_wire_bytes(p->streams, 0);
  auto src = std::make_unique<AppSource>(slots, std::max(ev, end_bytes), p->started.get());
  p->src = src.get();
  AppEnd end;
  end.source = std::move(src);
  PublisherImpl* raw = p.get();
  if (Status st = build_app_instance(d, p->e.index, p->e.instance, p->ctx, std::move(end),
                                     [raw] { raw->measure.first(); }, &p->stop, &p->ai);
      !st)
    return client::error(std::move(st));
  p->header.magic = kEventMagic;
  p->header.version = kWireVersion;
  p->header.header_bytes = kEventHeaderBytes;
  p->header.tuple_bytes = p->tuple_bytes;
  p->ai.instance->set_done_fd(p->done.get());
  p->ai.instance->start();
  // Connected, or failed (a refusal, a connect timeout): open says which.
  pollfd fds[2] = {{p->started.get(), POLLIN, 0}, {p->done.get(), POLLIN, 0}};
  while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
  }
  if (!(fds[0].revents & POLLIN) || p->ai.instance->done()) {
    p->ai.instance->stop(Status::Error("the publisher's links did not come up"));
    p->join();
    p->closed = true;
    Status st = p->ai.instance->status();
    return {Code::kError, st.ok() ? "the publisher's links did not come up" : st.message()};
  }
  write_attach(p->e);
  out->reset(new Publisher(std::move(p)));
  return {};
}

const Layout& Publisher::layout() const { return impl_->layout; }
uint32_t Publisher::max_tuples() const { return impl_->max_tuples; }
uint32_t Publisher::streams() const { return impl_->streams; }

Code Publisher::claim(uint32_t n, Claim* out, std::chrono::milliseconds timeout, uint32_t stream) {
  PublisherImpl& p = *impl_;
  if (p.closed) return Code::kClosed;
  if (n == 0 || n > p.max_tuples)
    return p.fail(fmt::format("claim of {} tuples: an event holds 1 to {} (event_bytes {})", n, p.max_tuples,
                              p.e.d.event_bytes));
  if (stream >= p.streams)
    return p.fail(fmt::format("claim on stream {}: this publisher writes streams 0 to {} (streams: {})", stream,
                              p.streams - 1, p.streams));
  if (p.src->shut()) return p.failed();
  const uint32_t slot = p.acquire(static_cast<int>(timeout.count()));
  if (slot == kNoSlot) return p.src->shut() ? p.failed() : Code::kBackPressured;
  out->tuples = p.src->pool().slot(slot) + kEventHeaderBytes;
  out->capacity = n;
  out->tuple_bytes = p.tuple_bytes;
  out->stream = stream;
  out->slot = slot;
  return Code::kOk;
}

void Publisher::abort(Claim& c) {
  if (c.slot == UINT32_MAX) return;
  (void)impl_->src->pool().release(c.slot);
  c = Claim{};
}

Code Publisher::commit(Claim& c, uint32_t n) {
  PublisherImpl& p = *impl_;
  if (c.slot == UINT32_MAX) return p.fail("commit of a claim that holds no room (committed or aborted already)");
  if (p.closed) return Code::kClosed;
  n = std::min(n, c.capacity);
  if (n == 0) {
    abort(c);
    return Code::kOk;
  }
  if (p.src->shut()) {
    abort(c);
    return p.failed();
  }
  std::byte* e = p.src->pool().slot(c.slot);
  EventHeader h = p.header;
  const uint32_t s = c.stream;
  h.stream = p.first_stream + s;
  h.first_seq = p.next_seq[s];
  h.tuple_count = h.tuple_span = n;
  h.send_ts_ns = wall_clock_ns();
  h.event_seq = p.events[s];
  std::memcpy(e, &h, sizeof h);
  std::byte* t = e + kEventHeaderBytes;
  uint64_t seq = h.first_seq;
  for (uint32_t i = 0; i < n; ++i, t += p.tuple_bytes, ++seq) std::memcpy(t + kTupleSeqOffset, &seq, 8);
  seal_event(e);
  const Descriptor d{c.slot, 0, static_cast<uint32_t>(h.wire_bytes()), 1, n, 0};
  if (!p.src->ring().try_push(d)) {  // sized to the pool: only a bug lands here
    abort(c);
    return p.fail("the publisher's ring is full");
  }
  p.next_seq[s] += n;
  ++p.events[s];
  p.committed.fetch_add(1, std::memory_order_relaxed);
  c = Claim{};
  return Code::kOk;
}

Code Publisher::offer(std::span<const std::byte> tuples, std::chrono::milliseconds timeout, uint32_t stream) {
  PublisherImpl& p = *impl_;
  if (tuples.size() % p.tuple_bytes != 0)
    return p.fail(fmt::format("offer of {} bytes: not a whole number of {}-byte tuples", tuples.size(),
                              p.tuple_bytes));
  Claim c;
  const Code got = claim(static_cast<uint32_t>(tuples.size() / p.tuple_bytes), &c, timeout, stream);
  if (got != Code::kOk) return got;
  std::memcpy(c.tuples, tuples.data(), tuples.size());
  return commit(c);
}

Code Publisher::flush(std::chrono::milliseconds timeout) {
  PublisherImpl& p = *impl_;
  if (p.joined) return p.ai.instance->status().ok() ? Code::kOk : p.failed();
  const uint64_t deadline = mono_ns() + uint64_t(std::max<int64_t>(0, timeout.count())) * 1000000;
  const bool acks = p.ai.out->acknowledged();
  for (;;) {
    if (p.src->shut() || p.ai.instance->done()) return p.failed();
    const uint64_t want = p.committed.load(std::memory_order_relaxed);
    if (p.sent() >= want && (!acks || p.ai.out->settled())) return Code::kOk;
    const int left = ms_until(deadline);
    if (left == 0) return Code::kBackPressured;
    wait_fd(p.done.get(), std::min(left, 1));
  }
}

uint64_t Publisher::committed() const { return impl_->committed.load(std::memory_order_relaxed); }
uint64_t Publisher::sent() const { return impl_->sent(); }
uint64_t Publisher::acknowledged() const { return impl_->ai.out->acknowledged() ? impl_->acknowledged() : 0; }

Result Publisher::close(std::chrono::milliseconds timeout) {
  PublisherImpl& p = *impl_;
  if (p.closed) return {Code::kClosed, "closed already"};
  p.closed = true;
  const uint64_t deadline = mono_ns() + uint64_t(std::max<int64_t>(0, timeout.count())) * 1000000;
  Status why;
  if (!p.src->shut()) {
    // END: each stream's totals, so the ends see a lost tail.
    const uint32_t slot = p.acquire(ms_until(deadline));
    if (slot == kNoSlot) {
      why = Status::Error(fmt::format("close: no room for END within {} ms (back pressure)", timeout.count()));
    } else {
      EndOfStream eos{};
      eos.n_streams = p.streams;
      for (uint32_t s = 0; s < p.streams; ++s) eos.streams[s] = {p.first_stream + s, 0, p.next_seq[s], p.events[s]};
      write_end(eos, p.src->pool().slot(slot));
      p.src->ring().try_push(Descriptor{slot, 0, static_cast<uint32_t>(eos.wire_bytes()), 0, 0, kDescEnd});
      if (!p.ai.instance->done()) wait_fd(p.done.get(), ms_until(deadline));
      if (!p.ai.instance->done())
        why = Status::Error(fmt::format("close: the receivers did not take END within {} ms", timeout.count()));
    }
  }
  if (!why.ok()) {
    p.stop.store(true);
    p.ai.instance->stop(why);
  }
  p.join();
  Result r = p.finish_summary();
  if (!r.ok()) p.error = r.message;
  return r;
}

const std::string& Publisher::error() const { return impl_->error; }

}  // namespace sluice

// The subscriber: the instance's receive stage takes frames from the links
// (NetSource: credits, acknowledgements, a broken link's rejoin), its send
// stage (AppDestination) passes their descriptors through a ring to the
// application's poll, which checks each event as the sink does (the sink's
// Verifier, on the application's thread, where the bytes are read anyway),
// hands the intact ones to the handler and releases the slot: its credit,
// and without manual acknowledgements its acknowledgement, go upstream.
#include "sluice/subscriber.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/fd.h"
#include "client/internal.h"
#include "sink/verifier.h"
#include "transport/event.h"

namespace sluice {
namespace client {
namespace {

// The send stage's work: every descriptor to the application. The ring
// holds as many as the pool has slots, so it never fills: what the
// application has not polled holds its slot, and its link's credit.
class AppDestination final : public Destination {
 public:
  explicit AppDestination(SlotPool& pool) : verifier(pool), ring_(std::bit_ceil(pool.slots() + 2)) {}
  Status consume(std::span<const Descriptor> descs) override {
    if (ring_.try_push_n(descs.data(), descs.size()) != descs.size())
      return Status::Error("the subscriber's ring is full");  // sized to the pool: a bug
    return {};
  }
  void abort() override {
    aborted_.store(true, std::memory_order_release);
    ring_.close();
  }
  void report(ProcessSummary& s) const override { verifier.report(s); }
  const LiveHistogram* live_latency() const override { return verifier.live_latency(); }
  SpscRing<Descriptor>& ring() { return ring_; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  Verifier verifier;  // the application's thread's

 private:
  SpscRing<Descriptor> ring_;
  std::atomic<bool> aborted_{false};
};

}  // namespace
}  // namespace client

using namespace client;

class SubscriberImpl {
 public:
  Endpoint e;
  Layout layout;
  SubscriberOptions opts;
  TransportContext ctx;
  Fd done{::eventfd(0, EFD_CLOEXEC)};
  AppInstance ai;
  AppDestination* dest = nullptr;
  SlotPool* pool = nullptr;
  Measure measure;
  // The descriptor being handed out, and where in it (a frame may carry
  // several events; a poll may stop between two).
  Descriptor cur{};
  bool have_cur = false;
  uint32_t cur_off = 0, cur_left = 0;
  uint64_t cur_now = 0;
  // manual_acks: the frames handled and not yet acknowledged (bounded by
  // the links' windows: past them the upstreams get no credit).
  std::vector<AckLedger::Claim> claims;
  bool ended = false, closed = false, joined = false;
  std::string error;

  Code fail(std::string msg) {
    error = std::move(msg);
    return Code::kError;
  }
  Code failed() {
    Status st = ai.instance->status();
    return fail(st.ok() ? "the subscriber's stages stopped before the stream's END" : st.message());
  }
  void release(uint32_t slot) {
    if (opts.manual_acks) {
      AckLedger::Claim c;
      if (ai.in->claim(slot, &c) == AckLedger::Take::kClaimed) claims.push_back(c);
    }
    (void)pool->release(slot);
  }
  void join() {
    if (joined) return;
    ai.instance->join();
    joined = true;
  }
};

Subscriber::Subscriber(std::unique_ptr<SubscriberImpl> impl) : impl_(std::move(impl)) {}

Subscriber::~Subscriber() {
  if (impl_ && !impl_->closed) close();
}

Result Subscriber::open(const Connect& c, std::unique_ptr<Subscriber>* out, const SubscriberOptions& o) {
  out->reset();
  auto p = std::make_unique<SubscriberImpl>();
  p->opts = o;
  if (Status st = open_endpoint(c, Role::kSubscriber, &p->e); !st) return client::error(std::move(st));
  if (!p->done.valid()) return {Code::kError, "eventfd failed"};
  const Deployment& d = p->e.d;
  p->layout = layout_of(p->e.schema);
  bool acks = false;
  size_t window = 0;
  for (size_t l : d.inputs_of(p->e.index)) {
    const LinkOptions lo = d.link_options(l, p->e.instance);
    acks = acks || lo.acks;
    window += Receiver::window(lo.slots) + lo.slots;
    if (o.manual_acks && !lo.acks)
      return {Code::kError, fmt::format("manual_acks: the link {} -> {} has acks off; acknowledgements "
                                        "the application gives need acks: on",
                                        lo.from, lo.to)};
  }
  p->claims.reserve(window);
  SubscriberImpl* raw = p.get();
  AppEnd end;
  end.destination = [raw, acks](SlotPool& pool, NetSource* ledger, Status* st) -> std::unique_ptr<Destination> {
    if (!ledger) {
      *st = Status::Error("a subscriber without upstream links");
      return nullptr;
    }
    auto dst = std::make_unique<AppDestination>(pool);
    // Replays (acks) come again: dropped as the sink drops them.
    dst->verifier.dedupe(acks);
    for (const StreamPosition& sp : raw->opts.resume)
      dst->verifier.resume(sp.stream, sp.next_event_seq, sp.next_seq);
    if (raw->opts.manual_acks) ledger->claim_frames();
    raw->dest = dst.get();
    raw->pool = &pool;
    return dst;
  };
  if (Status st = build_app_instance(d, p->e.index, p->e.instance, p->ctx, std::move(end),
                                     [raw] { raw->measure.first(); }, nullptr, &p->ai);
      !st)
    return client::error(std::move(st));
  p->ai.instance->set_done_fd(p->done.get());
  p->ai.instance->start();
  write_attach(p->e);
  out->reset(new Subscriber(std::move(p)));
  return {};
}

const Layout& Subscriber::layout() const { return impl_->layout; }

Code Subscriber::poll(Handler handler, void* context, int limit, std::chrono::milliseconds timeout,
                      int* handled) {
  SubscriberImpl& p = *impl_;
  int n = 0;
  if (handled) *handled = 0;
  if (p.closed || p.ended) return Code::kClosed;
  SpscRing<Descriptor>& ring = p.dest->ring();
  const uint64_t deadline = mono_ns() + uint64_t(std::max<int64_t>(0, timeout.count())) * 1000000;
  while (n < limit) {
    if (!p.have_cur) {
      if (!ring.try_pop(p.cur)) {
        if (n > 0) break;
        if (p.dest->aborted() && ring.size() == 0) return p.failed();
        const int left = ms_until(deadline);
        if (left == 0) break;
        EventCount& ready = ring.not_empty();
        if (!ready.enable_fd()) return p.fail("eventfd for the subscriber's ring failed");
        ready.prepare_fd_wait();
        if (ring.size() || ring.closed()) {
          ready.finish_fd_wait(false);
          continue;
        }
        ready.finish_fd_wait(wait_fd(ready.fd(), left));
        continue;
      }
      std::byte* at = p.pool->slot(p.cur.slot) + p.cur.offset;
      if (p.cur.flags & kDescEnd) {
        p.dest->verifier.verify_end(at, p.cur.bytes);
        // END's own frame holds nothing to acknowledge late: it is, at once
        // (an acknowledgement is a prefix: it moves past END only once the
        // application acknowledged every frame before it).
        if (p.opts.manual_acks) {
          AckLedger::Claim c;
          if (p.ai.in->claim(p.cur.slot, &c) == AckLedger::Take::kClaimed) {
            p.ai.in->ack(c);
            p.ai.in->acked();
          }
        }
        (void)p.pool->release(p.cur.slot);
        p.ended = true;
        break;
      }
      p.have_cur = true;
      p.cur_off = 0;
      p.cur_left = p.cur.events;
      p.cur_now = wall_clock_ns();
      p.dest->verifier.arrived(p.cur_now);  // the stream's interval and its pauses, as the sink's
    }
    std::byte* run = p.pool->slot(p.cur.slot) + p.cur.offset;
    while (p.cur_left > 0 && n < limit) {
      std::byte* ev = run + p.cur_off;
      EventHeader h;
      std::memcpy(&h, ev, sizeof h);
      p.cur_off += static_cast<uint32_t>(h.wire_bytes());
      --p.cur_left;
      if (p.dest->verifier.verify_event(ev, p.cur_now) != Verifier::Verdict::kIntact) continue;
      const EventView v{ev + kEventHeaderBytes, h.tuple_count, h.tuple_bytes, h.stream, h.first_seq,
                        h.event_seq};
      handler(context, v);
      ++n;
    }
    if (p.cur_left == 0) {
      p.have_cur = false;
      p.release(p.cur.slot);
    }
  }
  if (handled) *handled = n;
  return p.ended && n == 0 ? Code::kClosed : Code::kOk;
}

Code Subscriber::acknowledge() {
  SubscriberImpl& p = *impl_;
  if (!p.opts.manual_acks) return p.fail("acknowledge: this subscriber acknowledges by itself (manual_acks off)");
  if (p.claims.empty()) return Code::kOk;
  for (const AckLedger::Claim& c : p.claims) p.ai.in->ack(c);
  p.ai.in->acked();
  p.claims.clear();
  return Code::kOk;
}

Counts Subscriber::counts() const {
  const VerifyCounts& v = impl_->dest->verifier.counts();
  return {v.events, v.tuples, v.lost, v.duplicated, v.corrupt, v.deduplicated, v.end_seen};
}

Result Subscriber::close() {
  SubscriberImpl& p = *impl_;
  if (p.closed) return {Code::kClosed, "closed already"};
  p.closed = true;
  // After END the links finish once its slot came back (and, manual_acks,
  // once everything was acknowledged): a moment. Before it, or stuck past
  // that, the stages stop.
  if (p.ended && !p.ai.instance->done()) wait_fd(p.done.get(), 10000);
  if (!p.ai.instance->done())
    p.ai.instance->stop(Status::Error(p.ended ? "the links did not finish within 10 s of END"
                                              : "closed by the application before the stream's END"));
  p.join();
  ProcessSummary s;
  summarize(p.e, *p.ai.instance, p.measure, &s);
  const LatencyHistogram& lat = p.dest->verifier.latency();
  s.latency_p50_us = lat.percentile(50) / 1e3;
  s.latency_p99_us = lat.percentile(99) / 1e3;
  s.latency_max_us = lat.max() / 1e3;
  Status st = p.ai.instance->status();
  if (st.ok() && !p.ended) st = Status::Error("stream ended without END");
  s.ok = st.ok();
  s.error = st.message();
  if (Status w = write_summary(p.e, s); !w && st.ok()) st = w;
  if (!st.ok()) p.error = st.message();
  return st.ok() ? Result{} : Result{Code::kError, st.message()};
}

const std::string& Subscriber::error() const { return impl_->error; }

}  // namespace sluice

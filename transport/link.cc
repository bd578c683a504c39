#include "transport/link.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace sluice {
namespace {

// adaptive_credits: how often the window is sized again.
constexpr int64_t kAdaptPeriodNs = 20'000'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// ---------------------------------------------------------------- Receiver

Receiver::Receiver(const LinkOptions& opts, std::unique_ptr<RxCarrier> carrier, SlotPool& pool,
                   uint32_t first_slot, std::string name)
    : opts_(opts),
      carrier_(std::move(carrier)),
      pool_(pool),
      first_slot_(first_slot),
      slots_(opts.slots),
      batch_(opts.effective_credit_batch()),
      name_(std::move(name)) {
  granted_.set(opts.slots);
  window_ = slots_;
  window_now_.set(window_);
  frame_of_.assign(slots_, 0);
  size_t ring = 2;
  while (ring < window(slots_) + slots_ + 1) ring <<= 1;
  back_.assign(ring, 0);
}

Receiver::~Receiver() = default;

Status check_link_fits_pool(const LinkOptions& opts, const SlotPool& pool, uint32_t first_slot) {
  if (opts.slots == 0 || first_slot + uint64_t{opts.slots} > pool.slots() ||
      opts.slot_bytes > pool.slot_bytes())
    return Status::Error(fmt::format(
        "{}: link of {} slots x {} bytes from slot {} does not fit a pool of {} slots x {} bytes",
        opts.to.empty() ? "receiver" : opts.to, opts.slots, opts.slot_bytes, first_slot,
        pool.slots(), pool.slot_bytes()));
  return {};
}

Status Receiver::fail(Status st) {
  if (error_.ok()) error_ = std::move(st);
  carrier_->shutdown();
  return error_;
}

Status Receiver::fail(std::string msg) { return fail(Status::Error(std::move(msg))); }

Status Receiver::poll(std::span<Descriptor> out, size_t* n) {
  *n = 0;
  // (An error found behind good frames was kept for this call.)
  if (!error_.ok()) return error_;
  if (ended_ || out.empty()) return {};
  if (shut_down_.load(std::memory_order_acquire)) return fail(name_ + ": receive shut down");
  if (Status due = send_due(); !due) return due;
  Arrival arr[64];
  size_t got = 0;
  Status st = carrier_->poll(std::span<Arrival>(arr, std::min<size_t>(out.size(), 64)), &got);
  Status carrier_error;  // found behind frames that arrived whole: those go on first
  if (!st) {
    if (shut_down_.load(std::memory_order_acquire)) return fail(name_ + ": receive shut down");
    if (got == 0) return fail(st);
    carrier_error = st;
  }
  size_t k = 0;
  for (size_t i = 0; i < got; ++i) {
    const Arrival& a = arr[i];
    // A frame that fails its checks is the link's error, never handed out
    // nor counted as received: an owner waits for every frame received to
    // come back (NetSource::tend_broken), and nobody holds this one. The
    // frames before it were good: they go on (and are counted); the next
    // poll() returns the error.
    const uint64_t frame = received_;
    std::string err;
    Status (*kind)(std::string) = &Status::Protocol;
    if (frame + 1 > granted_.get()) {
      err = fmt::format("frame {} sent without credit: the receiver granted {}", frame,
                        granted_.get());
    } else if (!owns(a.slot)) {
      kind = &Status::Error;  // the carrier's fault, not the peer's
      err = fmt::format("carrier landed a frame in slot {}, not one of this link's", a.slot);
    }
    if (!err.empty()) {
      Status e = fail(kind(fmt::format("{}: {}", name_, err)));
      if (k == 0) return e;
      break;
    }
    const std::byte* p = pool_.slot(a.slot);
    uint64_t tuples = 0;
    if (a.kind == FrameKind::kEvents) {
      if (a.bytes > opts_.slot_bytes)
        err = fmt::format("payload of {} bytes beyond the {}-byte slot", a.bytes, opts_.slot_bytes);
      else if (!event_run_ok(p, a.bytes, a.events, opts_.tuple_bytes, &tuples))
        err = check_event_run(p, a.bytes, a.events, opts_.tuple_bytes, &tuples);
    } else if (a.kind == FrameKind::kEnd) {
      err = check_end_of_stream(p, a.bytes);
    } else {
      err = fmt::format("frame kind {} handed up by the carrier", static_cast<unsigned>(a.kind));
    }
    if (!err.empty()) {
      Status e = fail(Status::Protocol(fmt::format("{}: frame {}: {}", name_, frame, err)));
      if (k == 0) return e;
      break;
    }
    ++received_;
    frame_of_[a.slot - first_slot_] = frame;
    if (received_ - returned_ > max_held_.get()) max_held_.set(received_ - returned_);
    held_.set(received_ - returned_);
    const bool end = a.kind == FrameKind::kEnd;
    out[k++] = Descriptor{a.slot, 0, a.bytes, end ? 0u : a.events, static_cast<uint32_t>(tuples),
                          end ? kDescEnd : 0u};
    if (end) {
      ended_ = true;
      end_slot_ = a.slot;
      // Nothing may follow END: what did is the link's error once END has
      // passed through (check_after_end), not handed out.
      if (i + 1 < got)
        after_end_ = fmt::format("a frame of kind {} and {} bytes",
                                 static_cast<unsigned>(arr[i + 1].kind), arr[i + 1].bytes);
      break;
    }
  }
  if (!carrier_error.ok()) {
    Status e = fail(carrier_error);
    if (k == 0) return e;
  }
  *n = k;
  if (opts_.adaptive_credits && k > 0) {
    // Timed when they were handed on (send_due: the next poll, or before
    // the owner sleeps), not now: a clock read here is 100-200 ns of every
    // frame's latency, and a round trip of 60-400 us can take a hop's
    // microsecond more.
    adapt_due_ = true;
    // Frames that arrived made room in the window for credits held back:
    // they go once these frames were handed on (send_due), so that at a low
    // rate no credit message sits between a frame's arrival and its
    // processing. A sender down to a quarter of its window gets them now:
    // under load, handing these frames on (a thread that also sends
    // downstream, threads: shared) takes long enough to leave it waiting.
    credit_due_ = pending_ > 0 && !ended_;
    if (credit_due_ && sender_credits() * 4 <= window_) (void)send_due();  // an error is kept for the next poll
  }
  return {};
}

Status Receiver::send_due() {
  if (adapt_due_) {
    adapt_due_ = false;
    adapt(now_ns());
  }
  if (!credit_due_) return {};
  credit_due_ = false;
  if (!error_.ok() || ended_ || pending_ == 0) return {};
  // A credit batch, as give_back() sends them; fewer only to a sender down
  // to half its window or less (the window is twice what one credit round
  // trip needs, so it never waits). Else, at a low rate, every frame or two
  // would cost a credit message. A peer gone meanwhile: the frames handed
  // on still go on (their slots come back), and this is the link's error
  // from now on.
  Status st = send_pending(false, sender_credits() * 2 <= window_ ? 1 : batch_);
  if (!st)
    return fail(shut_down_.load(std::memory_order_acquire) ? name_ + ": receive shut down"
                                                          : st.message());
  return {};
}

void Receiver::adapt(int64_t now) {
  if (probe_frame_ != UINT64_MAX && received_ > probe_frame_) {
    period_rtt_ns_ = std::min(period_rtt_ns_, now - probe_ns_);
    probe_frame_ = UINT64_MAX;
  }
  if (period_ns_ == 0) {
    period_ns_ = now;
    period_received_ = received_;
    return;
  }
  const int64_t dt = now - period_ns_;
  if (dt < kAdaptPeriodNs) return;
  const double frames = static_cast<double>(received_ - period_received_);
  window_frames_ += frames * window_;  // the window this period ran with
  frames_sized_ += frames;
  if (frames_sized_ > 0) window_mean_.set(static_cast<uint64_t>(window_frames_ / frames_sized_ + 0.5));
  if (period_rtt_ns_ != INT64_MAX) {
    rtt_us_.set(static_cast<uint64_t>(period_rtt_ns_ / 1000));
    // Frames per ns the link carried, times the round trip, twice over: what
    // keeps the receiver fed while the next credits travel.
    const double want = 2.0 * frames * static_cast<double>(period_rtt_ns_) / static_cast<double>(dt);
    const uint64_t w = static_cast<uint64_t>(want) + 1;
    window_ = static_cast<uint32_t>(std::clamp<uint64_t>(w, batch_, slots_));
  }
  window_now_.set(window_);
  period_ns_ = now;
  period_received_ = received_;
  period_rtt_ns_ = INT64_MAX;
}

namespace {
// A claim's states (Receiver::claim_).
constexpr uint8_t kClaimed = 1, kAckedDownstream = 2;
}  // namespace

void Receiver::use_claims() {
  claims_ = true;
  claim_ = std::make_unique<std::atomic<uint8_t>[]>(back_.size());
  for (size_t i = 0; i < back_.size(); ++i) claim_[i].store(0, std::memory_order_relaxed);
}

// The slot was handed out and is not back: frame_of_ holds its frame, and
// the release that gives it back publishes the claim to the owner.
uint64_t Receiver::claim(uint32_t slot) {
  const uint64_t f = frame_of_[slot - first_slot_];
  claim_[f & (back_.size() - 1)].store(kClaimed, std::memory_order_relaxed);
  return f;
}

// The prefix cannot pass a claimed frame before this, so its entry is still
// the frame's: the frame a ring's length later needs credit beyond it.
void Receiver::ack_claimed(uint64_t frame) {
  claim_[frame & (back_.size() - 1)].fetch_or(kAckedDownstream, std::memory_order_release);
}

void Receiver::advance() {
  const uint64_t mask = back_.size() - 1;
  while (acked_ < received_ && back_[acked_ & mask]) {
    if (claims_) {
      std::atomic<uint8_t>& c = claim_[acked_ & mask];
      if (c.load(std::memory_order_acquire) == kClaimed) break;  // not yet safe downstream
      c.store(0, std::memory_order_relaxed);
    }
    back_[acked_++ & mask] = 0;
  }
}

bool Receiver::may_finish() const {
  return !finished_ && end_back_ && returned_ == received_ && (!claims_ || acked_ == received_);
}

Status Receiver::collect_acks() {
  if (!claims_ || finished_ || !error_.ok()) return {};
  const uint64_t before = acked_;
  advance();
  if (acked_ == before || shut_down_.load(std::memory_order_acquire)) return {};
  // Short of the end, what is owed goes before the owner sleeps (ack_due_ms)
  // or with the next credit batch.
  if (!may_finish()) return {};
  if (Status e = check_after_end(); !e) return e;
  Status st = send_pending(true);
  carrier_->finish();
  finished_ = true;
  if (!st) return fail(st);
  return {};
}

Status Receiver::check_after_end() {
  std::string what = after_end_.empty() ? carrier_->after_end() : after_end_;
  if (what.empty()) return {};
  return fail(Status::Protocol(fmt::format(
      "{}: {} came after END, as frame {}: nothing may follow END", name_, what, received_)));
}

Status Receiver::give_back(uint32_t slot) {
  if (!owns(slot))
    return Status::Error(fmt::format("{}: slot {} given back is not one of this link's", name_, slot));
  ++returned_;
  held_.set(received_ - returned_);
  // The acknowledgement: the prefix of frames whose slots all came back
  // (and, claimed, were acknowledged downstream).
  back_[frame_of_[slot - first_slot_] & (back_.size() - 1)] = 1;
  advance();
  if (slot == end_slot_) end_back_ = true;
  // The link finishes once END's slot came back; with acks, once every
  // slot did, so the last credit message acknowledges every frame and the
  // sender can drop its copies before it closes (with claims, once every
  // frame was acknowledged downstream too: collect_acks()).
  const bool end = opts_.acks ? may_finish() : !finished_ && slot == end_slot_;
  // The link is gone, or shut down from another thread: the slot just
  // stays here, and nothing more goes to a peer that may be gone too.
  if (!error_.ok() || shut_down_.load(std::memory_order_acquire)) return {};
  // Before the last credits: a sender that sent anything after END gets
  // none, and the link's error names it.
  if (end)
    if (Status e = check_after_end(); !e) return e;
  Status st = carrier_->post(slot);
  if (st) {
    ++pending_;
    if (pending_ >= batch_ || end) st = send_pending(end, opts_.adaptive_credits ? batch_ : 1);
  }
  // After END the sender reads credits only to see the receiver finish.
  if (end) {
    carrier_->finish();
    finished_ = true;
  }
  if (!st && !ended_) {
    // Shut down from another thread: that, not the write it broke, is the news.
    if (shut_down_.load(std::memory_order_acquire)) return fail(name_ + ": receive shut down");
    return fail(st);
  }
  return {};
}

// Credits go out at most window() frames ahead of the acknowledged prefix, so
// a sender's replay log never needs more (the rest wait for the prefix to
// move). After END everything owed goes: nothing new can follow it.
Status Receiver::send_pending(bool all, uint32_t least, bool ack) {
  const uint64_t limit = acked_ + window(slots_);
  const uint64_t ack_room = limit > granted_.get() ? limit - granted_.get() : 0;
  uint64_t room = ack_room;
  if (opts_.adaptive_credits) {
    const uint64_t out = granted_.get() - received_;  // credits unspent, frames on their way
    room = std::min<uint64_t>(room, window_ > out ? window_ - out : 0);
  }
  uint32_t n = all ? pending_ : static_cast<uint32_t>(std::min<uint64_t>(pending_, room));
  // With claims a slot comes back before its frame is acknowledged: one
  // credit stays here while any frame is not, for the acknowledgement
  // that completes them to ride on.
  const bool keep_one = claims_ && !all && acked_ < received_;
  if (keep_one && n >= pending_) n = pending_ > 0 ? pending_ - 1 : 0;
  // An acknowledgement the sender has not heard goes now, even past the
  // credit window: acks ride on credit messages, and a sender whose stream
  // stalled (its upstream died) waits for them to free what it holds. One
  // credit carries it (every credit message grants at least one).
  if (n == 0 && ack && opts_.acks && acked_ > acked_sent_ && pending_ > (keep_one ? 1u : 0u) &&
      ack_room > 0)
    n = 1;
  if (n == 0 || (!all && n < least)) return {};
  if (opts_.adaptive_credits && probe_frame_ == UINT64_MAX && granted_.get() == received_) {
    // The sender holds no credit and has nothing on its way: the next frame
    // spends one of these as soon as they reach it (if it has any to send).
    probe_frame_ = granted_.get();
    probe_ns_ = now_ns();
  }
  Status st = carrier_->send_credits(n, acked_);
  credit_msgs_.add(1);
  granted_.add(n);
  pending_ -= n;
  acked_sent_ = acked_;
  ack_owed_ns_ = 0;
  return st;
}

int Receiver::ack_due_ms() {
  if (!opts_.acks || !error_.ok() || finished_ || acked_ == acked_sent_ || pending_ == 0) return -1;
  // A sender short of credits is sending as fast as the window lets it:
  // its slots are what it is short of, and the acknowledgement frees them.
  if (opts_.ack_delay_ms == 0 || sender_credits() < batch_) return 0;
  const int64_t now = now_ns();
  if (ack_owed_ns_ == 0) ack_owed_ns_ = now;
  const int64_t left = ack_owed_ns_ + int64_t{opts_.ack_delay_ms} * 1000000 - now;
  return left <= 0 ? 0 : static_cast<int>((left + 999999) / 1000000);
}

Status Receiver::flush_credits() {
  if (!error_.ok() || finished_ || pending_ == 0) return {};
  Status st = send_pending(false, 1, true);
  if (!st) {
    if (shut_down_.load(std::memory_order_acquire)) return fail(name_ + ": receive shut down");
    return fail(st);
  }
  return {};
}

void Receiver::shutdown() {
  shut_down_.store(true, std::memory_order_release);
  carrier_->shutdown();
}

LinkStats Receiver::stats() const {
  LinkStats s = carrier_->stats();
  s.granted = granted_.get();
  s.max_held = max_held_.get();
  const uint64_t held = held_.get();
  s.slots_free = held < slots_ ? slots_ - held : 0;
  s.window = window_now_.get();
  s.window_mean = opts_.adaptive_credits ? window_mean_.get() : slots_;
  s.rtt_us = rtt_us_.get();
  s.credit_msgs = credit_msgs_.get();
  return s;
}

// ---------------------------------------------------------------- Sender

Sender::Sender(const LinkOptions& opts, std::unique_ptr<TxCarrier> carrier, SlotPool& pool,
               uint32_t credits, uint32_t peer_slot_bytes, std::string name)
    : opts_(opts),
      carrier_(std::move(carrier)),
      pool_(pool),
      initial_credits_(credits),
      peer_slot_bytes_(peer_slot_bytes),
      // Each piece is at least one 64-byte event header.
      max_pieces_(std::max<size_t>(1, std::min<size_t>(carrier_->max_pieces(),
                                                       peer_slot_bytes / kEventHeaderBytes + 1))),
      max_events_(std::max<uint32_t>(1, carrier_->max_events_per_frame())),
      name_(std::move(name)),
      gate_(std::make_unique<CreditGate>(*carrier_, credits, name_)),
      pieces_(max_pieces_),
      end_buf_(new std::byte[sizeof(EndOfStream)]) {
  carrier_takes_credits_ = carrier_->takes_credits(gate_.get());
  if (opts_.acks) {
    // The receiver grants credit at most a window ahead of what it
    // acknowledged; the log holds that many frames (and one being added),
    // and their pieces: kKeptPiecesPerFrame each on average (link.h).
    log_.resize(Receiver::window(credits) + 2);
    kept_pieces_.resize(log_.size() * kKeptPiecesPerFrame + 2 * max_pieces_);
    scratch_.resize(max_pieces_);
  }
}

Sender::~Sender() = default;

Status Sender::fail(Status st) {
  if (error_.ok()) error_ = std::move(st);
  carrier_->abort();
  return error_;
}

Status CreditGate::refill(bool block) {
  uint32_t got = 0;
  uint64_t acked = acked_.load(std::memory_order_relaxed);
  Status st = carrier_.credits(block, &got, &acked);
  if (!st) return st;
  acked_.store(acked, std::memory_order_release);
  if (uint64_t{credits_} + got > initial_)
    return Status::Protocol(fmt::format(
        "{}: receiver returned {} credits, {} more than the {} it granted", name_, got,
        uint64_t{credits_} + got - initial_, initial_));
  credits_ += got;
  available_.set(credits_);
  return {};
}

Status Sender::emit(FrameKind kind, const TxCarrier::Piece* p, size_t n, uint32_t payload,
                    uint32_t events, bool credit_taken) {
  const uint64_t claimed = claimed_held_;
  if (opts_.acks) {
    // The log keeps the descriptors' holders: the carrier releases nothing,
    // but the slots of events kept by header (Remaker) and of frames
    // claimed (AckLedger).
    bool dropped = false;
    Status st = keep(kind, p, n, payload, events, &dropped);
    if (!st) return st;
    if (dropped) return {};
    p = scratch_.data();
  }
  Status st;
  if (!carrier_takes_credits_ && !credit_taken) {
    uint32_t got = 0;
    st = gate_->take(1, &got, [&] { return carrier_->flush(); });
  }
  if (st) st = carrier_->frame(kind, p, n, payload, events);
  // With acks the frame is in the log: a recovery sends it again. A claimed
  // one is its upstreams' to send again: its slots, where the carrier did
  // not take them, go back.
  if (!st) {
    if (claimed_held_ > claimed) drop_frame(p, n);
    return recover(st);
  }
  return {};
}

Status Sender::progress() {
  if (!error_.ok()) return error_;
  Status st = carrier_->progress();
  // The carriers that take credits themselves do it on this thread (acks
  // refuse the one that does not: tcp's async_send).
  if (st && opts_.acks && !ended_) st = gate_->poll_messages();
  if (!st) st = recover(st);
  if (st && opts_.acks) st = drop_acked();
  if (!st) return fail(st);
  return {};
}

Status Sender::close_frame() {
  if (np_ == 0) return {};
  Status st = emit(FrameKind::kEvents, pieces_.data(), np_, payload_, events_);
  np_ = 0;
  payload_ = events_ = 0;
  return st;
}

Status Sender::add_piece(const std::byte* p, uint32_t len, uint32_t events, uint32_t release) {
  if (np_ == max_pieces_ || payload_ + uint64_t{len} > peer_slot_bytes_ ||
      events_ + uint64_t{events} > max_events_) {
    Status st = close_frame();
    if (!st) return st;
    // That frame's send may have found the link broken and made the
    // upstreams send everything again (AckLedger): this piece too.
    if (ledger_ && release != kNoSlot && ledger_->stale(release)) return pool_.release(release);
  }
  pieces_[np_++] = TxCarrier::Piece{p, len, release};
  payload_ += len;
  events_ += events;
  return {};
}

Status Sender::send(std::span<const Descriptor> descs) {
  if (!error_.ok()) return error_;
  if (closed_ || ended_)
    return Status::Error(fmt::format("{}: send after the end of stream", name_));
  if (!carrier_takes_credits_) gate_->new_batch();  // else the carrier's thread owns the gate
  for (const Descriptor& d : descs) {
    if (d.flags & kDescEnd)
      return fail(Status::Error(fmt::format("{}: END passed to send(); end() sends it", name_)));
    // Handed out before its upstreams were made to send again (AckLedger):
    // they send it again, and nothing older may follow what they send.
    if (ledger_ && d.slot < pool_.slots() && ledger_->stale(d.slot)) {
      if (Status st = pool_.release(d.slot); !st) return fail(st);
      continue;
    }
    const bool in_place = d.flags & kDescInPlace;
    if (d.bytes == 0 ||
        (!in_place && (d.slot >= pool_.slots() || uint64_t{d.offset} + d.bytes > pool_.slot_bytes())))
      return fail(Status::Error(fmt::format(
          "{}: descriptor (slot {}, offset {}, {} bytes) outside the pool", name_, d.slot,
          d.offset, d.bytes)));
    Status st;
    if (in_place) {
      // A frame of its own, in its room (whose credit room() took): the
      // carrier sends its note alone.
      if (!room_ || d.bytes > room_cap_ || d.events > max_events_)
        return fail(Status::Error(fmt::format(
            "{}: an event run of {} bytes, {} events, said to be written in place, where {}",
            name_, d.bytes, d.events,
            room_ ? fmt::format("its room holds {} bytes", room_cap_) : "no room was set aside")));
      st = close_frame();  // what was planned before it
      const TxCarrier::Piece p{room_, d.bytes, kNoSlot};
      room_ = nullptr;
      if (st) st = emit(FrameKind::kEvents, &p, 1, d.bytes, d.events, true);
      if (!st) return fail(st);
      continue;
    }
    const std::byte* base = pool_.slot(d.slot) + d.offset;
    if (d.bytes <= peer_slot_bytes_ && d.events <= max_events_) {
      st = add_piece(base, d.bytes, d.events, d.slot);
      if (!st) return fail(st);
      continue;
    }
    // Larger than a receiver slot, or more events than a frame may hold:
    // split at event boundaries.
    st = close_frame();
    uint32_t off = 0, start = 0, evs = 0;
    while (st && off < d.bytes) {
      std::string err = check_event_header(base + off, d.bytes - off, 0);
      if (!err.empty()) {
        st = Status::Error(fmt::format("{}: cannot split descriptor at byte {}: {}", name_, off, err));
        break;
      }
      EventHeader h;
      std::memcpy(&h, base + off, sizeof h);
      const size_t len = h.wire_bytes();
      if (len > peer_slot_bytes_) {
        st = Status::Error(fmt::format("{}: event of {} bytes larger than the receiver's {}-byte slot",
                                       name_, len, peer_slot_bytes_));
        break;
      }
      if (off - start + len > peer_slot_bytes_ || evs == max_events_) {
        st = add_piece(base + start, off - start, evs, kNoSlot);
        if (st) st = close_frame();
        start = off;
        evs = 0;
      }
      off += len;
      ++evs;
    }
    if (st) st = add_piece(base + start, off - start, evs, d.slot);
    if (!st) return fail(st);
  }
  Status st = close_frame();
  if (st) st = flush();
  // Credit messages that arrived meanwhile are read now, while the link is
  // idle, and with acks the slots they acknowledge go back at once: the
  // next frame does not wait behind that read, and the sender does not run
  // dry of credits it has been granted. A link found broken here is
  // recovered as a flush's would be.
  if (st && !carrier_takes_credits_) {
    st = gate_->top_up();
    if (!st) st = recover(st);
    if (st && opts_.acks) st = drop_acked();
  }
  if (!st) return fail(st);
  return {};
}

std::byte* Sender::room(uint32_t* capacity) {
  if (room_) {
    *capacity = room_cap_;
    return room_;
  }
  if (!opts_.msg.in_place || opts_.acks || carrier_takes_credits_ || !error_.ok() || ended_ ||
      closed_)
    return nullptr;
  bool got = false;
  if (Status st = gate_->try_take(&got); !st) {
    (void)fail(st);
    return nullptr;
  }
  if (!got) return nullptr;
  uint32_t cap = 0;
  room_ = carrier_->room(&cap);
  if (!room_) {
    gate_->put_back();
    return nullptr;
  }
  room_cap_ = *capacity = std::min(cap, peer_slot_bytes_);
  return room_;
}

Status Sender::flush() {
  Status st = carrier_->flush();
  if (!st) st = recover(st);
  if (st && opts_.acks) st = drop_acked();
  return st;
}

Status Sender::end(const std::byte* eos, uint32_t bytes) {
  if (!error_.ok()) return error_;
  if (ended_) return Status::Error(fmt::format("{}: a second end of stream", name_));
  if (bytes > kMaxEndBytes || bytes > peer_slot_bytes_)
    return fail(Status::Error(fmt::format(
        "{}: end-of-stream of {} bytes larger than the receiver's {}-byte slot", name_, bytes,
        peer_slot_bytes_)));
  std::memcpy(end_buf_.get(), eos, bytes);
  ended_ = true;
  if (room_) {  // set aside and never written: its slot and credit are END's
    carrier_->unroom();
    gate_->put_back();
    room_ = nullptr;
  }
  if (!carrier_takes_credits_) gate_->new_batch();
  TxCarrier::Piece p{end_buf_.get(), bytes, kNoSlot};
  Status st = close_frame();
  if (st) st = emit(FrameKind::kEnd, &p, 1, bytes, 0);
  if (st) st = flush();
  if (!st) return fail(st);
  return {};
}

Status Sender::close() {
  if (closed_) return error_;
  closed_ = true;
  if (!error_.ok()) return error_;
  if (!ended_) return fail(Status::Error(fmt::format("{}: closed before the end of stream", name_)));
  Status st = opts_.acks ? wait_acked() : Status();
  if (st) st = carrier_->close(opts_.connect_timeout_ms);
  // The receiver went away before it finished: connect again, replay, and
  // wait for the new one to finish.
  while (!st && opts_.acks && connect_) {
    st = recover(st);
    if (st) st = wait_acked();
    if (st) st = carrier_->close(opts_.connect_timeout_ms);
    else break;
  }
  if (st && opts_.acks) st = drop_acked();
  if (!st) error_ = st;
  return error_;
}

void Sender::abort() {
  closed_without_end_ = true;
  carrier_->abort();
}

void Sender::interrupt() {
  std::lock_guard lk(swap_mu_);  // against a recovery's new carrier
  interrupted_.store(true, std::memory_order_release);
  carrier_->interrupt();
}

LinkStats Sender::stats() const {
  std::lock_guard lk(swap_mu_);
  LinkStats s = carrier_->stats();
  s.frames += retired_.frames;
  s.bytes += retired_.bytes;
  s.syscalls += retired_.syscalls;
  s.credit_waits = retired_.credit_waits + gate_->waits();
  s.credit_wait_ns = retired_.credit_wait_ns + gate_->wait_ns();
  s.credits = gate_->available();
  return s;
}

}  // namespace sluice

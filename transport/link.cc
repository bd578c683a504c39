#include "transport/link.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace sluice {

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
}

Receiver::~Receiver() = default;

Status Receiver::fail(std::string msg) {
  if (error_.ok()) error_ = Status::Error(std::move(msg));
  carrier_->shutdown();
  return error_;
}

Status Receiver::poll(std::span<Descriptor> out, size_t* n) {
  *n = 0;
  if (!error_.ok()) return error_;
  if (ended_ || out.empty()) return {};
  if (shut_down_.load(std::memory_order_acquire)) return fail(name_ + ": receive shut down");
  Arrival arr[64];
  size_t got = 0;
  Status st = carrier_->poll(std::span<Arrival>(arr, std::min<size_t>(out.size(), 64)), &got);
  if (!st) {
    if (shut_down_.load(std::memory_order_acquire)) return fail(name_ + ": receive shut down");
    return fail(st.message());
  }
  size_t k = 0;
  for (size_t i = 0; i < got; ++i) {
    const Arrival& a = arr[i];
    ++received_;
    if (received_ > granted_.get())
      return fail(fmt::format("{}: frame {} sent without credit: the receiver granted {}", name_,
                              received_ - 1, granted_.get()));
    if (!owns(a.slot))
      return fail(fmt::format("{}: carrier landed a frame in slot {}, not one of this link's",
                              name_, a.slot));
    if (received_ - returned_ > max_held_.get()) max_held_.set(received_ - returned_);
    held_.set(received_ - returned_);
    const std::byte* p = pool_.slot(a.slot);
    uint64_t tuples = 0;
    std::string err;
    if (a.kind == FrameKind::kEvents) {
      if (a.bytes > opts_.slot_bytes)
        err = fmt::format("payload of {} bytes beyond the {}-byte slot", a.bytes, opts_.slot_bytes);
      else
        err = check_event_run(p, a.bytes, a.events, opts_.tuple_bytes, &tuples);
    } else if (a.kind == FrameKind::kEnd) {
      err = check_end_of_stream(p, a.bytes);
    } else {
      err = fmt::format("frame kind {} handed up by the carrier", static_cast<unsigned>(a.kind));
    }
    if (!err.empty())
      return fail(fmt::format("{}: frame {}: {}", name_, received_ - 1, err));
    const bool end = a.kind == FrameKind::kEnd;
    out[k++] = Descriptor{a.slot, 0, a.bytes, end ? 0u : a.events, static_cast<uint32_t>(tuples),
                          end ? kDescEnd : 0u};
    if (end) {
      ended_ = true;
      end_slot_ = a.slot;
      break;  // nothing may follow END
    }
  }
  *n = k;
  return {};
}

Status Receiver::give_back(uint32_t slot) {
  if (!owns(slot))
    return Status::Error(fmt::format("{}: slot {} given back is not one of this link's", name_, slot));
  ++returned_;
  held_.set(received_ - returned_);
  const bool end = slot == end_slot_;
  if (!error_.ok()) return {};  // the link is gone; the slot just stays here
  Status st = carrier_->post(slot);
  if (st) {
    if (++pending_ >= batch_ || end) {
      st = carrier_->send_credits(pending_);
      granted_.add(pending_);
      pending_ = 0;
    }
  }
  // After END the sender reads credits only to see the receiver finish.
  if (end) {
    carrier_->finish();
    finished_ = true;
  }
  if (!st && !ended_) {
    // Shut down from another thread: that, not the write it broke, is the news.
    if (shut_down_.load(std::memory_order_acquire)) return fail(name_ + ": receive shut down");
    return fail(st.message());
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
      gate_(*carrier_, credits, name_),
      pieces_(max_pieces_),
      end_buf_(new std::byte[sizeof(EndOfStream)]) {
  carrier_takes_credits_ = carrier_->takes_credits(&gate_);
}

Sender::~Sender() = default;

Status Sender::fail(Status st) {
  if (error_.ok()) error_ = std::move(st);
  carrier_->abort();
  return error_;
}

Status CreditGate::refill(bool block) {
  uint32_t got = 0;
  Status st = carrier_.credits(block, &got);
  if (!st) return st;
  if (uint64_t{credits_} + got > initial_)
    return Status::Error(fmt::format(
        "{}: receiver returned {} credits, {} more than the {} it granted", name_, got,
        uint64_t{credits_} + got - initial_, initial_));
  credits_ += got;
  available_.set(credits_);
  return {};
}

Status Sender::emit(FrameKind kind, const TxCarrier::Piece* p, size_t n, uint32_t payload,
                    uint32_t events) {
  if (!carrier_takes_credits_) {
    uint32_t got = 0;
    Status st = gate_.take(1, &got, [&] { return carrier_->flush(); });
    if (!st) return st;
  }
  return carrier_->frame(kind, p, n, payload, events);
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
  if (!carrier_takes_credits_) gate_.new_batch();  // else the carrier's thread owns the gate
  for (const Descriptor& d : descs) {
    if (d.flags & kDescEnd)
      return fail(Status::Error(fmt::format("{}: END passed to send(); end() sends it", name_)));
    if (d.slot >= pool_.slots() || uint64_t{d.offset} + d.bytes > pool_.slot_bytes() ||
        d.bytes == 0)
      return fail(Status::Error(fmt::format(
          "{}: descriptor (slot {}, offset {}, {} bytes) outside the pool", name_, d.slot,
          d.offset, d.bytes)));
    const std::byte* base = pool_.slot(d.slot) + d.offset;
    Status st;
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
  if (st) st = carrier_->flush();
  if (!st) return fail(st);
  return {};
}

Status Sender::end(const std::byte* eos, uint32_t bytes) {
  if (!error_.ok()) return error_;
  if (ended_) return Status::Error(fmt::format("{}: a second end of stream", name_));
  if (bytes > sizeof(EndOfStream) || bytes > peer_slot_bytes_)
    return fail(Status::Error(fmt::format(
        "{}: end-of-stream of {} bytes larger than the receiver's {}-byte slot", name_, bytes,
        peer_slot_bytes_)));
  std::memcpy(end_buf_.get(), eos, bytes);
  ended_ = true;
  if (!carrier_takes_credits_) gate_.new_batch();
  TxCarrier::Piece p{end_buf_.get(), bytes, kNoSlot};
  Status st = close_frame();
  if (st) st = emit(FrameKind::kEnd, &p, 1, bytes, 0);
  if (st) st = carrier_->flush();
  if (!st) return fail(st);
  return {};
}

Status Sender::close() {
  if (closed_) return error_;
  closed_ = true;
  if (!error_.ok()) return error_;
  if (!ended_) return fail(Status::Error(fmt::format("{}: closed before the end of stream", name_)));
  Status st = carrier_->close(opts_.connect_timeout_ms);
  if (!st) error_ = st;
  return error_;
}

void Sender::abort() { carrier_->abort(); }

LinkStats Sender::stats() const {
  LinkStats s = carrier_->stats();
  s.credit_waits = gate_.waits();
  s.credit_wait_ns = gate_.wait_ns();
  s.credits = gate_.available();
  return s;
}

}  // namespace sluice

// The Sender's upstream backup (acks: on): the log of frames sent and not
// yet acknowledged, what frees them (drop_acked), a node's claims on its
// upstreams' copies (AckLedger), and recovery: connect again and send every
// frame of the log (transport/PROTOCOL.md, section 5). The rest of the
// Sender, what every link runs, is in link.cc.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "transport/link.h"

namespace sluice {
namespace {
// A kept piece that is a claim (Sender::claims_), not a slot.
constexpr uint32_t kClaimedPiece = kNoSlot - 1;
}  // namespace

void Sender::set_ledger(AckLedger* l) {
  if (!opts_.acks || !l) return;
  ledger_ = l;
  claims_.resize(kept_pieces_.size());
}

void Sender::set_remaker(Remaker* r) {
  if (!opts_.acks || !r || r->room() == 0) return;  // nothing kept: nothing to make again
  remaker_ = r;
  kept_headers_.resize(kept_pieces_.size());
}

// A piece a Remaker can make again: one whole event from the first byte of
// a slot of the pool (not a reserve one), which the carrier then releases.
bool Sender::remakable(const TxCarrier::Piece& q) const {
  if (q.release == kNoSlot || q.release >= pool_.reserve_first() || q.p != pool_.slot(q.release) ||
      q.len < sizeof(EventHeader))
    return false;
  EventHeader h;
  std::memcpy(&h, q.p, sizeof h);
  return h.wire_bytes() == q.len;
}

// Releases the slots of frames the receiver acknowledged. A descriptor's
// holder sits with the last piece of it (earlier pieces of a split one name
// no slot), and acknowledgements are a prefix, so releasing in log order is
// releasing each slot once its last frame is safe downstream.
Status Sender::drop_acked() {
  const uint64_t acked = gate_->acked();
  // Every frame is logged before it is sent: an ack beyond the log is a
  // receiver that is wrong (or not ours), and believing it would drop
  // frames nobody has.
  if (acked > log_tail_ - conn_base_)
    return Status::Protocol(fmt::format(
        "{}: the receiver acknowledged {} frames of this connection; at most {} were sent", name_, acked,
        log_tail_ - conn_base_));
  bool claims_acked = false;
  while (log_head_ < log_tail_ && log_head_ - conn_base_ < acked) {
    const Kept& k = log_[log_head_ % log_.size()];
    for (uint64_t j = k.first_piece; j < k.first_piece + k.pieces; ++j) {
      // Kept by header (Remaker): the carrier released its slot when sent.
      const uint32_t slot = kept_pieces_[j % kept_pieces_.size()].release;
      if (slot == kNoSlot) continue;
      if (slot == kClaimedPiece) {  // its upstream hears it now
        ledger_->ack(claims_[j % claims_.size()]);
        --claimed_held_;
        claims_acked = true;
        continue;
      }
      Status st = pool_.release(slot);
      if (!st) return Status::Error(fmt::format("{}: {}", name_, st.message()));
    }
    piece_head_ = k.first_piece + k.pieces;
    if (k.kind == FrameKind::kEvents) acked_events_.add(k.events);
    ++log_head_;
  }
  if (claims_acked) ledger_->acked();
  held_frames_.set(log_tail_ - log_head_);
  done_frames_.set(log_head_);
  return {};
}

void Sender::forget_log() {
  for (uint64_t j = piece_head_; j < piece_tail_; ++j) {
    const uint32_t slot = kept_pieces_[j % kept_pieces_.size()].release;
    if (slot != kNoSlot && slot != kClaimedPiece) (void)pool_.release(slot);
  }
  log_head_ = log_tail_;
  piece_head_ = piece_tail_;
  claimed_held_ = 0;
  held_frames_.set(0);
  done_frames_.set(log_head_);
  ++forgets_;
}

void Sender::drop_frame(const TxCarrier::Piece* p, size_t n) {
  std::vector<uint32_t> held;  // only on this rare path
  carrier_->unreleased(&held);
  for (size_t i = 0; i < n; ++i)
    if (p[i].release != kNoSlot && std::find(held.begin(), held.end(), p[i].release) == held.end())
      (void)pool_.release(p[i].release);
}

Status Sender::settle_claims() {
  if (!ledger_) return {};
  Status st = carrier_->flush();
  if (!st) st = recover(st);
  if (st) st = drop_acked();
  while (st && claimed_held_ > 0) {
    st = gate_->wait_message();
    if (!st) st = recover(st);
    if (st) st = drop_acked();
  }
  return st;
}

// Adds a frame to the log, waiting for acknowledgements while it is full,
// of frames or of their pieces (backpressure: the receiver's window and
// kKeptPiecesPerFrame keep that rare). What the carrier
// is to send goes into scratch_: the pieces with no slot to release, but
// those kept by header (at most room() of a frame: a replay holds that
// many reserve slots at once).
Status Sender::keep(FrameKind kind, const TxCarrier::Piece* p, size_t n, uint32_t payload,
                    uint32_t events, bool* dropped) {
  *dropped = false;
  const uint64_t forgets = forgets_;
  Status st = drop_acked();
  while (st && (log_tail_ - log_head_ == log_.size() ||
                piece_tail_ - piece_head_ + n > kept_pieces_.size())) {
    // A carrier that takes credits itself does so on this thread (a
    // carrier with a thread of its own for that refuses acks: tcp's
    // async_send), so reading credit messages here is safe.
    st = carrier_->flush();
    if (st) st = gate_->wait_message();
    if (!st) st = recover(st);
    if (st) st = drop_acked();
  }
  if (!st) return st;
  // A node that keeps no copies: a frame planned before the log was
  // forgotten (a break while this waited) is its upstreams' to send again.
  bool stale = forgets_ != forgets;
  for (size_t i = 0; ledger_ && !stale && i < n; ++i)
    stale = p[i].release != kNoSlot && ledger_->stale(p[i].release);
  if (stale) {
    drop_frame(p, n);
    *dropped = true;
    return {};
  }
  log_[log_tail_ % log_.size()] = Kept{kind, piece_tail_, static_cast<uint32_t>(n), payload, events};
  uint32_t by_header = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t at = piece_tail_++ % kept_pieces_.size();
    AckLedger::Take took = AckLedger::Take::kNotMine;
    if (ledger_ && p[i].release != kNoSlot) took = ledger_->claim(p[i].release, &claims_[at]);
    if (took == AckLedger::Take::kClaimed) {
      // Its upstream keeps it until the next hop acknowledges it; the
      // carrier releases the slot once sent, as without acks.
      kept_pieces_[at] = TxCarrier::Piece{nullptr, p[i].len, kClaimedPiece};
      scratch_[i] = p[i];
      ++claimed_held_;
    } else if (remaker_ && by_header < remaker_->room() && remakable(p[i])) {
      // Its header, read now while the slot is still this sender's.
      std::memcpy(&kept_headers_[at], p[i].p, sizeof(EventHeader));
      kept_pieces_[at] = TxCarrier::Piece{nullptr, p[i].len, kNoSlot};
      scratch_[i] = p[i];
      ++by_header;
    } else {
      kept_pieces_[at] = p[i];
      scratch_[i] = TxCarrier::Piece{p[i].p, p[i].len, kNoSlot};
    }
  }
  ++log_tail_;
  held_frames_.set(log_tail_ - log_head_);
  logged_frames_.set(log_tail_);
  if (log_tail_ - log_head_ > max_held_frames_.get()) max_held_frames_.set(log_tail_ - log_head_);
  return {};
}

// A broken link, with acks: connect again with back-off until
// reconnect_timeout_ms, then replay every frame not acknowledged. Without
// acks (or a connect function) the error stands.
Status Sender::recover(Status why) {
  // A protocol error is the receiver's bytes being wrong: a new connection
  // would bring the same (PROTOCOL.md, E3).
  if (!opts_.acks || !connect_ || closed_without_end_ || why.protocol_error() ||
      interrupted_.load(std::memory_order_acquire))
    return why;
  carrier_->abort();
  // Carrier errors name the link already.
  const std::string who = why.message().rfind(name_, 0) == 0 ? "" : name_ + ": ";
  // A node that keeps no copies: its upstreams send again what it had not
  // acknowledged; they start now, while this connects.
  const bool upstream = ledger_ && claimed_held_ > 0;
  if (upstream) {
    ledger_->replay_upstream();
    spdlog::warn("{}{}; connecting again (up to {} ms); its upstreams send again the {} frames "
                 "not acknowledged (this node keeps no copies)",
                 who, why.message(), opts_.reconnect_timeout_ms, log_tail_ - log_head_);
  } else {
    spdlog::warn("{}{}; connecting again (up to {} ms) to replay {} unacknowledged frames", who,
                 why.message(), opts_.reconnect_timeout_ms, log_tail_ - log_head_);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(opts_.reconnect_timeout_ms);
  // Short and capped: the receiver is usually a process being restarted, and
  // each try at a port nobody listens on is answered at once (a host that
  // is gone instead makes connect_ wait out its timeout), so the link is
  // back within 50 ms of the new process listening.
  auto backoff = std::chrono::milliseconds(kReconnectBackoffMs);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if ((opts_.abort && opts_.abort->load(std::memory_order_relaxed)) ||
        interrupted_.load(std::memory_order_acquire))
      return Status::Error(fmt::format("{}{}; stopped while connecting again", who, why.message()));
    if (now >= deadline)
      return Status::Error(fmt::format("{}{}; not connected again within {} ms", who,
                                       why.message(), opts_.reconnect_timeout_ms));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    Connection c;
    Status st = connect_(static_cast<uint32_t>(std::min<int64_t>(left.count() + 1, 2000)), &c);
    if (st && c.peer_slot_bytes != peer_slot_bytes_)
      return Status::Error(fmt::format("{}: connected again, but the receiver's slot is {} bytes, "
                                       "not {} as before",
                                       name_, c.peer_slot_bytes, peer_slot_bytes_));
    if (st) {
      // The old gate refers to the old carrier: replace both together,
      // keeping their counts (stats() reads them from another thread).
      {
        std::lock_guard lk(swap_mu_);
        const LinkStats o = carrier_->stats();
        retired_.frames += o.frames;
        retired_.bytes += o.bytes;
        retired_.syscalls += o.syscalls;
        retired_.credit_waits += gate_->waits();
        retired_.credit_wait_ns += gate_->wait_ns();
        gate_ = std::make_unique<CreditGate>(*c.carrier, c.credits, name_);
        // Slots the broken carrier had not released (events kept by
        // header, and a replay's remade ones) go back once it is gone.
        std::vector<uint32_t> orphans;
        carrier_->unreleased(&orphans);
        carrier_ = std::move(c.carrier);
        if (interrupted_.load(std::memory_order_acquire)) carrier_->interrupt();
        for (uint32_t slot : orphans)
          if (Status rs = pool_.release(slot); !rs)
            return Status::Error(fmt::format("{}: {}", name_, rs.message()));
      }
      carrier_takes_credits_ = carrier_->takes_credits(gate_.get());
      if (upstream) forget_log();
      conn_base_ = log_head_;
      reconnects_.add(1);
      const uint64_t remade = remade_events_.get();
      st = replay();
      if (st) {
        spdlog::info("{}: connected again after {} ms; {}{}", name_,
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count(),
                     upstream ? std::string("its upstreams send again what it had not acknowledged")
                              : fmt::format("replayed {} frames", log_tail_ - log_head_),
                     remaker_ ? fmt::format(" ({} events made again from their headers)",
                                            remade_events_.get() - remade)
                              : std::string());
        return {};
      }
      carrier_->abort();
      why = st;
    }
    std::this_thread::sleep_for(std::min(backoff, left));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(kReconnectBackoffMaxMs));
  }
}

// Sends every kept frame again, in order, on the new connection: they are
// its frames 0, 1, ... and their acknowledgements count from there.
Status Sender::replay() {
  Status st;
  // A frame that failed before the carrier took it: the slots remade for
  // it (the first n of its pieces) go back, but those the carrier holds,
  // which the next recovery releases.
  auto drop_remade = [&](uint32_t n) {
    std::vector<uint32_t> held;
    carrier_->unreleased(&held);
    for (uint32_t m = 0; m < n; ++m) {
      const uint32_t slot = scratch_[m].release;
      if (slot != kNoSlot && std::find(held.begin(), held.end(), slot) == held.end())
        (void)pool_.release(slot);
    }
  };
  for (uint64_t i = log_head_; i < log_tail_ && st; ++i) {
    const Kept k = log_[i % log_.size()];
    uint32_t j = 0;
    for (; j < k.pieces && st; ++j) {
      const uint64_t at = (k.first_piece + j) % kept_pieces_.size();
      const TxCarrier::Piece& q = kept_pieces_[at];
      if (q.p) scratch_[j] = TxCarrier::Piece{q.p, q.len, kNoSlot};
      else st = remade_piece(at, &scratch_[j]);
    }
    if (!st) {
      drop_remade(j - 1);
      break;
    }
    if (!carrier_takes_credits_) {
      gate_->new_batch();
      uint32_t got = 0;
      st = gate_->take(1, &got, [&] { return carrier_->flush(); });
    }
    if (st) st = carrier_->frame(k.kind, scratch_.data(), k.pieces, k.payload, k.events);
    if (!st) {
      drop_remade(k.pieces);
      break;
    }
    replayed_frames_.add(1);
    replayed_events_.add(k.events);
  }
  if (st) st = carrier_->flush();
  return st;
}

// An event kept by header, made again in a reserve slot that the carrier
// releases once sent. Where every reserve slot is still being sent, the
// carrier is driven until one comes back (a frame keeps no more events by
// header than the reserve holds, so one always does).
Status Sender::remade_piece(uint64_t at, TxCarrier::Piece* out) {
  const EventHeader& h = kept_headers_[at];
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.connect_timeout_ms);
  uint32_t slot = kNoSlot;
  for (;;) {
    Status st = remaker_->remake(h, &slot);
    if (!st) return Status::Error(fmt::format("{}: replaying event {} of stream {}: {}", name_,
                                              h.event_seq, h.stream, st.message()));
    if (slot != kNoSlot) break;
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Error(fmt::format("{}: replaying: no reserve slot came back within {} ms",
                                       name_, opts_.connect_timeout_ms));
    st = carrier_->flush();
    if (st && carrier_->busy()) st = carrier_->progress();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (!st) return st;
  }
  const uint32_t len = kept_pieces_[at].len;
  if (h.wire_bytes() != len) {
    (void)pool_.release(slot);
    return Status::Error(fmt::format("{}: event {} of stream {} made again is {} bytes, not {}",
                                     name_, h.event_seq, h.stream, h.wire_bytes(), len));
  }
  remade_events_.add(1);
  *out = TxCarrier::Piece{pool_.slot(slot), len, slot};
  return {};
}

// After END: waits until the receiver acknowledged every frame (its last
// credit message does, once every slot came back), so nothing kept is
// dropped before it is safe downstream.
Status Sender::wait_acked() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.connect_timeout_ms);
  Status st = drop_acked();
  while (st && log_head_ < log_tail_) {
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Error(fmt::format("{}: {} frames not acknowledged within {} ms of the end",
                                       name_, log_tail_ - log_head_, opts_.connect_timeout_ms));
    st = gate_->wait_message();
    if (st) st = drop_acked();
  }
  return st;
}

ReplayStats Sender::replay_stats() const {
  ReplayStats r;
  r.reconnects = reconnects_.get();
  r.replayed_frames = replayed_frames_.get();
  r.replayed_events = replayed_events_.get();
  r.held_frames = held_frames_.get();
  r.max_held_frames = max_held_frames_.get();
  r.remade_events = remade_events_.get();
  r.acked_events = acked_events_.get();
  r.logged_frames = logged_frames_.get();
  r.done_frames = done_frames_.get();
  return r;
}

}  // namespace sluice

// The sending end of a message-carrier link (MsgTx): frames into the
// receiver's pre-posted slots (or, with rma, written into the slots its
// credits name), credits and acknowledgements back, the connect that
// replay reuses.
#include "transport/msg/end.h"

namespace sluice::msg {
using namespace detail;
namespace {

// ------------------------------------------------------------ sending end

class MsgTx final : public TxCarrier {
 public:
  // rma_stride: rma (msg.h item 6), the distance between two of the
  // receiver's slots in what it exposed; 0: no rma.
  MsgTx(std::unique_ptr<Endpoint> ep, Fd ctl, Page page, const LinkOptions& opts, SlotPool& pool,
        std::string link, uint32_t credits, uint32_t peer_slot_bytes, uint64_t rma_stride)
      : opts_(opts),
        pool_(pool),
        records_(std::max<size_t>(1, std::min<size_t>(credits, ep->tx_depth()))),
        peer_slot_bytes_(peer_slot_bytes),
        rma_stride_(rma_stride),
        peer_slots_(credits),
        names_(rma_stride ? credits : 0),
        named_(rma_stride ? credits : 0, 0),
        notes_(rma_stride ? records_ : 0),
        credit_bufs_(credits + 2, rma_stride ? credits : 0),
        staging_(new std::byte[records_ * size_t{peer_slot_bytes}]),
        end_(std::move(ep), std::move(ctl), std::move(page), 1, opts, std::move(link),
             credits + records_ + 8),
        rec_(records_) {
    for (size_t i = 0; i < records_; ++i) free_.push_back(static_cast<uint32_t>(records_ - 1 - i));
    for (auto& r : rec_) r.release.reserve(kMaxPieces);
  }

  // Posts the credit buffers; before the receiver says it is ready.
  Status start() {
    Status reg = end_.ep().add_region(credit_bufs_.data(), credit_bufs_.bytes());
    if (reg) reg = end_.ep().add_region(staging_.get(), records_ * size_t{peer_slot_bytes_});
    if (reg && rma_stride_) reg = end_.ep().add_region(notes_.data(), notes_.size() * sizeof(RmaNote));
    if (!reg) return Status::Error(fmt::format("{}: registering buffers: {}", end_.link(), reg.message()));
    // rma: the handshake's credits name the receiver's slots in order.
    for (uint32_t i = 0; i < names_.size(); ++i) name(i);
    for (size_t i = 0; i < credit_bufs_.size(); ++i) {
      Status st = end_.ep().post_recv(credit_bufs_.at(i), credit_bufs_.stride(), kCreditCtx | i);
      if (!st) return Status::Error(fmt::format("{}: posting a credit buffer: {}", end_.link(), st.message()));
    }
    return {};
  }

  // Waits for the receiver to say every slot is posted.
  Status wait_ready(uint32_t timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      End::Seen s;
      end_.read_control(&s);
      if (s.ready) return {};
      if (s.eof)
        return Status::Error(fmt::format("{}: the receiver closed the link before it was ready", end_.link()));
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0)
        return Status::Error(fmt::format("{}: the receiver was not ready within {} ms", end_.link(), timeout_ms));
      end_.wait_control(static_cast<int>(left.count()));
    }
  }

  size_t max_pieces() const override { return kMaxPieces; }

  Status frame(FrameKind kind, const Piece* pieces, size_t n, uint32_t payload_bytes,
               uint32_t events) override {
    if (!end_.error().ok()) return end_.error();
    while (free_.empty()) {
      Status st = reap(true);
      if (!st) return st;
    }
    const uint32_t r = free_.back();
    free_.pop_back();
    Record& rec = rec_[r];
    rec.release.clear();
    iovec iov[kMaxPieces];
    size_t k = 0;
    // In place (room()): the frame's one piece is the room set aside, its
    // payload there already; only the note goes.
    const bool in_place = room_slot_ != kNoSlot && n == 1 && kind == FrameKind::kEvents &&
                          pieces[0].p == end_.ep().mapped() + uint64_t{room_slot_} * rma_stride_;
    if (in_place) {
      // (k = 0: the note alone)
    } else if (rma_stride_ && kind == FrameKind::kEvents && n <= end_.ep().max_write_iov()) {
      for (size_t i = 0; i < n; ++i) iov[k++] = iovec{const_cast<std::byte*>(pieces[i].p), pieces[i].len};
    } else if (n <= end_.ep().max_iov() && kind == FrameKind::kEvents) {
      for (size_t i = 0; i < n; ++i) iov[k++] = iovec{const_cast<std::byte*>(pieces[i].p), pieces[i].len};
    } else {
      // More pieces than the endpoint gathers (or END, whose buffer is not
      // the pool's): one contiguous copy in this send's staging buffer.
      std::byte* s = staging_.get() + size_t{r} * peer_slot_bytes_;
      size_t off = 0;
      for (size_t i = 0; i < n; ++i) {
        std::memcpy(s + off, pieces[i].p, pieces[i].len);
        off += pieces[i].len;
      }
      iov[k++] = iovec{s, off};
    }
    for (size_t i = 0; i < n; ++i)
      if (pieces[i].release != kNoSlot) rec.release.push_back(pieces[i].release);
    rec.busy = true;
    const uint64_t imm = make_imm(Dir::kData, static_cast<uint16_t>(kind), events);
    uint32_t slot = 0;
    if (rma_stride_) {
      // The frame goes into the slot the receiver named first, with a note
      // that says so.
      if (in_place) {
        slot = room_slot_;
        room_slot_ = kNoSlot;
      } else {
        if (nhead_ == ntail_)
          return end_.fail(Status::Error(fmt::format("{}: a credit with no slot named for it", end_.link())));
        slot = names_[nhead_++ % names_.size()];
      }
      named_[slot] = 0;
      notes_[r] = RmaNote{slot, payload_bytes};
    }
    for (int tries = 0;;) {
      bool again = false;
      Status st = rma_stride_ ? end_.ep().write(iov, k, uint64_t{slot} * rma_stride_,
                                                iovec{&notes_[r], sizeof(RmaNote)}, imm, r, &again)
                              : end_.ep().send(iov, k, imm, r, &again);
      if (!st)
        return end_.fail(Status::Error(fmt::format("{}: {}: {}", end_.link(),
                                                   rma_stride_ ? fmt::format("writing into slot {}", slot)
                                                               : std::string("send"),
                                                   st.message())));
      if (!again) break;
      // Full (or, shm, the peer has not mapped us yet: only its progress
      // does that): wake the peer, drive our progress and retry, pausing
      // briefly once it lasts.
      end_.ring_peer();
      ++tries;
      st = reap(outstanding_ > 0 && tries > 64, 1);
      if (!st) return st;
      // A peer that died leaves the send "full" for ever: only the control
      // connection says why. reap reads it when it slept, which it does
      // only with sends outstanding; with none (libfabric shm completes a
      // small send at once, so a dead peer's queue fills with nothing
      // outstanding) look at the connection itself now and then.
      if (tries % 64 == 0 && !end_.eof() && end_.peer_hung_up()) end_.set_eof();
      if (end_.eof() && !finished_)
        return end_.fail(Status::Error(fmt::format(
            "{}: the receiver closed its control connection (the receiving process ended)",
            end_.link())));
      if (tries > 64 && outstanding_ == 0) usleep(50);
    }
    ++outstanding_;
    if (in_place) in_place_.add(1);
    stats_.frames.add(1);
    stats_.bytes.add(payload_bytes);
    end_.ring_peer();
    if (opts_.msg.sync_completion) {
      while (rec.busy) {
        Status st = reap(true);
        if (!st) return st;
      }
    }
    return {};
  }

  Status flush() override { return end_.error(); }

  Status credits(bool block, uint32_t* got, uint64_t* acked) override {
    *got = 0;
    Status st = reap(false);
    while (st && block && got_credits_ == 0) {
      if (finished_)
        return end_.fail(Status::Error(fmt::format(
            "{}: the receiver finished while the sender waited for credit", end_.link())));
      st = reap(true);
    }
    if (!st) return st;
    *got = got_credits_;
    got_credits_ = 0;
    if (acked_ > *acked) *acked = acked_;
    return {};
  }

  Status close(uint32_t timeout_ms) override {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    Status st = end_.error();
    while (st && !finished_) {
      if (Clock::now() > deadline)
        return end_.fail(Status::Error(fmt::format(
            "{}: the receiver did not finish within {} ms of the end of stream", end_.link(),
            timeout_ms)));
      st = reap(true, 100);
      if (st && end_.eof() && !finished_)
        return end_.fail(Status::Error(fmt::format(
            "{}: the receiver closed its control connection before it finished", end_.link())));
    }
    if (!st) return st;
    // Everything sent has completed before the endpoint goes.
    while (st && outstanding_ > 0 && Clock::now() < deadline) st = reap(true, 100);
    end_.shutdown();
    return st;
  }

  void abort() override { end_.shutdown(); }
  // The control connection, shut: a reap waiting for credits sees its end.
  void interrupt() override { end_.shutdown(); }
  int wait_fd() const override { return end_.wait_fd(); }
  bool busy() const override { return outstanding_ > 0; }
  void unreleased(std::vector<uint32_t>* out) const override {
    for (const Record& r : rec_)
      if (r.busy) out->insert(out->end(), r.release.begin(), r.release.end());
  }
  // Returns with nothing outstanding, or with the wait set armed: the
  // owner sleeps on wait_fd() next, and a send that completes meanwhile
  // must wake it (a doorbell endpoint's peer completes our sends only as
  // it makes progress, so idle() also sets the "look again soon" timer).
  Status progress() override {
    if (!end_.error().ok()) return end_.error();
    Status st = reap(false);
    // A receiver that died says so only on the control connection: an idle
    // sender with frames unacknowledged (acks) must see it too, also when
    // every send has completed and so nothing armed the wait set (its
    // level-triggered hang-up would otherwise wake the owner for ever).
    if (st && outstanding_ == 0 && !end_.eof() && end_.peer_hung_up()) end_.set_eof();
    if (st && end_.eof() && !finished_)
      return end_.fail(Status::Error(fmt::format(
          "{}: the receiver closed its control connection (the receiving process ended)",
          end_.link())));
    while (st && outstanding_ > 0) {
      Completion c[64];
      size_t got = 0;
      st = end_.idle(c, 64, &got, true);
      if (!st || got == 0) break;  // armed
      st = handle(c, got);
    }
    // Nothing outstanding, and the owner sleeps on wait_fd() all the same:
    // an endpoint with an fd of its own (UCX) is armed too, since what it
    // signalled before (a credit message, reaped since) keeps that fd
    // readable until it is, and the owner would not sleep (behind a stalled
    // receiver a node spun so on 45% of a core).
    if (st && outstanding_ == 0 && !end_.has_doorbell() && !end_.armed() && !end_.eof()) {
      Completion c[64];
      size_t got = 0;
      st = end_.idle(c, 64, &got, false);
      if (st && got) st = handle(c, got);
    }
    return st;
  }
  LinkStats stats() const override {
    LinkStats s = stats_.snapshot(end_.doorbells());
    s.in_place = in_place_.get();
    return s;
  }

  std::byte* room(uint32_t* capacity) override {
    std::byte* const mapped = rma_stride_ ? end_.ep().mapped() : nullptr;
    if (!mapped || !end_.error().ok()) return nullptr;
    if (room_slot_ == kNoSlot) {
      if (nhead_ == ntail_) return nullptr;
      room_slot_ = names_[nhead_++ % names_.size()];
    }
    *capacity = peer_slot_bytes_;
    return mapped + uint64_t{room_slot_} * rma_stride_;
  }

  // Back to the head of the named slots, the next frame's.
  void unroom() override {
    if (room_slot_ == kNoSlot) return;
    names_[--nhead_ % names_.size()] = room_slot_;
    room_slot_ = kNoSlot;
  }

 private:
  struct Record {
    std::vector<uint32_t> release;  // reserved at start: no allocation per frame
    bool busy = false;
  };

  // Reaps completions; with `block`, sleeps until at least one comes (or
  // the control connection says something), at most wait_ms at a time.
  Status reap(bool block, int wait_ms = 1000) {
    if (!end_.error().ok()) return end_.error();
    Completion c[64];
    for (;;) {
      End::Seen seen;
      end_.wake(&seen);
      if (seen.finish) finished_ = true;
      size_t got = 0;
      Status st = end_.reap(c, 64, &got);
      if (!st) return st;
      if (got) return handle(c, got);
      if (!block) return {};
      if (end_.eof() && !finished_)
        return end_.fail(Status::Error(fmt::format(
            "{}: the receiver closed its control connection (the receiving process ended)",
            end_.link())));
      if (finished_ && outstanding_ == 0) return {};
      st = end_.idle(c, 64, &got, outstanding_ > 0);
      if (!st) return st;
      if (got) return handle(c, got);
      end_.sleep(wait_ms);
      if (wait_ms < 1000) {
        end_.wake(&seen);
        if (seen.finish) finished_ = true;
        return {};
      }
    }
  }

  Status handle(const Completion* c, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const Completion& x = c[i];
      if (x.type == Completion::kSend) {
        if (x.ctx >= records_ || !rec_[x.ctx].busy)
          return end_.fail(Status::Error(fmt::format("{}: completion of unknown send {}", end_.link(), x.ctx)));
        Record& rec = rec_[x.ctx];
        for (uint32_t s : rec.release) {
          Status st = pool_.release(s);
          if (!st) return end_.fail(st);
        }
        rec.busy = false;
        free_.push_back(static_cast<uint32_t>(x.ctx));
        --outstanding_;
        continue;
      }
      // A credit message.
      const size_t b = x.ctx & ~kCreditCtx;
      if (!(x.ctx & kCreditCtx) || b >= credit_bufs_.size())
        return end_.fail(Status::Error(fmt::format("{}: a message landed in unknown buffer {}", end_.link(), x.ctx)));
      CreditFrame cf;
      const std::byte* buf = credit_bufs_.at(b);
      const uint32_t imm_credits = imm_value(x.imm);
      std::string err =
          (x.imm & kImmChannelMask) != channel_of(Dir::kCredit) || imm_kind(x.imm) != kCreditKind
              ? std::string("not on the credit channel")
          : rma_stride_ ? check_named_credits(buf, x.len, imm_credits, peer_slots_, &cf)
                        : check_credit_message(buf, x.len, imm_credits, &cf);
      for (uint32_t j = 0; err.empty() && rma_stride_ && j < cf.credits; ++j) {
        uint32_t slot;
        std::memcpy(&slot, buf + sizeof(CreditFrame) + size_t{j} * 4, 4);
        if (named_[slot]) err = fmt::format("slot {} is named again before it was written", slot);
        else name(slot);
      }
      if (!err.empty())
        return end_.fail(Status::Error(fmt::format("{}: malformed credit message ({} bytes, immediate {:#018x}): {}",
                                                   end_.link(), x.len, x.imm, err)));
      got_credits_ += cf.credits;
      if (cf.acked > acked_) acked_ = cf.acked;  // messages may complete out of order
      Status st = end_.ep().post_recv(credit_bufs_.at(b), credit_bufs_.stride(), x.ctx);
      if (!st) return end_.fail(Status::Error(fmt::format("{}: reposting a credit buffer: {}", end_.link(), st.message())));
    }
    return {};
  }

  // rma: a slot the receiver named, to be written (in the order named).
  void name(uint32_t slot) {
    named_[slot] = 1;
    names_[ntail_++ % names_.size()] = slot;
  }

  const LinkOptions opts_;
  SlotPool& pool_;
  const size_t records_;
  const uint32_t peer_slot_bytes_;
  const uint64_t rma_stride_;
  const uint32_t peer_slots_;
  std::vector<uint32_t> names_;  // rma: slots named and not written, oldest first
  size_t nhead_ = 0, ntail_ = 0;
  Counter in_place_;  // frames sent from their room (no copy)
  uint32_t room_slot_ = kNoSlot;  // the receiver's slot set aside by room()
  std::vector<uint8_t> named_;   // rma: by slot
  // Buffers the endpoint reads or writes: they outlive it (declared first).
  std::vector<RmaNote> notes_;   // rma: each send record's note
  CreditBufs credit_bufs_;
  std::unique_ptr<std::byte[]> staging_;
  End end_;
  std::vector<Record> rec_;
  std::vector<uint32_t> free_;
  size_t outstanding_ = 0;
  uint32_t got_credits_ = 0;
  uint64_t acked_ = 0;
  bool finished_ = false;
  Stats stats_;
};


// Connects the control connection, shakes hands and opens the endpoint,
// once. *vanished: it failed because the receiver closed the control
// connection before the exchange ended.
Status connect_tx_once(const LinkOptions& opts, SlotPool& pool, Factory& factory,
                       const std::string& link, uint32_t timeout_ms, Connection* c, bool* vanished) {
  tcp::SocketOptions so;
  so.handshake_timeout_ms = opts.connect_timeout_ms;
  so.keepalive_s = opts.tcp.keepalive_s;  // the control connection says when the peer is gone
  so.stop = opts.stop;
  int raw = -1;
  Status st = tcp::connect_with_retry(opts.host, opts.port, timeout_ms, so, link, &raw);
  if (!st) return st;
  Fd ctl(raw);
  ReplyInfo reply;
  st = tcp::ask_hello(ctl.get(), opts, link, &reply, vanished);
  if (!st) return st;
  tcp::set_recv_timeout(ctl.get(), opts.connect_timeout_ms);
  std::string page_name, peer_addr, addr;
  st = read_blob(ctl.get(), &page_name, link, "receiver's doorbell page");
  if (st) st = read_blob(ctl.get(), &peer_addr, link, "receiver's endpoint address");
  if (!st) {
    *vanished = tcp::closed_by_peer(ctl.get());
    return st;
  }
  Page page;
  if (!page_name.empty()) {
    st = open_page(&page, page_name);
    if (!st) return Status::Error(fmt::format("{}: {}", link, st.message()));
  }
  auto ep = factory.open_tx(opts, pool, peer_addr, &addr, &st);
  if (!ep) return Status::Error(fmt::format("{}: {}", link, st.message()));
  st = send_blob(ctl.get(), addr, link);
  if (st) st = ep->connect(peer_addr, opts.connect_timeout_ms);
  if (!st) return Status::Error(fmt::format("{}: {}", link, st.message()));
  // rma (msg.h item 6): the receiver's key, empty when it has rma off.
  std::string key;
  st = read_blob(ctl.get(), &key, link, "receiver's rma key");
  if (!st) {
    *vanished = tcp::closed_by_peer(ctl.get());
    return st;
  }
  if (opts.msg.rma != !key.empty())
    return Status::Error(fmt::format("{}: this sender has rma {} and the receiver rma {}: both ends "
                                     "of a link must agree",
                                     link, opts.msg.rma ? "on" : "off", key.empty() ? "off" : "on"));
  uint64_t stride = 0;
  if (opts.msg.rma) {
    std::memcpy(&stride, key.data(), std::min(key.size(), sizeof stride));
    if (key.size() <= sizeof stride || stride < reply.slot_bytes)
      return Status::Error(fmt::format("{}: rma: the receiver's key ({} bytes, slot stride {}) does "
                                       "not fit its slots of {} bytes",
                                       link, key.size(), stride, reply.slot_bytes));
    std::string how;
    st = ep->attach(key.substr(sizeof stride), &how);
    if (!st) return Status::Error(fmt::format("{}: rma: {}", link, st.message()));
    spdlog::info("{}: rma: frames are written into the receiver's slots ({})", link, how);
  }
  auto tx = std::make_unique<MsgTx>(std::move(ep), std::move(ctl), std::move(page), opts, pool, link,
                                    reply.credits, reply.slot_bytes, stride);
  st = tx->start();
  if (st) st = tx->wait_ready(opts.connect_timeout_ms);
  if (!st) return st;
  c->carrier = std::move(tx);
  c->credits = reply.credits;
  c->peer_slot_bytes = reply.slot_bytes;
  return {};
}

// The same, again while the receiver vanishes mid-exchange.
Status connect_tx(const LinkOptions& opts, SlotPool& pool, Factory& factory, const std::string& link,
                  uint32_t timeout_ms, Connection* c) {
  return tcp::connect_again_while_vanished(
      timeout_ms, opts.stop, link, [&](uint32_t left, bool* vanished) {
        return connect_tx_once(opts, pool, factory, link, left, c, vanished);
      });
}
}  // namespace

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool,
                                    std::shared_ptr<Factory> factory, Status* st) {
  const std::string link = link_name(opts, factory->carrier(), opts.port);
  Connection c;
  *st = connect_tx(opts, pool, *factory, link, opts.connect_timeout_ms, &c);
  if (!st->ok()) return nullptr;
  auto s = std::make_unique<Sender>(opts, std::move(c.carrier), pool, c.credits, c.peer_slot_bytes, link);
  // A sender with acks connects again with the same, stop or not
  // (LinkOptions::stop is for the first connect: frames wait on a reconnect),
  // unless the process is stopping at once (LinkOptions::abort).
  if (opts.acks) {
    LinkOptions again = opts;
    again.stop = opts.abort;
    s->set_connector([again, &pool, factory, link](uint32_t timeout_ms, Connection* c) {
      return connect_tx(again, pool, *factory, link, timeout_ms, c);
    });
  }
  return s;
}

}  // namespace sluice::msg

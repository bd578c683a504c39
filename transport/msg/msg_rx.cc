// The receiving end of a message-carrier link (MsgRx) and its listener:
// the control connection's handshake, the endpoint's pre-posted slots (or,
// with rma, its exposed pool and note buffers), credits upstream.
#include "transport/msg/end.h"

namespace sluice::msg {
using namespace detail;
namespace {

// ------------------------------------------------------------ receiving end

class MsgRx final : public RxCarrier {
 public:
  MsgRx(std::unique_ptr<Endpoint> ep, Fd ctl, Page page, const LinkOptions& opts, SlotPool& pool,
        uint32_t first_slot, std::string link)
      : opts_(opts),
        pool_(pool),
        first_slot_(first_slot),
        landed_(opts.slots),
        is_landed_(opts.slots, 0),
        order_(opts.slots),
        arrived_(opts.slots),
        rma_(opts.msg.rma),
        in_arrival_order_(rma_ && ep->notes_in_order()),
        named_(opts.slots, 0),
        notes_(rma_ ? opts.slots : 0),
        credit_bufs_(opts.slots + 2, rma_ ? opts.slots : 0),
        end_(std::move(ep), std::move(ctl), std::move(page), 0, opts, std::move(link),
             opts.slots + 2 * opts.slots + 8) {}
  // The sender's close waits for our finish ('F'): it must not be lost with
  // the socket (End::settle).
  ~MsgRx() override {
    if (finished_) end_.settle();
  }

  Status post(uint32_t slot) override {
    if (!rma_) {  // rma: the slot is named by a credit message instead
      Status st = end_.ep().post_recv(pool_.slot(slot), opts_.slot_bytes, slot);
      if (!st) return end_.fail(Status::Error(fmt::format("{}: {}", end_.link(), st.message())));
    }
    order_[otail_++ % order_.size()] = slot;
    return {};
  }

  Status poll(std::span<Arrival> out, size_t* n) override {
    *n = 0;
    if (!end_.error().ok()) return end_.error();
    End::Seen seen;
    end_.wake(&seen);
    // Messages match receives in the order they were posted, but may
    // complete out of it (UCX: a rendezvous frame finishes after a later
    // eager one, END included): frames are handed out in posting order.
    size_t k = deliver(out);
    if (k) {
      *n = k;
      return {};
    }
    Completion c[64];
    const size_t max = std::min<size_t>(out.size(), 64);
    size_t got = 0;
    // Until a frame can be handed out, or nothing came (then armed).
    do {
      Status st = end_.reap(c, max, &got);
      if (st && got == 0 && !end_.eof()) st = end_.idle(c, max, &got, credits_out_ > 0);
      if (!st) return st;
      for (size_t i = 0; i < got; ++i) {
        const Completion& x = c[i];
        if (x.type != Completion::kRecv) {  // a credit message went out
          --credits_out_;
          continue;
        }
        if ((x.imm & kImmChannelMask) != channel_of(Dir::kData))
          return end_.fail(Status::Error(fmt::format(
              "{}: a message with immediate {:#018x} is not a data frame of this protocol",
              end_.link(), x.imm)));
        const uint16_t kind = imm_kind(x.imm);
        if (kind != static_cast<uint16_t>(FrameKind::kEvents) &&
            kind != static_cast<uint16_t>(FrameKind::kEnd))
          return end_.fail(Status::Error(fmt::format("{}: frame of unknown kind {}", end_.link(), kind)));
        uint32_t idx = static_cast<uint32_t>(x.ctx) - first_slot_;
        uint32_t len = x.len;
        if (rma_) {
          Status st = take_note(x, &idx, &len);
          if (!st) return st;
        } else if (idx >= landed_.size() || is_landed_[idx]) {
          return end_.fail(Status::Error(fmt::format("{}: a frame landed in slot {}, which was not posted",
                                                     end_.link(), x.ctx)));
        }
        stats_.frames.add(1);
        stats_.bytes.add(len);
        landed_[idx] = Arrival{first_slot_ + idx, static_cast<FrameKind>(kind), len, imm_value(x.imm)};
        is_landed_[idx] = 1;
        if (in_arrival_order_) arrived_[atail_++ % arrived_.size()] = idx;
      }
      if (got) end_.ring_peer();  // the sender's sends complete as we take them (shm)
      k = deliver(out);
    } while (k == 0 && got > 0);
    if (k == 0 && end_.eof())
      return end_.fail(Status::Error(fmt::format(
          "{}: the sender closed its control connection before the end of stream "
          "(the sending process ended or aborted)",
          end_.link())));
    *n = k;
    return {};
  }

  // rma: the note of a frame written into a slot this end named: which
  // slot, how long; the note's buffer is posted again.
  Status take_note(const Completion& x, uint32_t* idx, uint32_t* len) {
    const uint64_t k = x.ctx & ~kNoteCtx;
    if (!(x.ctx & kNoteCtx) || k >= notes_.size() || x.len != sizeof(RmaNote))
      return end_.fail(Status::Error(fmt::format(
          "{}: a message of {} bytes (buffer {:#x}) is not a note of a written frame", end_.link(),
          x.len, x.ctx)));
    const RmaNote note = notes_[k];
    if (note.slot >= named_.size() || !named_[note.slot])
      return end_.fail(Status::Error(fmt::format(
          "{}: the sender wrote into slot {}, which this end had not named (its credits name the "
          "slots it may write)",
          end_.link(), note.slot)));
    if (note.bytes > opts_.slot_bytes)
      return end_.fail(Status::Error(fmt::format("{}: a written frame of {} bytes, more than a slot ({})",
                                                 end_.link(), note.bytes, opts_.slot_bytes)));
    named_[note.slot] = 0;
    *idx = note.slot;
    *len = note.bytes;
    Status st = end_.ep().post_recv(&notes_[k], sizeof(RmaNote), x.ctx);
    if (!st) return end_.fail(Status::Error(fmt::format("{}: posting a note buffer: {}", end_.link(), st.message())));
    return {};
  }

  // Frames that landed, from the oldest posted slot on, while they did.
  // rma over an endpoint whose notes complete in the order sent (ucx): in
  // the order they came, which is the order the frames were sent, whatever
  // slots they were written into (a sender writes one in place into a slot
  // it set aside while later frames go into the slots named after it,
  // TxCarrier::room). The order_ ring then only counts: the slots from
  // ohead_ to nhead_ are named, and named_ says which.
  size_t deliver(std::span<Arrival> out) {
    size_t k = 0;
    if (in_arrival_order_) {
      while (k < out.size() && ahead_ != atail_) {
        const uint32_t idx = arrived_[ahead_++ % arrived_.size()];
        is_landed_[idx] = 0;
        out[k++] = landed_[idx];
        ++ohead_;
      }
      return k;
    }
    while (k < out.size() && ohead_ != otail_) {
      const uint32_t idx = order_[ohead_ % order_.size()] - first_slot_;
      if (!is_landed_[idx]) break;
      is_landed_[idx] = 0;
      out[k++] = landed_[idx];
      ++ohead_;
    }
    return k;
  }

  Status send_credits(uint32_t credits, uint64_t acked) override {
    if (!end_.error().ok()) return end_.error();
    const size_t i = next_credit_++ % credit_bufs_.size();
    const CreditFrame cf{kCreditMagic, credits, acked};
    std::byte* b = credit_bufs_.at(i);
    std::memcpy(b, &cf, sizeof cf);
    iovec iov{b, sizeof(CreditFrame)};
    if (rma_) {
      // The slots granted: the next posted ones, in posting order.
      if (otail_ - nhead_ < credits)
        return end_.fail(Status::Error(fmt::format("{}: {} credits for {} slots posted and not named",
                                                   end_.link(), credits, otail_ - nhead_)));
      for (uint32_t j = 0; j < credits; ++j) {
        const uint32_t idx = order_[nhead_++ % order_.size()] - first_slot_;
        named_[idx] = 1;
        std::memcpy(b + sizeof(CreditFrame) + size_t{j} * 4, &idx, 4);
      }
      iov.iov_len += size_t{credits} * 4;
    }
    for (;;) {
      bool again = false;
      Status st = end_.ep().send(&iov, 1, make_imm(Dir::kCredit, kCreditKind, credits), kCreditCtx | i,
                                 &again);
      if (!st) return end_.fail(Status::Error(fmt::format("{}: credit message: {}", end_.link(), st.message())));
      if (!again) {
        ++credits_out_;
        break;
      }
      // Full: reap, keeping what arrived for poll().
      Completion c[64];
      size_t got = 0;
      st = end_.reap(c, 64, &got);
      if (!st) return st;
      end_.stash(c, got);
    }
    end_.ring_peer();
    return {};
  }

  Status start() {
    Status st = end_.ep().add_region(credit_bufs_.data(), credit_bufs_.bytes());
    if (st && rma_) st = end_.ep().add_region(notes_.data(), notes_.size() * sizeof(RmaNote));
    if (!st) return Status::Error(fmt::format("{}: registering buffers: {}", end_.link(), st.message()));
    for (size_t k = 0; k < notes_.size() && st; ++k)
      st = end_.ep().post_recv(&notes_[k], sizeof(RmaNote), kNoteCtx | k);
    if (!st) return Status::Error(fmt::format("{}: posting a note buffer: {}", end_.link(), st.message()));
    return st;
  }
  // Every slot is posted: the handshake's credits name them, in order.
  void ready() {
    if (rma_)
      for (; nhead_ < otail_; ++nhead_) named_[order_[nhead_ % order_.size()] - first_slot_] = 1;
    end_.put(kReady);
  }
  // After END nothing may arrive: a frame that landed and was not handed
  // out (posting order puts it behind END), or a message the endpoint has
  // completed by now. Credit messages that completed meanwhile are counted.
  std::string after_end() override {
    for (size_t i = 0; i < is_landed_.size(); ++i)
      if (is_landed_[i])
        return fmt::format("a frame of kind {} and {} bytes", static_cast<unsigned>(landed_[i].kind),
                           landed_[i].bytes);
    Completion c[64];
    size_t got = 0;
    if (!end_.reap(c, 64, &got)) return {};  // the link's own error, not a frame
    std::string found;
    for (size_t i = 0; i < got; ++i) {
      if (c[i].type != Completion::kRecv) {
        --credits_out_;
        continue;
      }
      if (!found.empty()) continue;
      if ((c[i].imm & kImmChannelMask) == channel_of(Dir::kData))
        found = fmt::format("a frame of kind {} and {} bytes", imm_kind(c[i].imm), c[i].len);
      else
        found = fmt::format("a message of {} bytes with immediate {:#018x}", c[i].len, c[i].imm);
    }
    return found;
  }

  // The last credit message carries the final acknowledgement. A carrier
  // whose sends go out only as this end makes progress (ucx over tcp, when
  // the socket did not take it at once) must push it out before the sender
  // hears we finished: nobody polls this end after END. Bounded: a sender
  // that is gone never completes it.
  void finish() override {
    const auto deadline = Clock::now() + std::chrono::milliseconds(1000);
    while (credits_out_ > 0 && end_.error().ok() && Clock::now() < deadline) {
      Completion c[64];
      size_t got = 0;
      if (!end_.reap(c, 64, &got)) break;
      for (size_t i = 0; i < got; ++i) {
        if (c[i].type != Completion::kRecv) --credits_out_;
        else end_.stash(&c[i], 1);
      }
      if (got == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    end_.put(kFinish);
    finished_ = true;
  }
  void shutdown() override { end_.shutdown(); }
  int wait_fd() const override { return end_.wait_fd(); }
  LinkStats stats() const override { return stats_.snapshot(end_.doorbells()); }

 private:
  const LinkOptions opts_;
  SlotPool& pool_;
  const uint32_t first_slot_;
  std::vector<Arrival> landed_;     // by slot - first_slot_
  std::vector<uint8_t> is_landed_;
  std::vector<uint32_t> order_;     // posted slots, oldest first
  size_t ohead_ = 0, otail_ = 0;
  std::vector<uint32_t> arrived_;   // in_arrival_order_: landed slots, first landed first
  size_t ahead_ = 0, atail_ = 0;
  const bool rma_;
  const bool in_arrival_order_;    // rma over an endpoint whose notes complete in order (deliver)
  size_t nhead_ = 0;               // rma: order_ from here on is not named yet
  std::vector<uint8_t> named_;     // rma: by slot - first_slot_: named, not written yet
  // Buffers the endpoint reads or writes: they outlive it (declared first).
  std::vector<RmaNote> notes_;     // rma: one note receive per slot
  CreditBufs credit_bufs_;
  End end_;
  size_t next_credit_ = 0;
  size_t credits_out_ = 0;  // credit messages not completed yet
  bool finished_ = false;   // finish() put 'F' on the control connection
  Stats stats_;
};

// ------------------------------------------------------------ listener

class MsgListener final : public Listener {
 public:
  MsgListener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
              std::shared_ptr<Factory> f)
      : opts_(opts), pool_(pool), first_slot_(first_slot), factory_(std::move(f)) {}

  Status bind() {
    const std::string me = opts_.to.empty() ? "receiver" : opts_.to;
    if (Status st = check_link_fits_pool(opts_, pool_, first_slot_); !st) return st;
    tcp::SocketOptions so;
    so.handshake_timeout_ms = opts_.connect_timeout_ms;
    so.keepalive_s = opts_.tcp.keepalive_s;  // the control connection says when the peer is gone
    Status st;
    acceptor_ = tcp::Acceptor::bind(opts_.bind_address(), opts_.port, so, me, &st);
    return acceptor_ ? Status() : st;
  }

  std::unique_ptr<Receiver> accept(Status* st) override {
    std::string sender = opts_.from;
    std::mutex mu;
    const std::string carrier = factory_->carrier();
    const uint16_t port = acceptor_->port();
    auto handshake = [&](int fd, const std::string& peer, std::string* why) {
      std::string name;
      tcp::Verdict v =
          tcp::answer_hello(fd, opts_, link_name(opts_, carrier, port) + " from " + peer, &name, why);
      std::lock_guard lk(mu);
      if (v == tcp::Verdict::kAccept && !name.empty() && sender == opts_.from) sender = name;
      return v;
    };
    int raw = acceptor_->accept(handshake, st);
    if (raw < 0) return nullptr;
    Fd ctl(raw);
    LinkOptions o = opts_;
    o.from = sender;
    const std::string link = link_name(o, carrier, port);
    tcp::set_recv_timeout(ctl.get(), opts_.connect_timeout_ms);
    // The endpoint, its address and the doorbell page go to the sender;
    // its address comes back.
    std::string addr, peer_addr, page_name;
    auto ep = factory_->open_rx(opts_, pool_, &addr, st);
    if (!ep) {
      *st = Status::Error(fmt::format("{}: {}", link, st->message()));
      return nullptr;
    }
    Page page;
    if (ep->fd() < 0) {
      *st = create_page(&page, &page_name);
      if (!st->ok()) return nullptr;
    }
    *st = send_blob(ctl.get(), page_name, link);
    if (st->ok()) *st = send_blob(ctl.get(), addr, link);
    if (st->ok()) *st = read_blob(ctl.get(), &peer_addr, link, "sender's endpoint address");
    if (!page_name.empty()) shm_unlink(page_name.c_str());
    if (st->ok()) *st = ep->connect(peer_addr, opts_.connect_timeout_ms);
    if (!st->ok()) {
      *st = Status::Error(fmt::format("{}: {}", link, st->message()));
      return nullptr;
    }
    // rma: the slots' key (msg.h item 6); an empty blob says "no rma".
    std::string key;
    if (opts_.msg.rma) {
      const uint64_t stride = pool_.slot_bytes();
      *st = ep->expose(pool_.slot(first_slot_), size_t{opts_.slots} * stride, &key);
      if (!st->ok()) {
        *st = Status::Error(fmt::format("{}: rma: {}", link, st->message()));
        return nullptr;
      }
      key.insert(0, reinterpret_cast<const char*>(&stride), sizeof stride);
    }
    *st = send_blob(ctl.get(), key, link);
    if (!st->ok()) return nullptr;
    spdlog::info("{}: connected over {}{}", link, ep->describe(), opts_.msg.rma ? ", rma" : "");
    tcp::set_recv_timeout(ctl.get(), 0);
    auto rx = std::make_unique<MsgRx>(std::move(ep), std::move(ctl), std::move(page), opts_, pool_,
                                      first_slot_, link);
    *st = rx->start();
    if (!st->ok()) return nullptr;
    for (uint32_t i = 0; i < opts_.slots; ++i) {
      *st = rx->post(first_slot_ + i);
      if (!st->ok()) return nullptr;
    }
    // Every slot is posted: the sender may start.
    rx->ready();
    *st = Status();
    return std::make_unique<Receiver>(opts_, std::move(rx), pool_, first_slot_, link);
  }

  void shutdown() override { acceptor_->shutdown(); }
  uint16_t port() const override { return acceptor_->port(); }
  void turn_away(bool on) override {
    if (!on) return acceptor_->stop_turning_away();
    const std::string link = link_name(opts_, factory_->carrier(), acceptor_->port());
    acceptor_->turn_away([this, link](int fd, const std::string& peer, std::string* why) {
      tcp::refuse_hello(fd, opts_.to, link + " from " + peer,
                        link + kLinkBusy, why);
      return tcp::Verdict::kRefuse;
    });
  }


 private:
  LinkOptions opts_;
  SlotPool& pool_;
  uint32_t first_slot_;
  std::shared_ptr<Factory> factory_;
  std::unique_ptr<tcp::Acceptor> acceptor_;
};

}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
                                        std::shared_ptr<Factory> factory, Status* st) {
  auto l = std::make_unique<MsgListener>(opts, pool, first_slot, std::move(factory));
  *st = l->bind();
  if (!st->ok()) return nullptr;
  return l;
}

}  // namespace sluice::msg

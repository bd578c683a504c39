#include "transport/msg/msg.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "transport/tcp/connect.h"

namespace sluice::msg {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMaxBlob = 65536;
constexpr uint64_t kCreditCtx = uint64_t{1} << 62;  // ctx of a credit message (| its buffer)
constexpr uint64_t kNoteCtx = uint64_t{1} << 61;    // rma: ctx of a note's receive (| its buffer)
constexpr size_t kMaxPieces = 256;                  // pieces the sender gathers into a frame
constexpr long kOwedPollNs = 100'000;               // doorbell endpoints: recheck while owed

std::string link_name(const LinkOptions& o, const std::string& carrier, uint16_t port) {
  return fmt::format("link {} -> {} ({}, {}:{})", o.from.empty() ? "?" : o.from,
                     o.to.empty() ? "?" : o.to, carrier, o.host, port);
}

// ------------------------------------------------------------ control

// Bytes on the control connection after the handshake and the addresses.
constexpr char kReady = 'R';     // receiver -> sender: every slot is posted
constexpr char kFinish = 'F';    // receiver -> sender: END's slot came back; nothing more
constexpr char kDoorbell = 'D';  // either way: you said you would sleep; there is work

Status send_blob(int fd, const std::string& b, const std::string& who) {
  uint32_t n = static_cast<uint32_t>(b.size());
  Status st = tcp::send_all(fd, &n, sizeof n, who);
  if (st && n) st = tcp::send_all(fd, b.data(), n, who);
  return st;
}

Status read_blob(int fd, std::string* b, const std::string& who, const char* what) {
  uint32_t n = 0;
  Status st = tcp::read_exact(fd, &n, sizeof n, who, what);
  if (!st) return st;
  if (n > kMaxBlob)
    return Status::Error(fmt::format("{}: {} of {} bytes (at most {})", who, what, n, kMaxBlob));
  b->resize(n);
  return n ? tcp::read_exact(fd, b->data(), n, who, what) : Status();
}

// The doorbell page: one flag per side, set while that side sleeps.
struct WakePage {
  std::atomic<uint32_t> sleeping[2];  // [0] receiver, [1] sender
};
constexpr size_t kPageBytes = 4096;

struct Page {
  WakePage* p = nullptr;
  Page() = default;
  Page(Page&& o) noexcept : p(std::exchange(o.p, nullptr)) {}
  Page& operator=(Page&&) = delete;
  ~Page() {
    if (p) munmap(p, kPageBytes);
  }
};

// The receiver makes the page; its name goes to the sender, which maps it;
// the receiver unlinks it once the sender answered (so a crash leaves at most
// one 4 KiB file, /dev/shm/sluice-wake-*).
Status create_page(Page* pg, std::string* name) {
  static std::atomic<uint32_t> seq{0};
  std::random_device rd;
  *name = fmt::format("/sluice-wake-{}-{}-{:08x}", getpid(), seq.fetch_add(1), rd());
  int fd = shm_open(name->c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Error(fmt::format("shm_open {}: {}", *name, strerror(errno)));
  Fd f(fd);
  if (ftruncate(fd, kPageBytes) != 0) {
    shm_unlink(name->c_str());
    return Status::Error(fmt::format("ftruncate {}: {}", *name, strerror(errno)));
  }
  void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    shm_unlink(name->c_str());
    return Status::Error(fmt::format("mmap {}: {}", *name, strerror(errno)));
  }
  pg->p = static_cast<WakePage*>(p);
  return {};
}

Status open_page(Page* pg, const std::string& name) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return Status::Error(fmt::format("the receiver's doorbell page {}: {} (are both ends on one host?)",
                                     name, strerror(errno)));
  Fd f(fd);
  void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Status::Error(fmt::format("mmap {}: {}", name, strerror(errno)));
  pg->p = static_cast<WakePage*>(p);
  return {};
}

// ------------------------------------------------------------ one link end

// What both ends share: the endpoint, the control connection, the wait set
// (an epoll fd over the endpoint's fd and the control connection), the
// doorbell, and completions reaped at a moment their owner could not take
// them (a send that found the endpoint full).
class End {
 public:
  End(std::unique_ptr<Endpoint> ep, Fd ctl, Page page, int me, const LinkOptions& opts,
      std::string link, size_t stash)
      : ep_(std::move(ep)),
        ctl_(std::move(ctl)),
        page_(std::move(page)),
        me_(me),
        spin_(std::chrono::microseconds(opts.msg.spin_us)),
        link_(std::move(link)),
        stash_(stash) {
    epfd_ = Fd(epoll_create1(EPOLL_CLOEXEC));
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, ctl_.get(), &ev);
    if (ep_->fd() >= 0) epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, ep_->fd(), &ev);
    if (page_.p) {
      timer_ = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
      epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, timer_.get(), &ev);
    }
    fcntl(ctl_.get(), F_SETFL, fcntl(ctl_.get(), F_GETFL) | O_NONBLOCK);
  }

  int wait_fd() const { return epfd_.get(); }
  const std::string& link() const { return link_; }
  Endpoint& ep() { return *ep_; }

  // Completions: stashed ones first, then the endpoint's.
  Status reap(Completion* out, size_t max, size_t* n) {
    size_t k = 0;
    while (k < max && shead_ != stail_) out[k++] = stash_[shead_++ % stash_.size()];
    size_t got = 0;
    if (k < max) {
      Status st = ep_->poll(out + k, max - k, &got);
      if (!st) return fail(Status::Error(fmt::format("{}: {}", link_, st.message())));
      if (ep_->sent_on_its_own()) ring_peer();
    }
    *n = k + got;
    for (size_t i = 0; i < *n; ++i)
      if (out[i].type == Completion::kError)
        return fail(Status::Error(fmt::format("{}: completion error {}", link_, out[i].err)));
    return {};
  }
  // Keeps completions a caller reaped but cannot use now.
  void stash(const Completion* c, size_t n) {
    for (size_t i = 0; i < n; ++i) stash_[stail_++ % stash_.size()] = c[i];
  }

  // Nothing to do now: spin (doorbell endpoints), then arm the wait set.
  // Returns with *n > 0 if something came in meanwhile (and then unarmed).
  // `peer_owes`: sends of ours are not complete yet; only the peer's
  // progress completes them (shm), so a sleeping peer is woken first.
  Status idle(Completion* out, size_t max, size_t* n, bool peer_owes) {
    *n = 0;
    if (!page_.p) {
      // The endpoint refuses to arm while it has work it must do first
      // (fi_trywait: progress owed): reaping does that work.
      // ucx over sm whose peer died refuses to arm for ever with nothing
      // to reap: look at the control connection now and then, so a dead
      // peer is seen (eof) instead of spinning here.
      for (uint32_t tries = 1;; ++tries) {
        if (ep_->arm()) {
          armed_ = true;
          return {};
        }
        Status st = reap(out, max, n);
        if (!st || *n) return st;
        if (tries % 64 == 0 && peer_hung_up()) {
          eof_ = true;
          return {};
        }
      }
    }
    const auto until = Clock::now() + spin_;
    do {
      Status st = reap(out, max, n);
      if (!st || *n) return st;
    } while (Clock::now() < until);
    page_.p->sleeping[me_].store(1, std::memory_order_seq_cst);
    if (peer_owes) {
      // Our sends complete only as the peer makes progress (and a large
      // one may need ours again in between): wake it, and look again soon
      // whatever it does.
      ring_peer();
      itimerspec t{};
      t.it_value.tv_nsec = kOwedPollNs;
      timerfd_settime(timer_.get(), 0, &t, nullptr);
      timer_armed_ = true;
    }
    Status st = reap(out, max, n);
    if (!st || *n) {
      page_.p->sleeping[me_].store(0, std::memory_order_relaxed);
      return st;
    }
    armed_ = true;
    return {};
  }

  // After the owner slept (or would have): what came on the control
  // connection. Only then is it read, so a busy link makes no syscall here.
  struct Seen {
    bool ready = false, finish = false, eof = false, bell = false;
  };
  void wake(Seen* s) {
    if (!armed_) return;
    armed_ = false;
    if (page_.p) page_.p->sleeping[me_].store(0, std::memory_order_relaxed);
    if (timer_armed_) {
      uint64_t v;
      (void)!::read(timer_.get(), &v, sizeof v);
      timer_armed_ = false;
    }
    read_control(s);
  }
  void read_control(Seen* s) {
    char buf[64];
    for (;;) {
      ssize_t r = ::recv(ctl_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (r > 0) {
        for (ssize_t i = 0; i < r; ++i) {
          if (buf[i] == kReady) s->ready = true;
          if (buf[i] == kFinish) s->finish = true;
          if (buf[i] == kDoorbell) s->bell = true;
        }
        continue;
      }
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        s->eof = true;
        eof_ = true;
      }
      if (r < 0 && errno == EINTR) continue;
      return;
    }
  }
  bool eof() const { return eof_; }
  void set_eof() { eof_ = true; }
  // The peer closed its end of the control connection, whatever bytes are
  // still unread before the close (those stay for read_control).
  bool peer_hung_up() const {
    pollfd p{ctl_.get(), POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
  }

  // The peer may have work now: wake it if it said it sleeps.
  void ring_peer() {
    if (!page_.p) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::atomic<uint32_t>& f = page_.p->sleeping[1 - me_];
    if (f.load(std::memory_order_relaxed) && f.exchange(0, std::memory_order_seq_cst)) {
      const char d = kDoorbell;
      (void)!::send(ctl_.get(), &d, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      doorbells_.add(1);
    }
  }
  void put(char c) { (void)!::send(ctl_.get(), &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL); }
  // Sleeps on the wait set (at most ms); the caller armed first.
  void sleep(int ms) {
    epoll_event ev[3];
    epoll_wait(epfd_.get(), ev, 3, ms);
  }
  void shutdown() { ::shutdown(ctl_.get(), SHUT_RDWR); }
  // Waits at most ms for bytes (or EOF) on the control connection.
  void wait_control(int ms) {
    pollfd p{ctl_.get(), POLLIN, 0};
    ::poll(&p, 1, ms);
  }

  Status fail(Status st) {
    if (error_.ok()) error_ = std::move(st);
    return error_;
  }
  const Status& error() const { return error_; }
  uint64_t doorbells() const { return doorbells_.get(); }

 private:
  std::unique_ptr<Endpoint> ep_;
  Fd ctl_;
  Page page_;
  const int me_;
  const std::chrono::microseconds spin_;
  std::string link_;
  Fd epfd_;
  std::vector<Completion> stash_;
  size_t shead_ = 0, stail_ = 0;
  Fd timer_;  // doorbell endpoints: the "look again soon" while the peer owes us
  bool timer_armed_ = false;
  bool armed_ = false, eof_ = false;
  Status error_;
  Counter doorbells_;
};

struct Stats {
  Counter frames, bytes, syscalls;
  LinkStats snapshot(uint64_t doorbells) const {
    LinkStats s;
    s.frames = frames.get();
    s.bytes = bytes.get();
    s.syscalls = syscalls.get() + doorbells;
    return s;
  }
};

// Credit buffers: a CreditFrame each, and with rma room for the slots it
// names (msg.h item 6), at a fixed stride.
class CreditBufs {
 public:
  CreditBufs(size_t n, uint32_t names)
      : stride_((sizeof(CreditFrame) + size_t{names} * 4 + 7) / 8 * 8), n_(n), mem_(n * stride_ / 8) {}
  std::byte* at(size_t i) { return reinterpret_cast<std::byte*>(mem_.data()) + i * stride_; }
  size_t size() const { return n_; }
  size_t stride() const { return stride_; }
  void* data() { return mem_.data(); }
  size_t bytes() const { return n_ * stride_; }

 private:
  size_t stride_, n_;
  std::vector<uint64_t> mem_;
};

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
        rma_(opts.msg.rma),
        named_(opts.slots, 0),
        notes_(rma_ ? opts.slots : 0),
        credit_bufs_(opts.slots + 2, rma_ ? opts.slots : 0),
        end_(std::move(ep), std::move(ctl), std::move(page), 0, opts, std::move(link),
             opts.slots + 2 * opts.slots + 8) {}

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
  size_t deliver(std::span<Arrival> out) {
    size_t k = 0;
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
  const bool rma_;
  size_t nhead_ = 0;               // rma: order_ from here on is not named yet
  std::vector<uint8_t> named_;     // rma: by slot - first_slot_: named, not written yet
  // Buffers the endpoint reads or writes: they outlive it (declared first).
  std::vector<RmaNote> notes_;     // rma: one note receive per slot
  CreditBufs credit_bufs_;
  End end_;
  size_t next_credit_ = 0;
  size_t credits_out_ = 0;  // credit messages not completed yet
  Stats stats_;
};

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
    if (rma_stride_ && kind == FrameKind::kEvents && n <= end_.ep().max_write_iov()) {
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
      if (nhead_ == ntail_)
        return end_.fail(Status::Error(fmt::format("{}: a credit with no slot named for it", end_.link())));
      slot = names_[nhead_++ % names_.size()];
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
  int wait_fd() const override { return end_.wait_fd(); }
  bool busy() const override { return outstanding_ > 0; }
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
    return st;
  }
  LinkStats stats() const override { return stats_.snapshot(end_.doorbells()); }

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

// ------------------------------------------------------------ listener

class MsgListener final : public Listener {
 public:
  MsgListener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
              std::shared_ptr<Factory> f)
      : opts_(opts), pool_(pool), first_slot_(first_slot), factory_(std::move(f)) {}

  Status bind() {
    const std::string me = opts_.to.empty() ? "receiver" : opts_.to;
    if (opts_.slots == 0 || first_slot_ + uint64_t{opts_.slots} > pool_.slots() ||
        opts_.slot_bytes > pool_.slot_bytes())
      return Status::Error(fmt::format(
          "{}: link of {} slots x {} bytes from slot {} does not fit a pool of {} slots x {} bytes",
          me, opts_.slots, opts_.slot_bytes, first_slot_, pool_.slots(), pool_.slot_bytes()));
    tcp::SocketOptions so;
    so.handshake_timeout_ms = opts_.connect_timeout_ms;
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

namespace {
// Connects the control connection, shakes hands and opens the endpoint.
Status connect_tx(const LinkOptions& opts, SlotPool& pool, Factory& factory, const std::string& link,
                  uint32_t timeout_ms, Connection* c) {
  tcp::SocketOptions so;
  so.handshake_timeout_ms = opts.connect_timeout_ms;
  int raw = -1;
  Status st = tcp::connect_with_retry(opts.host, opts.port, timeout_ms, so, link, &raw);
  if (!st) return st;
  Fd ctl(raw);
  ReplyInfo reply;
  st = tcp::ask_hello(ctl.get(), opts, link, &reply);
  if (!st) return st;
  tcp::set_recv_timeout(ctl.get(), opts.connect_timeout_ms);
  std::string page_name, peer_addr, addr;
  st = read_blob(ctl.get(), &page_name, link, "receiver's doorbell page");
  if (st) st = read_blob(ctl.get(), &peer_addr, link, "receiver's endpoint address");
  if (!st) return st;
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
  if (!st) return st;
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
}  // namespace

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool,
                                    std::shared_ptr<Factory> factory, Status* st) {
  const std::string link = link_name(opts, factory->carrier(), opts.port);
  Connector connect = [opts, &pool, factory, link](uint32_t timeout_ms, Connection* c) {
    return connect_tx(opts, pool, *factory, link, timeout_ms, c);
  };
  Connection c;
  *st = connect(opts.connect_timeout_ms, &c);
  if (!st->ok()) return nullptr;
  auto s = std::make_unique<Sender>(opts, std::move(c.carrier), pool, c.credits, c.peer_slot_bytes, link);
  if (opts.acks) s->set_connector(std::move(connect));
  return s;
}

}  // namespace sluice::msg

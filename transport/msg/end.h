// transport/msg's own: what the receiving end (msg_rx.cc) and the sending end
// (msg_tx.cc) share. The control connection's bytes and blobs, the doorbell
// page, End (one link end: endpoint, control connection, wait set, doorbell),
// the link counters and the credit buffers. Not for use outside transport/msg.
#pragma once

#include "transport/msg/msg.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
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
#include "transport/msg/spin.h"
#include "transport/tcp/connect.h"

namespace sluice::msg::detail {

using Clock = std::chrono::steady_clock;
inline constexpr uint32_t kMaxBlob = 65536;
constexpr uint64_t kCreditCtx = uint64_t{1} << 62;  // ctx of a credit message (| its buffer)
constexpr uint64_t kNoteCtx = uint64_t{1} << 61;    // rma: ctx of a note's receive (| its buffer)
constexpr size_t kMaxPieces = 256;                  // pieces the sender gathers into a frame
constexpr long kOwedPollNs = 100'000;               // recheck while owed (no event will say) ...
constexpr int kOwedBackoff = 4;                     // ... doubled per round that found nothing, up to 1.6 ms

inline std::string link_name(const LinkOptions& o, const std::string& carrier, uint16_t port) {
  return fmt::format("link {} -> {} ({}, {}:{})", o.from.empty() ? "?" : o.from,
                     o.to.empty() ? "?" : o.to, carrier, o.host, port);
}

// ------------------------------------------------------------ control

// Bytes on the control connection after the handshake and the addresses.
constexpr char kReady = 'R';     // receiver -> sender: every slot is posted
constexpr char kFinish = 'F';    // receiver -> sender: END's slot came back; nothing more
constexpr char kDoorbell = 'D';  // either way: you said you would sleep; there is work

inline Status send_blob(int fd, const std::string& b, const std::string& who) {
  uint32_t n = static_cast<uint32_t>(b.size());
  Status st = tcp::send_all(fd, &n, sizeof n, who);
  if (st && n) st = tcp::send_all(fd, b.data(), n, who);
  return st;
}

inline Status read_blob(int fd, std::string* b, const std::string& who, const char* what) {
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
inline Status create_page(Page* pg, std::string* name) {
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

inline Status open_page(Page* pg, const std::string& name) {
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
        window_(spin_),
        yield_(!opts.acks),
        link_(std::move(link)),
        stash_(stash) {
    epfd_ = Fd(epoll_create1(EPOLL_CLOEXEC));
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, ctl_.get(), &ev);
    if (ep_->fd() >= 0) epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, ep_->fd(), &ev);
    timer_ = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, timer_.get(), &ev);
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
    if (*n) {
      owed_rounds_ = empty_wakes_ = 0;
      if (judging_) {  // the wait after a poll that found nothing is over
        judging_ = false;
        window_.judge(Clock::now() - idle_since_);
      }
    }
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
  // Where no event will come for what is owed, the wait set's timer looks
  // again after 100 us, doubled for every round in a row that found
  // nothing (up to 1.6 ms), and the spin is left out after such a round:
  // behind a stalled receiver a sender spun in this loop on 85-100% of a
  // core (UCX over sm, whose endpoint refuses to arm, see below), or on a
  // third of one (libfabric shm: a 50 us spin per 100 us timer).
  // A doorbell endpoint polls for its window (spin.h), and gives its core
  // away between two looks (sched_yield): where processes outnumber the
  // cores, the process that would give it work is often waiting for this
  // very core. A poll that kept it took it from them: four processes on
  // two cores then moved 0.7-0.8x tcp-opt's tuples/s, 1.1-1.2x yielding.
  // Where nothing else is runnable on the core the yield returns at once.
  // Not on a link with acks: under exactly-once (acks, and the processes'
  // checkpoints) the yielding poll moved 0.2-0.5x the tuples/s of the one
  // that keeps its core at 128 B one tuple per event, the processes idle
  // most of the time; acks alone, without checkpoints, did not.
  Status idle(Completion* out, size_t max, size_t* n, bool peer_owes) {
    *n = 0;
    if (!page_.p) {
      const auto until = Clock::now() + (owed_rounds_ ? Clock::duration::zero() : spin_);
      // The endpoint refuses to arm while it has work it must do first
      // (fi_trywait: progress owed): reaping does that work. UCX over sm
      // refuses too while a send of ours waits for room in the peer's
      // receive FIFO (its pending queue), and nothing says when there is:
      // then the timer. (Its peer's death is seen on the control
      // connection when the owner wakes.)
      for (uint32_t tries = 1;; ++tries) {
        if (ep_->arm() && !(empty_wakes_ >= 2 && fd_stays_readable())) {
          watch_endpoint(true);
          armed_ = true;
          return {};
        }
        Status st = reap(out, max, n);
        if (!st || *n) return st;
        if (tries % 64 == 0 && peer_hung_up()) {
          eof_ = true;
          return {};
        }
        if (Clock::now() >= until || empty_wakes_ >= 2) {
          // Unarmed, its fd may stay readable (UCX's), or armed it stays
          // readable all the same (libfabric net's, while a send waits for
          // a receiver that stopped reading): out of the wait set until it
          // arms again, or the owner would not sleep at all.
          watch_endpoint(false);
          look_again_later();
          armed_ = true;
          return {};
        }
      }
    }
    const bool polled = owed_rounds_ == 0;
    const auto start = Clock::now();
    const auto until = start + (polled ? window_.get() : Clock::duration::zero());
    for (;;) {
      Status st = reap(out, max, n);
      if (!st || *n) return st;
      if (Clock::now() >= until) break;
      if (yield_) sched_yield();
    }
    page_.p->sleeping[me_].store(1, std::memory_order_seq_cst);
    if (!peer_owes) {
      owe_nothing();
    } else {
      // Our sends complete only as the peer makes progress (and a large
      // one may need ours again in between, which no doorbell announces):
      // wake it, and look again soon whatever it does.
      ring_peer();
      look_again_later();
    }
    Status st = reap(out, max, n);
    if (!st || *n) {
      page_.p->sleeping[me_].store(0, std::memory_order_relaxed);
      // Not armed: no wake() will read the timer set above, and fired it
      // would keep the wait set readable (an owner whose sends all
      // completed here then polled until its next send).
      cancel_timer();
      return st;
    }
    armed_ = true;
    if (polled) {
      idle_since_ = start;
      judging_ = true;  // by the reap that next finds something
    }
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
    ++empty_wakes_;  // until a reap finds something
    if (page_.p) page_.p->sleeping[me_].store(0, std::memory_order_relaxed);
    if (timer_armed_) {
      if (page_.p) {
        // Read, so a timer not expired yet fires later, unread, and keeps
        // the wait set readable until idle() sets it again: the owner polls
        // meanwhile. libfabric shm's large frames cross on that polling:
        // disarming here instead took 35-100% of a core off a node behind
        // a stalled receiver and gave 1.24x the tuples/s without acks, but
        // 0.27x with them (their progress then waited for the 100 us timer).
        // An idle with nothing owed disarms it (see idle()).
        uint64_t v;
        timer_unread_ = ::read(timer_.get(), &v, sizeof v) != sizeof v;
        timer_armed_ = false;
      } else {
        cancel_timer();  // disarmed: no poll left behind (UCX's timer, see idle())
      }
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
  bool armed() const { return armed_; }
  bool has_doorbell() const { return page_.p != nullptr; }
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
  // Before the control connection closes after what was put matters (the
  // receiver's finish): until the peer's kernel acknowledged it, at most
  // tcp::kSettleMs (tcp::wait_acknowledged says what is lost else).
  void settle() { tcp::wait_acknowledged(ctl_.get(), tcp::kSettleMs); }
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

  // The endpoint's fd in the wait set, or not (see idle()).
  void watch_endpoint(bool on) {
    if (on == ep_watched_ || ep_->fd() < 0) return;
    epoll_event ev{};
    ev.events = on ? EPOLLIN | EPOLLRDHUP : 0;
    epoll_ctl(epfd_.get(), EPOLL_CTL_MOD, ep_->fd(), &ev);
    ep_watched_ = on;
  }
  // After two wakes in a row that found nothing: is the endpoint's fd
  // readable though it just armed? (An fd wait's contract is that it is
  // not; libfabric net's stays so while a send waits on a stalled
  // receiver, and its owner spun on a core.) Asked only then: a poll(2).
  bool fd_stays_readable() const {
    pollfd p{ep_->fd(), POLLIN, 0};
    return ep_->fd() >= 0 && ::poll(&p, 1, 0) > 0;
  }
  // Nothing of ours is owed by the peer any more: the timer of an earlier
  // owed round that wake() read before it fired goes, or it would fire
  // unread and keep the wait set readable until the next owed round (a
  // node waiting for credits behind a stalled receiver spun so on a whole
  // core). Nothing rides on polling then.
  void owe_nothing() {
    if (timer_unread_) cancel_timer();
  }
  void cancel_timer() {
    if (!timer_armed_ && !timer_unread_) return;
    itimerspec off{};  // disarmed, and what it counted is gone with it
    timerfd_settime(timer_.get(), 0, &off, nullptr);
    timer_armed_ = timer_unread_ = false;
  }
  // The timer, for what no event will announce (see idle()): longer for
  // each round in a row that found nothing.
  void look_again_later() {
    const long ns = kOwedPollNs << std::min(owed_rounds_++, kOwedBackoff);
    itimerspec t{};
    t.it_value.tv_sec = ns / 1'000'000'000;
    t.it_value.tv_nsec = ns % 1'000'000'000;
    timerfd_settime(timer_.get(), 0, &t, nullptr);
    timer_armed_ = true;
    timer_unread_ = false;
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
  SpinWindow window_;                // doorbell: how long idle() polls (spin.h)
  const bool yield_;                 // doorbell: idle() yields its core between two looks
  Clock::time_point idle_since_{};   // doorbell: when the last poll that found nothing began ...
  bool judging_ = false;             // ... and the wait after it is not over yet
  std::string link_;
  Fd epfd_;
  std::vector<Completion> stash_;
  size_t shead_ = 0, stail_ = 0;
  Fd timer_;  // the "look again soon" while the peer owes us (look_again_later)
  bool timer_armed_ = false;
  bool timer_unread_ = false;  // read by wake() before it fired: fires later, unread
  int owed_rounds_ = 0;  // idle() rounds in a row that set the timer and found nothing since
  int empty_wakes_ = 0;  // wakes in a row after which reaping found nothing
  bool ep_watched_ = true;  // the endpoint's fd is in the wait set
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

}  // namespace sluice::msg::detail

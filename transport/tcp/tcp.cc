// The tcp carrier: one TCP connection per link, three encodings (sg, copy,
// capnp) of the same frames, under the protocol core (transport/link.h).
//
// Lifecycle of a link:
//   1. make_listener binds the receiver's address now (tcp/connect.h).
//   2. make_sender connects, retrying until connect_timeout_ms, and sends
//      Hello; the listener reads it within the handshake deadline, checks it
//      (transport/handshake.h) and answers HelloReply with the initial
//      credits, or refuses a stranger and keeps waiting.
//   3. Data: frames (FrameHeader + payload), sender -> receiver; credit
//      frames (CreditFrame), receiver -> sender on the same socket, written
//      by the receive stage (each direction has one writer).
//   4. After END the receiver half-closes once the END slot came back; the
//      sender half-closes after END and reads until EOF, so no frame is lost
//      to a reset.
//
// Encodings:
//   sg    - the sender gathers frame headers and slot bytes into sendmsg()
//           calls; the receiver reads payloads straight into slots with one
//           recvmsg() of [rest of payload, next frame header] per frame.
//   copy  - both ends go through a contiguous buffer (memcpy).
//   capnp - one Cap'n Proto Event message per event, rebuilt on receipt.
// async_send (copy, capnp) puts a bounded queue and a thread behind the
// sender; rx_select looks at the socket with poll() before every read and
// makes the receive stage wake every poll_timeout_us. Both model the study's
// `original` configuration.
#include "transport/tcp/tcp.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "transport/handshake.h"
#include "transport/link.h"
#include "transport/tcp/codec.h"
#include "transport/tcp/connect.h"

namespace sluice::tcp {
namespace {

constexpr size_t kIovMax = 1024;  // IOV_MAX on Linux

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

std::string link_name(const LinkOptions& o, uint16_t port) {
  return fmt::format("link {} -> {} ({}:{})", o.from.empty() ? "?" : o.from,
                     o.to.empty() ? "?" : o.to, o.host, port);
}

struct Stats {
  Counter frames, bytes, syscalls;
  LinkStats snapshot() const {
    LinkStats s;
    s.frames = frames.get();
    s.bytes = bytes.get();
    s.syscalls = syscalls.get();
    return s;
  }
};

Status write_all(int fd, const std::byte* p, size_t n, const std::string& link, Stats* stats) {
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (stats) stats->syscalls.add(1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::Error(fmt::format("send failed on {}: {}", link, errno_text(errno)));
    }
    if (stats) stats->bytes.add(r);
    p += r;
    n -= r;
  }
  return {};
}

// ---------------------------------------------------------------------------
// Receiving end

class TcpRx final : public RxCarrier {
 public:
  TcpRx(Fd fd, const LinkOptions& opts, SlotPool& pool, std::string link)
      : fd_(std::move(fd)), opts_(opts), pool_(pool), lim_(frame_limits(opts)), link_(std::move(link)) {
    ready_.reserve(opts.slots);
    if (opts_.tcp.encoding != Encoding::kSg) {
      // Room for one whole frame plus one read behind it; sized once here.
      size_t max_payload = opts_.tcp.encoding == Encoding::kCapnp ? lim_.capnp_bytes : lim_.slot_bytes;
      size_t read = std::max<size_t>(opts_.tcp.read_bytes, 64);
      buf_cap_ = (sizeof(FrameHeader) + max_payload + read + 7) / 8 * 8;
      buf_.reset(new uint64_t[buf_cap_ / 8]);
      if (opts_.tcp.encoding == Encoding::kCapnp) scratch_.reset(new uint64_t[max_payload / 8 + 1]);
    }
  }

  Status post(uint32_t slot) override {
    if (ready_.size() == opts_.slots)  // never past the reserve: no allocation here
      return Status::Error(fmt::format("{}: more slots posted than the link has", link_));
    ready_.push_back(slot);
    ++posted_;
    return {};
  }

  Status poll(std::span<Arrival> out, size_t* n) override {
    *n = 0;
    wait_now_ = std::exchange(wait_next_, false);
    if (!error_.ok()) return error_;
    if (ended_ || out.empty()) return {};
    drained_ = false;
    return opts_.tcp.encoding == Encoding::kSg ? poll_sg(out, n) : poll_buffered(out, n);
  }

  // A blocking read is the wait: the socket is blocking (MSG_DONTWAIT makes
  // every other read return at once), and shutdown() ends the read with
  // EOF. Not with rx_select, whose loop looks before it reads.
  bool wait_in_next_poll() override {
    if (opts_.tcp.rx_select) return false;
    wait_next_ = true;
    return true;
  }

  Status send_credits(uint32_t credits, uint64_t acked) override {
    CreditFrame c{kCreditMagic, credits, acked};
    Status st = write_all(fd_.get(), reinterpret_cast<const std::byte*>(&c), sizeof c, link_, nullptr);
    stats_.syscalls.add(1);
    return st;
  }

  // A finished link's last credits and FIN, acknowledged by the sender's
  // kernel before the socket closes (wait_acknowledged says what is lost
  // otherwise).
  ~TcpRx() override {
    if (finished_ && fd_.valid()) wait_acknowledged(fd_.get(), kSettleMs);
  }

  // What came behind END: bytes a read already took past it (sg's carry, the
  // buffered encodings' buffer), else a look at the socket. EOF is the
  // sender's close, as it should be; a reset or nothing yet is not a frame.
  std::string after_end() override {
    const std::byte* held = nullptr;
    size_t n = 0;
    if (opts_.tcp.encoding == Encoding::kSg) {
      held = carry_ + carry_begin_;
      n = carry_end_ - carry_begin_;
    } else if (buf_) {
      held = reinterpret_cast<const std::byte*>(buf_.get()) + begin_;
      n = end_ - begin_;
    }
    std::byte peek[sizeof(FrameHeader)];
    if (n == 0) {
      const ssize_t r = ::recv(fd_.get(), peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT);
      if (r <= 0) return {};
      held = peek;
      n = static_cast<size_t>(r);
    }
    if (n < sizeof(FrameHeader)) return fmt::format("{} bytes", n);
    FrameHeader h;
    std::memcpy(&h, held, sizeof h);
    if (h.magic != kFrameMagic) return fmt::format("bytes that are not a frame (magic 0x{:08x})", h.magic);
    return fmt::format("a frame of kind {} and {} payload bytes", h.kind, h.payload_bytes);
  }

  // The END has passed through: half-close so the sender's close() sees EOF
  // after our last credits. Without this, credits arriving at a closed sender
  // turn into a reset that can cost this side unread frames.
  void finish() override {
    ::shutdown(fd_.get(), SHUT_WR);
    finished_ = true;
  }

  void shutdown() override {
    shut_down_.store(true, std::memory_order_release);
    ::shutdown(fd_.get(), SHUT_RDWR);
  }

  int wait_fd() const override { return fd_.get(); }
  int poll_period_ms() const override {
    return opts_.tcp.rx_select ? std::max<int>(1, (opts_.tcp.poll_timeout_us + 999) / 1000) : -1;
  }
  // A socket is readable while anything is unread (the owner's epoll is
  // level-triggered). rx_select keeps the study's look-then-read loop.
  bool drained() const override {
    return drained_ && carry_begin_ == carry_end_ && !opts_.tcp.rx_select;
  }
  bool any_thread_gives_back() const override { return true; }
  LinkStats stats() const override { return stats_.snapshot(); }

 private:
  Status fail(std::string msg) { return fail(Status::Error(std::move(msg))); }
  Status fail(Status st) {
    error_ = std::move(st);
    ::shutdown(fd_.get(), SHUT_RDWR);
    return error_;
  }

  Status closed_error(size_t partial, size_t frame_len) {
    if (shut_down_.load(std::memory_order_acquire)) return fail(fmt::format("{}: receive shut down", link_));
    if (partial > 0)
      return fail(fmt::format(
          "{}: frame {} at byte {} cut off: {} of {} bytes arrived, then the upstream closed",
          link_, frames_, frame_offset_, partial, frame_len));
    return fail(fmt::format("{}: upstream closed mid-stream after {} frames ({} bytes)", link_,
                            frames_, frame_offset_));
  }

  Status bad_frame(const Status& st) {
    return fail(Status::Protocol(
        fmt::format("{}: frame {} at byte {}: {}", link_, frames_, frame_offset_, st.message())));
  }

  // A frame arrived: it lands in the slot posted last (next_slot()), which
  // the receiver granted a credit for. None posted: the sender sent without
  // credit.
  Status take_slot(uint32_t* slot) {
    if (ready_.empty())
      return fail(Status::Protocol(
          fmt::format("{}: frame {} at byte {} sent without credit: the receiver granted {}", link_,
                      frames_, frame_offset_, posted_)));
    *slot = ready_.back();
    ready_.pop_back();
    return {};
  }
  uint32_t next_slot() const { return ready_.back(); }

  void count_frame(const FrameHeader& h) {
    stats_.frames.add(1);
    stats_.bytes.add(sizeof(FrameHeader) + h.payload_bytes);
    ++frames_;
    frame_offset_ += sizeof(FrameHeader) + h.payload_bytes;
  }

  Arrival arrival(const FrameHeader& h, uint32_t slot, uint32_t bytes) {
    const bool end = h.kind == static_cast<uint16_t>(FrameKind::kEnd);
    count_frame(h);
    if (end) ended_ = true;
    return Arrival{slot, end ? FrameKind::kEnd : FrameKind::kEvents, bytes, end ? 0u : h.events};
  }

  // rx_select: look before the read (the study's select() loop); false in
  // *go when nothing is there.
  Status look(bool* go) {
    *go = true;
    if (!opts_.tcp.rx_select) return {};
    pollfd p{fd_.get(), POLLIN, 0};
    int r = ::poll(&p, 1, 0);
    stats_.syscalls.add(1);
    if (r < 0 && errno != EINTR) return fail(fmt::format("{}: poll failed: {}", link_, errno_text(errno)));
    *go = r > 0;
    return {};
  }

  // sg: HEADER (16 bytes into hdr_) / PAYLOAD (into the slot). One recvmsg of
  // [rest of payload, next header] per frame in steady state. At a frame
  // boundary (after a drain, so at low rates before every frame) the read is
  // [header, first kSpeculate bytes of the next posted slot]: a small frame
  // then costs one recvmsg, not two. What such a read takes past its frame
  // (the next frames' first bytes) is kept in carry_ and consumed before the
  // socket is read again.
  Status poll_sg(std::span<Arrival> out, size_t* n) {
    // *n counts as it goes: frames that arrived whole before an error are
    // still handed out (the receiver keeps the error for its next poll).
    size_t& k = *n;
    k = 0;
    while (k < out.size() && !ended_) {
      iovec iov[2];
      int cnt = 0;
      bool speculate = false;
      if (in_payload_) {
        iov[cnt++] = {pool_.slot(cur_slot_) + payload_got_, cur_.payload_bytes - payload_got_};
        if (cur_.kind != static_cast<uint16_t>(FrameKind::kEnd)) iov[cnt++] = {hdr_, sizeof hdr_};
      } else {
        iov[cnt++] = {hdr_ + hdr_got_, sizeof hdr_ - hdr_got_};
        if (hdr_got_ == 0 && !ready_.empty() && carry_begin_ == carry_end_) {
          speculate = true;
          iov[cnt++] = {pool_.slot(next_slot()),
                        std::min<size_t>(kSpeculate, pool_.slot_bytes())};
        }
      }
      size_t want = 0;
      for (int i = 0; i < cnt; ++i) want += iov[i].iov_len;
      size_t got;
      const bool from_carry = carry_begin_ < carry_end_;
      if (from_carry) {
        got = scatter(iov, cnt, carry_ + carry_begin_, carry_end_ - carry_begin_);
        carry_begin_ += got;
        if (carry_begin_ == carry_end_) carry_begin_ = carry_end_ = 0;
      } else {
        bool go;
        Status st = look(&go);
        if (!st) return st;
        if (!go) break;
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = cnt;
        ssize_t r = ::recvmsg(fd_.get(), &m, read_flags(k));
        stats_.syscalls.add(1);
        if (r < 0) {
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            drained_ = true;
            break;
          }
          if (shut_down_.load(std::memory_order_acquire)) return closed_error(0, 0);
          return fail(fmt::format("recvmsg failed on {}: {}", link_, errno_text(errno)));
        }
        if (r == 0) {
          if (in_payload_)
            return closed_error(sizeof(FrameHeader) + payload_got_, sizeof(FrameHeader) + cur_.payload_bytes);
          return closed_error(hdr_got_, sizeof(FrameHeader));
        }
        got = static_cast<size_t>(r);
      }
      const size_t read = got;
      if (speculate && got > sizeof hdr_) {
        // A whole header, and the payload's first bytes already in the slot
        // it names (the next posted one, which take_slot hands out).
        got -= sizeof hdr_;
        Status st = begin_frame();
        if (!st) return st;
        const size_t take = std::min<size_t>(got, cur_.payload_bytes);
        payload_got_ = take;
        if (got > take) {  // past this frame: keep for the next frames
          std::memcpy(carry_, pool_.slot(cur_slot_) + take, got - take);
          carry_begin_ = 0;
          carry_end_ = got - take;
        }
        if (payload_got_ == cur_.payload_bytes) {
          out[k++] = arrival(cur_, cur_slot_, cur_.payload_bytes);
          in_payload_ = false;
        }
      } else if (in_payload_) {
        size_t take = std::min<size_t>(got, cur_.payload_bytes - payload_got_);
        payload_got_ += take;
        got -= take;
        if (payload_got_ == cur_.payload_bytes) {
          out[k++] = arrival(cur_, cur_slot_, cur_.payload_bytes);
          in_payload_ = false;
          hdr_got_ = got;  // the rest went into hdr_ from its start
        }
      } else {
        hdr_got_ += got;
      }
      if (!in_payload_ && hdr_got_ == sizeof hdr_) {
        Status st = begin_frame();
        if (!st) return st;
      }
      if (!from_carry && read < want) {  // the socket is drained
        drained_ = true;
        break;
      }
    }
    *n = k;
    return {};
  }

  // hdr_ holds a whole header: check it and take the slot its payload goes to.
  Status begin_frame() {
    Status st = decode_frame_header(hdr_, lim_, &cur_);
    if (!st) return bad_frame(st);
    st = take_slot(&cur_slot_);
    if (!st) return st;
    in_payload_ = true;
    payload_got_ = 0;
    hdr_got_ = 0;
    return {};
  }

  // Copies up to n bytes from src into the iovecs, in order; returns how many.
  static size_t scatter(const iovec* iov, int cnt, const std::byte* src, size_t n) {
    size_t done = 0;
    for (int i = 0; i < cnt && done < n; ++i) {
      const size_t c = std::min(iov[i].iov_len, n - done);
      std::memcpy(iov[i].iov_base, src + done, c);
      done += c;
    }
    return done;
  }

  // copy / capnp: each complete frame in buf_ is copied (or rebuilt) into
  // the next posted slot.
  Status parse(std::span<Arrival> out, size_t* k) {
    std::byte* buf = reinterpret_cast<std::byte*>(buf_.get());
    while (*k < out.size() && !ended_) {
      const size_t avail = end_ - begin_;
      if (avail < sizeof(FrameHeader)) break;
      FrameHeader h;
      Status st = decode_frame_header(buf + begin_, lim_, &h);
      if (!st) return bad_frame(st);
      if (avail < sizeof(FrameHeader) + h.payload_bytes) break;
      const std::byte* payload = buf + begin_ + sizeof(FrameHeader);
      uint32_t slot = kNoSlot;
      st = take_slot(&slot);
      if (!st) return st;
      uint32_t bytes = h.payload_bytes;
      if (h.kind == static_cast<uint16_t>(FrameKind::kCapnpEvent)) {
        uint64_t tuples = 0;
        st = decode_capnp_event(payload, h.payload_bytes, lim_,
                                reinterpret_cast<std::byte*>(scratch_.get()), pool_.slot(slot),
                                pool_.slot_bytes(), &bytes, &tuples);
        if (!st) return bad_frame(st);
        h.kind = static_cast<uint16_t>(FrameKind::kEvents);  // rebuilt: one event
      } else {
        std::memcpy(pool_.slot(slot), payload, h.payload_bytes);
      }
      begin_ += sizeof(FrameHeader) + h.payload_bytes;
      out[(*k)++] = arrival(h, slot, bytes);
    }
    return {};
  }

  // copy / capnp: read read_bytes at a time into buf_, parse what is whole.
  Status poll_buffered(std::span<Arrival> out, size_t* n) {
    std::byte* buf = reinterpret_cast<std::byte*>(buf_.get());
    size_t& k = *n;  // as in poll_sg: what arrived before an error is kept
    k = 0;
    Status st = parse(out, &k);
    while (st && k < out.size() && !ended_) {
      // Keep the partial frame at the front so a whole frame always fits.
      if (begin_ == end_) {
        begin_ = end_ = 0;
      } else if (buf_cap_ - end_ < opts_.tcp.read_bytes) {
        std::memmove(buf, buf + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      const size_t ask = std::min<size_t>(std::max<uint32_t>(opts_.tcp.read_bytes, 1), buf_cap_ - end_);
      bool go;
      st = look(&go);
      if (!st || !go) break;
      ssize_t r = ::recv(fd_.get(), buf + end_, ask, read_flags(k));
      stats_.syscalls.add(1);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          drained_ = true;
          break;
        }
        if (shut_down_.load(std::memory_order_acquire)) return closed_error(0, 0);
        return fail(fmt::format("recv failed on {}: {}", link_, errno_text(errno)));
      }
      if (r == 0) {
        const size_t partial = end_ - begin_;
        size_t frame_len = sizeof(FrameHeader);
        if (partial >= sizeof(FrameHeader)) {
          FrameHeader h;
          std::memcpy(&h, buf + begin_, sizeof h);
          frame_len += h.payload_bytes;
        }
        return closed_error(partial, frame_len);
      }
      end_ += r;
      st = parse(out, &k);
      if (static_cast<size_t>(r) < ask) {
        // Drained, unless what it read holds more whole frames than out took.
        drained_ = st && k < out.size();
        break;
      }
    }
    if (!st) return st;
    *n = k;
    return {};
  }

  Fd fd_;
  LinkOptions opts_;
  SlotPool& pool_;
  FrameLimits lim_;
  std::string link_;
  Status error_;
  bool ended_ = false;
  bool finished_ = false;  // finish(): credits and FIN written, the socket half-closed
  bool drained_ = false;  // the last read found the socket empty
  bool wait_next_ = false;  // wait_in_next_poll() asked: the next poll's...
  bool wait_now_ = false;   // ...first read waits, if nothing arrived before it

  // MSG_DONTWAIT, but for the first read of a poll the owner asked to wait
  // in, when nothing came before it (with frames in hand it returns them).
  int read_flags(size_t arrived) {
    const int f = wait_now_ && arrived == 0 ? 0 : MSG_DONTWAIT;
    wait_now_ = false;
    return f;
  }
  std::atomic<bool> shut_down_{false};
  uint64_t frames_ = 0;
  uint64_t frame_offset_ = 0;  // stream byte offset of the frame being read
  Stats stats_;

  // Posted slots, a stack: a frame lands in the slot posted last. That is
  // the one whose bytes were sent on (or dropped) last, so still in cache;
  // in posting order, with 64 slots of 32 KiB, a slot came round again only
  // after the whole pool (2 MiB) had been written, and was cold: tcp-opt
  // ran 1.10x faster this way, with acks as without (4 processes on 2 cores).
  std::vector<uint32_t> ready_;  // capacity opts.slots, reserved once
  uint64_t posted_ = 0;

  // sg state
  alignas(16) std::byte hdr_[sizeof(FrameHeader)];
  size_t hdr_got_ = 0;
  bool in_payload_ = false;
  FrameHeader cur_{};
  uint32_t cur_slot_ = kNoSlot;
  size_t payload_got_ = 0;
  // Bytes a speculative read took past its frame: the next frames' start.
  static constexpr size_t kSpeculate = 4096;
  std::byte carry_[kSpeculate];
  size_t carry_begin_ = 0, carry_end_ = 0;

  // copy / capnp state (uint64_t arrays: 8-byte aligned for capnp)
  std::unique_ptr<uint64_t[]> buf_;
  std::unique_ptr<uint64_t[]> scratch_;
  size_t buf_cap_ = 0, begin_ = 0, end_ = 0;
};

// ---------------------------------------------------------------------------
// Sending end

class TcpTx : public TxCarrier {
 public:
  TcpTx(Fd fd, const LinkOptions& opts, SlotPool& pool, std::string link)
      : fd_(std::move(fd)), opts_(opts), pool_(pool), link_(std::move(link)) {}

  // Reads the credit frames that arrived (or waits for some).
  Status credits(bool block, uint32_t* got, uint64_t* acked) override {
    *got = 0;
    for (;;) {
      ssize_t r = ::recv(fd_.get(), cbuf_ + chave_, sizeof cbuf_ - chave_, block ? 0 : MSG_DONTWAIT);
      stats_.syscalls.add(1);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
        return Status::Error(fmt::format("recv of credits failed on {}: {}", link_, errno_text(errno)));
      }
      if (r == 0) return Status::Error(fmt::format("{}: receiver closed the link", link_));
      chave_ += r;
      size_t off = 0;
      uint64_t sum = 0;
      std::string err = read_credits(cbuf_, chave_, &off, &sum, acked);
      if (!err.empty()) return Status::Protocol(fmt::format("{}: {}", link_, err));
      // One recv holds at most sizeof cbuf_ / 16 messages of at most
      // kMaxCreditsPerMessage each: the sum fits, and the gate checks it.
      *got += static_cast<uint32_t>(std::min<uint64_t>(sum, UINT32_MAX - *got));
      std::memmove(cbuf_, cbuf_ + off, chave_ - off);
      chave_ -= off;
      if (!block || *got > 0) return {};
    }
  }

  // FIN after everything written, then read (and drop) credits until the
  // receiver half-closes once its END slot came back. Closing with credits
  // unread, or before late credits arrive, would send a reset that can
  // discard frames the receiver has not read yet. Bounded by timeout_ms for
  // a receiver that never gives its END back.
  Status close(uint32_t timeout_ms) override {
    Status st = stop();
    if (fd_.valid() && st) {
      ::shutdown(fd_.get(), SHUT_WR);
      set_recv_timeout(fd_.get(), timeout_ms);
      char sink[512];
      while (::recv(fd_.get(), sink, sizeof sink, 0) > 0) {
      }
    }
    std::lock_guard lk(fd_mu_);  // against interrupt()
    fd_.reset();
    return st;
  }

  // Shut the socket first: a sender thread blocked waiting for credits wakes.
  void abort() override {
    if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
    (void)stop();
  }
  void interrupt() override {
    std::lock_guard lk(fd_mu_);
    if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
  }

  int wait_fd() const override { return fd_.get(); }
  LinkStats stats() const override { return stats_.snapshot(); }

 protected:
  // Stops whatever the encoding keeps running (the async thread).
  virtual Status stop() { return {}; }

  Status release(uint32_t slot) {
    if (slot == kNoSlot) return {};
    Status st = pool_.release(slot);
    if (!st) return Status::Error(fmt::format("{}: {}", link_, st.message()));
    return {};
  }

  Fd fd_;
  std::mutex fd_mu_;  // fd_'s reset (close) against interrupt() from another thread
  LinkOptions opts_;
  SlotPool& pool_;
  std::string link_;
  Stats stats_;
  std::byte cbuf_[512];
  size_t chave_ = 0;
};

// sg: gathers frame headers and slot bytes into as few sendmsg() calls as
// IOV_MAX allows; a slot is released once sendmsg has taken its bytes.
class SgTx final : public TcpTx {
 public:
  using TcpTx::TcpTx;
  size_t max_pieces() const override { return kIovMax - 1; }

  Status frame(FrameKind kind, const Piece* p, size_t n, uint32_t payload, uint32_t events) override {
    if (niov_ + 1 + n > kIovMax) {
      Status st = flush();
      if (!st) return st;
    }
    FrameHeader& h = hdrs_[niov_];
    h = FrameHeader{kFrameMagic, static_cast<uint16_t>(kind), 0, payload, events};
    push(&h, sizeof h, kNoSlot);
    for (size_t i = 0; i < n; ++i) push(p[i].p, p[i].len, p[i].release);
    stats_.frames.add(1);
    return {};
  }

  Status flush() override {
    // i (head_) survives an error: entries before it were released.
    size_t& i = head_;
    while (i < niov_) {
      msghdr m{};
      m.msg_iov = iov_ + i;
      m.msg_iovlen = niov_ - i;
      ssize_t r = ::sendmsg(fd_.get(), &m, MSG_NOSIGNAL);
      stats_.syscalls.add(1);
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::Error(fmt::format("sendmsg failed on {}: {}", link_, errno_text(errno)));
      }
      stats_.bytes.add(r);
      size_t left = r;
      while (i < niov_ && left >= iov_[i].iov_len) {
        left -= iov_[i].iov_len;
        Status st = release(release_[i]);
        if (!st) return st;
        ++i;
      }
      if (left > 0) {
        iov_[i].iov_base = static_cast<char*>(iov_[i].iov_base) + left;
        iov_[i].iov_len -= left;
      }
    }
    niov_ = head_ = 0;
    return {};
  }

  void unreleased(std::vector<uint32_t>* out) const override {
    for (size_t j = head_; j < niov_; ++j)
      if (release_[j] != kNoSlot) out->push_back(release_[j]);
  }

 private:
  void push(const void* p, size_t len, uint32_t release) {
    iov_[niov_] = iovec{const_cast<void*>(p), len};
    release_[niov_] = release;
    ++niov_;
  }

  // Headers are indexed like the iovec that points at them, so a flush
  // frees both at once; every frame has at least one iovec for its header.
  FrameHeader hdrs_[kIovMax];
  iovec iov_[kIovMax];
  uint32_t release_[kIovMax];
  size_t niov_ = 0, head_ = 0;
};

// copy / capnp: frames are written into chunks (contiguous buffers), then sent
// with plain send() calls. With async_send a bounded queue of chunks sits
// between the send stage and a sender thread.
class BufferedTx final : public TcpTx {
 public:
  BufferedTx(Fd fd, const LinkOptions& opts, SlotPool& pool, std::string link, uint32_t peer_slot_bytes)
      : TcpTx(std::move(fd), opts, pool, std::move(link)) {
    uint32_t max_payload = peer_slot_bytes;
    if (opts_.tcp.encoding == Encoding::kCapnp) {
      capnp_bound_ = capnp_event_bound_bytes(peer_slot_bytes, opts_.tuple_bytes);
      max_payload = std::max<uint32_t>(capnp_bound_, peer_slot_bytes);
      scratch_.reset(new uint64_t[capnp_bound_ / 8 + 1]());
    }
    max_frame_ = sizeof(FrameHeader) + max_payload;
    chunk_bytes_ = 4 * max_frame_;
    const size_t nchunks = opts_.tcp.async_send ? 8 : 1;
    chunks_.resize(nchunks);
    for (auto& c : chunks_) {
      c.buf.reset(new std::byte[chunk_bytes_]);
      c.frame_end.resize(chunk_bytes_ / sizeof(FrameHeader) + 1);  // sized once: no allocation later
    }
    if (opts_.tcp.async_send) {
      full_ = std::make_unique<SpscRing<uint32_t>>(16);
      free_ = std::make_unique<SpscRing<uint32_t>>(16);
      for (uint32_t i = 1; i < nchunks; ++i) free_->try_push(i);
      thread_ = std::thread([this] { drain_loop(); });
    }
  }

  ~BufferedTx() override { (void)stop(); }

  size_t max_pieces() const override { return SIZE_MAX; }
  // Frames are copied (or serialized) into a chunk at once, which frees their
  // slots; each frame's credit is taken when the chunk is written, by the
  // thread that writes it (the send stage, or with async_send the queue's
  // thread), so the copies run ahead of the credits as Borealis' did.
  bool takes_credits(CreditGate* gate) override {
    gate_ = gate;
    return true;
  }
  uint32_t max_events_per_frame() const override {
    return opts_.tcp.encoding == Encoding::kCapnp ? 1 : UINT32_MAX;
  }

  Status frame(FrameKind kind, const Piece* p, size_t n, uint32_t payload, uint32_t events) override {
    Status st = thread_error();
    if (!st) return st;
    if (kind == FrameKind::kEvents && opts_.tcp.encoding == Encoding::kCapnp)
      return capnp_frame(p, n);
    st = room(sizeof(FrameHeader) + payload);
    if (!st) return st;
    Chunk& c = chunks_[cur_];
    const FrameHeader h{kFrameMagic, static_cast<uint16_t>(kind), 0, payload, events};
    std::memcpy(c.buf.get() + c.used, &h, sizeof h);
    c.used += sizeof h;
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(c.buf.get() + c.used, p[i].p, p[i].len);
      c.used += p[i].len;
      st = release(p[i].release);  // copied: the slot's bytes are no longer needed
      if (!st) return st;
    }
    c.frame_end[c.frames++] = c.used;
    stats_.frames.add(1);
    return {};
  }

  // Sends what it was given now: no waiting for more to fill the chunk.
  Status flush() override { return hand_off(); }

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> buf;
    size_t used = 0;
    std::vector<size_t> frame_end;  // where each frame ends
    size_t frames = 0;
  };

  Status stop() override {
    Status st = thread_error();
    if (thread_.joinable()) {
      full_->close();
      thread_.join();
      if (st) st = thread_error();
    }
    return st;
  }

  Status room(size_t need) {
    if (chunks_[cur_].used + need <= chunk_bytes_) return {};
    return hand_off();
  }

  // One event, one Cap'n Proto message, one frame.
  Status capnp_frame(const Piece* p, size_t n) {
    if (n != 1)
      return Status::Error(fmt::format("{}: a capnp frame of {} pieces (one event expected)", link_, n));
    Status st = room(max_frame_);
    if (!st) return st;
    Chunk& c = chunks_[cur_];
    size_t len = 0;
    st = encode_capnp_event(p[0].p, reinterpret_cast<std::byte*>(scratch_.get()), capnp_bound_,
                            c.buf.get() + c.used + sizeof(FrameHeader), capnp_bound_, &len);
    if (!st) return Status::Error(fmt::format("{}: {}", link_, st.message()));
    const FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kCapnpEvent), 0,
                        static_cast<uint32_t>(len), 1};
    std::memcpy(c.buf.get() + c.used, &h, sizeof h);
    c.used += sizeof h + len;
    c.frame_end[c.frames++] = c.used;
    stats_.frames.add(1);
    return release(p[0].release);
  }

  // The current chunk is complete: write it (sync) or queue it (async).
  Status hand_off() {
    Chunk& c = chunks_[cur_];
    if (c.used == 0) return {};
    if (!opts_.tcp.async_send) {
      Status st = write_chunk(c);
      c.used = c.frames = 0;
      return st;
    }
    full_->push(cur_, opts_.wait);
    uint32_t next = kNoSlot;
    if (free_->pop_n(&next, 1, opts_.wait) != 1) {
      Status st = thread_error();
      return st ? Status::Error(fmt::format("{}: send queue closed", link_)) : st;
    }
    cur_ = next;
    return {};
  }

  // Writes a chunk's frames as credits allow: one credit per frame.
  Status write_chunk(Chunk& c) {
    gate_->new_batch();
    size_t done = 0, off = 0;
    while (done < c.frames) {
      uint32_t k = 0;
      Status st = gate_->take(static_cast<uint32_t>(c.frames - done), &k, [] { return Status(); });
      if (!st) return st;
      const size_t end = c.frame_end[done + k - 1];
      st = write_all(fd_.get(), c.buf.get() + off, end - off, link_, &stats_);
      if (!st) return st;
      off = end;
      done += k;
    }
    return {};
  }

  // The sender thread: owns the socket's write side and the credits.
  void drain_loop() {
    uint32_t idx;
    while (full_->pop_n(&idx, 1, opts_.wait) == 1) {
      Chunk& c = chunks_[idx];
      Status st = write_chunk(c);
      c.used = c.frames = 0;
      if (!st) {
        {
          std::lock_guard<std::mutex> lk(mu_);
          thread_error_ = st;
        }
        failed_.store(true, std::memory_order_release);
        ::shutdown(fd_.get(), SHUT_RDWR);
        free_->close();  // unblocks a send() waiting for a chunk
        return;
      }
      free_->push(idx, opts_.wait);
    }
  }

  Status thread_error() {
    if (!failed_.load(std::memory_order_acquire)) return {};
    std::lock_guard<std::mutex> lk(mu_);
    return thread_error_;
  }

  size_t max_frame_ = 0, chunk_bytes_ = 0, capnp_bound_ = 0;
  std::unique_ptr<uint64_t[]> scratch_;  // capnp builder's first segment, zeroed
  std::vector<Chunk> chunks_;
  uint32_t cur_ = 0;
  std::unique_ptr<SpscRing<uint32_t>> full_, free_;
  std::thread thread_;
  std::mutex mu_;
  Status thread_error_;
  std::atomic<bool> failed_{false};
  CreditGate* gate_ = nullptr;
};

// ---------------------------------------------------------------------------
// Listener

class TcpListener final : public Listener {
 public:
  TcpListener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot)
      : opts_(opts), pool_(pool), first_slot_(first_slot) {}

  Status bind() {
    const std::string me = opts_.to.empty() ? "receiver" : opts_.to;
    if (Status st = check_link_fits_pool(opts_, pool_, first_slot_); !st) return st;
    if (opts_.tuple_bytes < kMinTupleBytes || opts_.slot_bytes < kEventHeaderBytes + opts_.tuple_bytes)
      return Status::Error(fmt::format("{}: a {}-byte slot cannot hold an event of {}-byte tuples",
                                       me, opts_.slot_bytes, opts_.tuple_bytes));
    SocketOptions so;
    so.congestion = opts_.tcp.congestion;
    so.rto_max_ms = opts_.tcp.rto_max_ms;
    so.keepalive_s = opts_.tcp.keepalive_s;
    so.handshake_timeout_ms = opts_.connect_timeout_ms;
    Status st;
    acceptor_ = Acceptor::bind(opts_.bind_address(), opts_.port, so, me, &st);
    if (!acceptor_) return st;
    return {};
  }

  std::unique_ptr<Receiver> accept(Status* st) override {
    std::string sender = opts_.from;
    std::mutex sender_mu;
    const uint16_t port = acceptor_->port();
    auto handshake = [&](int fd, const std::string& peer, std::string* why) {
      std::string name;
      Verdict v = answer_hello(fd, opts_, link_name(opts_, port) + " from " + peer, &name, why);
      // Handshakes run side by side: only the one kept may name the sender.
      std::lock_guard lk(sender_mu);
      if (v == Verdict::kAccept && !name.empty() && sender == opts_.from) sender = name;
      return v;
    };
    int fd = acceptor_->accept(handshake, st);
    if (fd < 0) return nullptr;
    LinkOptions o = opts_;
    o.from = sender;
    const std::string link = link_name(o, port);
    auto rx = std::make_unique<TcpRx>(Fd(fd), opts_, pool_, link);
    for (uint32_t i = 0; i < opts_.slots; ++i) {
      Status p = rx->post(first_slot_ + i);
      if (!p) {
        *st = p;
        return nullptr;
      }
    }
    *st = Status();
    return std::make_unique<Receiver>(opts_, std::move(rx), pool_, first_slot_, link);
  }

  void shutdown() override { acceptor_->shutdown(); }
  uint16_t port() const override { return acceptor_->port(); }
  void turn_away(bool on) override {
    if (!on) return acceptor_->stop_turning_away();
    const std::string link = link_name(opts_, acceptor_->port());
    acceptor_->turn_away([this, link](int fd, const std::string& peer, std::string* why) {
      refuse_hello(fd, opts_.to, link + " from " + peer,
                        link + kLinkBusy, why);
      return Verdict::kRefuse;
    });
  }


 private:
  LinkOptions opts_;
  SlotPool& pool_;
  uint32_t first_slot_;
  std::unique_ptr<Acceptor> acceptor_;
};

}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool,
                                        uint32_t first_slot, Status* st) {
  auto l = std::make_unique<TcpListener>(opts, pool, first_slot);
  *st = l->bind();
  if (!st->ok()) return nullptr;
  return l;
}

namespace {

// Connects and shakes hands, once.
Status connect_link_once(const LinkOptions& opts, SlotPool& pool, const std::string& link,
                         uint32_t timeout_ms, Connection* c, bool* vanished) {
  SocketOptions so;
  so.congestion = opts.tcp.congestion;
  so.rto_max_ms = opts.tcp.rto_max_ms;
  so.keepalive_s = opts.tcp.keepalive_s;
  so.handshake_timeout_ms = opts.connect_timeout_ms;
  so.stop = opts.stop;
  int raw = -1;
  Status st = connect_with_retry(opts.host, opts.port, timeout_ms, so, link, &raw);
  if (!st) return st;
  Fd fd(raw);
  ReplyInfo reply;
  st = ask_hello(fd.get(), opts, link, &reply, vanished);
  if (!st) return st;
  if (opts.tcp.encoding == Encoding::kSg)
    c->carrier = std::make_unique<SgTx>(std::move(fd), opts, pool, link);
  else
    c->carrier = std::make_unique<BufferedTx>(std::move(fd), opts, pool, link, reply.slot_bytes);
  c->credits = reply.credits;
  c->peer_slot_bytes = reply.slot_bytes;
  return {};
}

// Connects and shakes hands, again while the receiver vanishes mid-handshake.
Status connect_link(const LinkOptions& opts, SlotPool& pool, const std::string& link,
                    uint32_t timeout_ms, Connection* c) {
  return connect_again_while_vanished(timeout_ms, opts.stop, link, [&](uint32_t left, bool* vanished) {
    return connect_link_once(opts, pool, link, left, c, vanished);
  });
}

}  // namespace

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool, Status* st) {
  std::string link = link_name(opts, opts.port);
  if (opts.tcp.async_send && opts.tcp.encoding == Encoding::kSg) {
    *st = Status::Error(fmt::format(
        "{}: async_send is not supported with the sg encoding (it would keep slots until the "
        "queue drains); use copy or capnp",
        link));
    return nullptr;
  }
  if (opts.acks && opts.tcp.async_send) {
    *st = Status::Error(fmt::format(
        "{}: acks are not supported with async_send (its queue's thread reads the credits, "
        "and with them the acknowledgements); turn one off",
        link));
    return nullptr;
  }
  Connection c;
  *st = connect_link(opts, pool, link, opts.connect_timeout_ms, &c);
  if (!st->ok()) return nullptr;
  auto s = std::make_unique<Sender>(opts, std::move(c.carrier), pool, c.credits, c.peer_slot_bytes, link);
  // A sender with acks connects again with the same, stop or not
  // (LinkOptions::stop is for the first connect: frames wait on a reconnect),
  // unless the process is stopping at once (LinkOptions::abort).
  if (opts.acks) {
    LinkOptions again = opts;
    again.stop = opts.abort;
    s->set_connector([again, &pool, link](uint32_t timeout_ms, Connection* c) -> Status {
      return connect_link(again, pool, link, timeout_ms, c);
    });
  }
  return s;
}

}  // namespace sluice::tcp

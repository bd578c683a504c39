// The tcp transport.
//
// Lifecycle of a link:
//   1. Listener binds host:port at construction (a port in use fails at start).
//   2. Sender connects (retrying until connect_timeout_ms) and sends Hello; the
//      receiver checks it against its own options and answers HelloReply with
//      the initial credits (one per slot) or the reason it refuses.
//   3. Data: frames (FrameHeader + payload), sender -> receiver; each frame's
//      payload lands in one receiver slot and costs one credit.
//   4. Credits: CreditFrame, receiver -> sender on the same socket, written by
//      the thread that calls Receiver::release() (the receive thread never
//      writes after the handshake, so each direction has one writer).
//   5. END: a kEnd frame after everything else; receive() hands it out as a
//      kDescEnd descriptor, then returns *n = 0.
//
// Encodings:
//   sg    - the sender gathers frame headers and slot bytes into sendmsg()
//           calls; the receiver reads payloads straight into slots with one
//           recvmsg() of [rest of payload, next frame header] per frame.
//   copy  - both ends go through a contiguous buffer (memcpy).
//   capnp - one Cap'n Proto Event message per event, rebuilt on receipt.
// async_send (copy, capnp) puts a bounded queue and a thread behind send();
// rx_select polls with a timeout before every read. Both model the study's
// `original` configuration.
#include "transport/tcp/tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "transport/tcp/codec.h"

namespace sluice::tcp {
namespace {

constexpr size_t kIovMax = 1024;  // IOV_MAX on Linux

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

std::string name_or(const std::string& s, const char* fallback) { return s.empty() ? fallback : s; }

std::string link_name(const std::string& from, const std::string& to, const std::string& host,
                      uint16_t port) {
  return fmt::format("link {} -> {} ({}:{})", from, to, host, port);
}

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A statistic written by one thread and read by any: relaxed load+store, no
// locked instruction on the data path.
struct Counter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

struct Stats {
  Counter frames, bytes, credit_waits, syscalls;
  LinkStats snapshot() const {
    LinkStats s;
    s.frames = frames.get();
    s.bytes = bytes.get();
    s.credit_waits = credit_waits.get();
    s.syscalls = syscalls.get();
    return s;
  }
};

Status set_congestion(int fd, const LinkOptions& o, const std::string& who) {
  if (o.tcp.congestion.empty()) return {};
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o.tcp.congestion.data(), o.tcp.congestion.size()) != 0)
    return Status::Error(fmt::format("{}: setsockopt(TCP_CONGESTION, '{}') failed: {}", who,
                                     o.tcp.congestion, errno_text(errno)));
  return {};
}

Status set_nodelay(int fd, const std::string& who) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    return Status::Error(fmt::format("{}: setsockopt(TCP_NODELAY) failed: {}", who, errno_text(errno)));
  return {};
}

// Handshake reads must not hang on a peer that connects and says nothing.
void set_recv_timeout(int fd, uint32_t ms) {
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

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

// Reads exactly n bytes (handshake only). *eof is set when the peer closed.
Status read_all(int fd, std::byte* p, size_t n, const std::string& link, const char* what) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return Status::Error(fmt::format("{}: timed out waiting for the {}", link, what));
      return Status::Error(fmt::format("recv failed on {} reading the {}: {}", link, what,
                                       errno_text(errno)));
    }
    if (r == 0)
      return Status::Error(fmt::format("{}: peer closed the connection during the {} ({} of {} bytes)",
                                       link, what, got, n));
    got += r;
  }
  return {};
}

// Reads one handshake message (prefix + flat array) into buf.
Status read_handshake(int fd, std::byte* buf, uint32_t* len, const std::string& link,
                      const char* what) {
  Status st = read_all(fd, buf, kHandshakePrefixBytes, link, what);
  if (!st) return st;
  st = decode_handshake_prefix(buf, len);
  if (!st) return Status::Error(fmt::format("{}: {}: {}", link, what, st.message()));
  return read_all(fd, buf, *len, link, what);
}

std::string sockaddr_text(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return fmt::format("{}:{}", host, port);
}

struct AddrInfo {
  addrinfo* ai = nullptr;
  ~AddrInfo() {
    if (ai) freeaddrinfo(ai);
  }
};

Status resolve(const std::string& host, uint16_t port, bool passive, AddrInfo* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  std::string p = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), p.c_str(), &hints, &out->ai);
  if (rc != 0 || !out->ai)
    return Status::Error(fmt::format("cannot resolve {}: {}", host, gai_strerror(rc)));
  return {};
}

// Wakes up every poll_timeout_us to look at the socket, the way the study's
// receive task does; *ready is false on a timeout.
Status poll_readable(int fd, uint32_t timeout_us, bool* ready, Stats* stats) {
  pollfd p{fd, POLLIN, 0};
  timespec ts{static_cast<time_t>(timeout_us / 1000000), static_cast<long>(timeout_us % 1000000) * 1000};
  int r = ppoll(&p, 1, &ts, nullptr);
  stats->syscalls.add(1);
  if (r < 0) {
    if (errno == EINTR) {
      *ready = false;
      return {};
    }
    return Status::Error(fmt::format("ppoll failed: {}", errno_text(errno)));
  }
  *ready = r > 0;
  return {};
}

// ---------------------------------------------------------------------------
// Receiver

class TcpReceiver final : public Receiver {
 public:
  TcpReceiver(Fd fd, const LinkOptions& opts, SlotPool& pool, std::string link,
              std::string peer_name)
      : fd_(std::move(fd)),
        opts_(opts),
        pool_(pool),
        lim_(frame_limits(opts)),
        link_(std::move(link)),
        peer_(std::move(peer_name)),
        batch_(opts.effective_credit_batch()) {
    if (opts_.tcp.encoding != Encoding::kSg) {
      // Room for one whole frame plus one read behind it; sized once here.
      size_t max_payload = opts_.tcp.encoding == Encoding::kCapnp ? lim_.capnp_bytes : lim_.slot_bytes;
      size_t read = std::max<size_t>(opts_.tcp.read_bytes, 64);
      buf_cap_ = (sizeof(FrameHeader) + max_payload + read + 7) / 8 * 8;
      buf_.reset(new uint64_t[buf_cap_ / 8]);
      if (opts_.tcp.encoding == Encoding::kCapnp) scratch_.reset(new uint64_t[max_payload / 8 + 1]);
    }
  }

  ~TcpReceiver() override = default;

  Status receive(std::span<Descriptor> out, size_t* n) override {
    *n = 0;
    if (!error_.ok()) return error_;
    if (ended_) return {};
    if (out.empty()) return {};
    Status st = opts_.tcp.encoding == Encoding::kSg ? receive_sg(out, n) : receive_buffered(out, n);
    return st;
  }

  void release(uint32_t slot) override {
    pool_.release(slot);
    // Single writer (this thread): a plain store, no locked instruction.
    released_.store(released_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    const bool end = slot == end_slot_.load(std::memory_order_acquire);
    if (++pending_credits_ < batch_ && !end) return;
    send_credits();
    // The END has passed through: half-close so the sender's close() sees
    // EOF after our last credits. Without this, credits arriving at a closed
    // sender turn into a reset that can cost this side unread frames.
    if (end) ::shutdown(fd_.get(), SHUT_WR);
  }

  void send_credits() {
    if (pending_credits_ == 0) return;
    CreditFrame c{kCreditMagic, pending_credits_};
    pending_credits_ = 0;
    const std::byte* p = reinterpret_cast<const std::byte*>(&c);
    size_t left = sizeof c;
    while (left > 0) {
      ssize_t r = ::send(fd_.get(), p, left, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      // A broken link is reported by receive(); the releasing stage has
      // nothing to do about it.
      if (r <= 0) return;
      p += r;
      left -= r;
    }
  }

  void shutdown() override {
    shut_down_.store(true, std::memory_order_release);
    ::shutdown(fd_.get(), SHUT_RDWR);
  }

  const std::string& peer() const override { return peer_; }
  LinkStats stats() const override { return stats_.snapshot(); }

 private:
  Status fail(std::string msg) {
    error_ = Status::Error(std::move(msg));
    // shutdown, not close: release() may still write credits on this fd.
    ::shutdown(fd_.get(), SHUT_RDWR);
    return error_;
  }

  Status closed_error(size_t partial, size_t frame_len) {
    if (shut_down_.load(std::memory_order_acquire))
      return fail(fmt::format("{}: receive shut down", link_));
    if (partial > 0)
      return fail(fmt::format(
          "{}: frame {} at byte {} cut off: {} of {} bytes arrived, then the upstream closed",
          link_, frames_, frame_offset_, partial, frame_len));
    return fail(fmt::format("{}: upstream closed mid-stream after {} frames ({} bytes)", link_,
                            frames_, frame_offset_));
  }

  Status bad_frame(const Status& st) {
    return fail(fmt::format("{}: frame {} at byte {}: {}", link_, frames_, frame_offset_,
                            st.message()));
  }

  // A frame arrived: it needs a slot the sender had a credit for.
  // The pool may hold more slots than this link granted credits for, so the
  // grant is checked as well: frames taken minus slots released.
  Status take_slot(uint32_t* slot) {
    const uint64_t released = released_.load(std::memory_order_acquire);
    *slot = frames_ - released >= opts_.slots ? kNoSlot : pool_.try_acquire();
    if (*slot == kNoSlot)
      return fail(fmt::format("{}: frame {} at byte {} sent without credit (no free slot)", link_,
                              frames_, frame_offset_));
    return {};
  }

  void count_frame(const FrameHeader& h) {
    stats_.frames.add(1);
    stats_.bytes.add(sizeof(FrameHeader) + h.payload_bytes);
    ++frames_;
    frame_offset_ += sizeof(FrameHeader) + h.payload_bytes;
  }

  // rx_select: poll before the read. Returns false in *go when the caller
  // should return what it has (timeout with frames in hand).
  Status before_read(size_t have, bool* go) {
    *go = true;
    if (!opts_.tcp.rx_select) return {};
    for (;;) {
      bool ready = false;
      // With frames in hand only look (timeout 0): waiting out the timeout
      // then would hold back frames that already arrived.
      Status st = poll_readable(fd_.get(), have > 0 ? 0 : opts_.tcp.poll_timeout_us, &ready, &stats_);
      if (!st) return fail(fmt::format("{}: {}", link_, st.message()));
      if (ready) return {};
      if (have > 0) {
        *go = false;
        return {};
      }
      if (shut_down_.load(std::memory_order_acquire))
        return fail(fmt::format("{}: receive shut down", link_));
    }
  }

  // sg: HEADER (16 bytes into hdr_) / PAYLOAD (into the slot). One recvmsg of
  // [rest of payload, next header] per frame in steady state.
  Status receive_sg(std::span<Descriptor> out, size_t* n) {
    size_t k = 0;
    while (k < out.size()) {
      iovec iov[2];
      int cnt = 0;
      if (in_payload_) {
        iov[cnt++] = {pool_.slot(cur_slot_) + payload_got_, cur_.payload_bytes - payload_got_};
        if (cur_.kind != static_cast<uint16_t>(FrameKind::kEnd)) iov[cnt++] = {hdr_, sizeof hdr_};
      } else {
        iov[cnt++] = {hdr_ + hdr_got_, sizeof hdr_ - hdr_got_};
      }
      size_t want = 0;
      for (int i = 0; i < cnt; ++i) want += iov[i].iov_len;
      bool go;
      Status st = before_read(k, &go);
      if (!st) return st;
      if (!go) break;
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = cnt;
      // Block only while nothing is in hand; then take what has arrived.
      int flags = (k == 0 && !opts_.tcp.rx_select) ? 0 : MSG_DONTWAIT;
      ssize_t r = ::recvmsg(fd_.get(), &m, flags);
      stats_.syscalls.add(1);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (k > 0) break;
          continue;
        }
        if (shut_down_.load(std::memory_order_acquire)) return closed_error(0, 0);
        return fail(fmt::format("recvmsg failed on {}: {}", link_, errno_text(errno)));
      }
      if (r == 0) {
        if (in_payload_)
          return closed_error(sizeof(FrameHeader) + payload_got_,
                              sizeof(FrameHeader) + cur_.payload_bytes);
        return closed_error(hdr_got_, sizeof(FrameHeader));
      }
      size_t got = static_cast<size_t>(r);
      if (in_payload_) {
        size_t take = std::min<size_t>(got, cur_.payload_bytes - payload_got_);
        payload_got_ += take;
        got -= take;
        if (payload_got_ == cur_.payload_bytes) {
          st = finish_sg_frame(&out[k]);
          if (!st) return st;
          ++k;
          in_payload_ = false;
          hdr_got_ = got;  // the rest went into hdr_ from its start
          if (ended_) break;
        }
      } else {
        hdr_got_ += got;
      }
      if (!in_payload_ && hdr_got_ == sizeof hdr_) {
        st = decode_frame_header(hdr_, lim_, &cur_);
        if (!st) return bad_frame(st);
        st = take_slot(&cur_slot_);
        if (!st) return st;
        in_payload_ = true;
        payload_got_ = 0;
        hdr_got_ = 0;
      }
      if (static_cast<size_t>(r) < want && k > 0) break;  // the socket is drained
    }
    *n = k;
    return {};
  }

  Status finish_sg_frame(Descriptor* d) {
    uint64_t tuples = 0;
    Status st = check_frame_payload(cur_, pool_.slot(cur_slot_), lim_, &tuples);
    if (!st) return bad_frame(st);
    fill(d, cur_, cur_slot_, cur_.payload_bytes, tuples);
    return {};
  }

  void fill(Descriptor* d, const FrameHeader& h, uint32_t slot, uint32_t bytes, uint64_t tuples) {
    const bool end = h.kind == static_cast<uint16_t>(FrameKind::kEnd);
    *d = Descriptor{slot, 0, bytes, end ? 0u : h.events, static_cast<uint32_t>(tuples),
                    end ? kDescEnd : 0u};
    count_frame(h);
    if (end) {
      ended_ = true;
      end_slot_.store(slot, std::memory_order_release);
    }
  }

  // copy / capnp: read into buf_, then copy (or rebuild) each complete frame
  // into a fresh slot.
  Status receive_buffered(std::span<Descriptor> out, size_t* n) {
    std::byte* buf = reinterpret_cast<std::byte*>(buf_.get());
    size_t k = 0;
    bool drained = false;
    for (;;) {
      while (k < out.size() && !ended_) {
        size_t avail = end_ - begin_;
        if (avail < sizeof(FrameHeader)) break;
        FrameHeader h;
        Status st = decode_frame_header(buf + begin_, lim_, &h);
        if (!st) return bad_frame(st);
        if (avail < sizeof(FrameHeader) + h.payload_bytes) break;
        const std::byte* payload = buf + begin_ + sizeof(FrameHeader);
        uint32_t slot;
        st = take_slot(&slot);
        if (!st) return st;
        uint64_t tuples = 0;
        uint32_t bytes = h.payload_bytes;
        if (h.kind == static_cast<uint16_t>(FrameKind::kCapnpEvent)) {
          st = decode_capnp_event(payload, h.payload_bytes, lim_,
                                  reinterpret_cast<std::byte*>(scratch_.get()), pool_.slot(slot),
                                  pool_.slot_bytes(), &bytes, &tuples);
        } else {
          std::memcpy(pool_.slot(slot), payload, h.payload_bytes);
          st = check_frame_payload(h, pool_.slot(slot), lim_, &tuples);
        }
        if (!st) return bad_frame(st);
        fill(&out[k++], h, slot, bytes, tuples);
        begin_ += sizeof(FrameHeader) + h.payload_bytes;
      }
      if (k == out.size() || ended_ || (k > 0 && drained)) break;
      // Keep the partial frame at the front so a whole frame always fits.
      if (begin_ == end_) {
        begin_ = end_ = 0;
      } else if (buf_cap_ - end_ < opts_.tcp.read_bytes) {
        std::memmove(buf, buf + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      }
      size_t ask = std::min<size_t>(std::max<uint32_t>(opts_.tcp.read_bytes, 1), buf_cap_ - end_);
      bool go;
      Status st = before_read(k, &go);
      if (!st) return st;
      if (!go) break;
      int flags = (k == 0 && !opts_.tcp.rx_select) ? 0 : MSG_DONTWAIT;
      ssize_t r = ::recv(fd_.get(), buf + end_, ask, flags);
      stats_.syscalls.add(1);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (k > 0) break;
          continue;
        }
        if (shut_down_.load(std::memory_order_acquire)) return closed_error(0, 0);
        return fail(fmt::format("recv failed on {}: {}", link_, errno_text(errno)));
      }
      if (r == 0) {
        size_t partial = end_ - begin_;
        size_t frame_len = sizeof(FrameHeader);
        if (partial >= sizeof(FrameHeader)) {
          FrameHeader h;
          std::memcpy(&h, buf + begin_, sizeof h);
          frame_len += h.payload_bytes;
        }
        return closed_error(partial, frame_len);
      }
      end_ += r;
      drained = static_cast<size_t>(r) < ask;
    }
    *n = k;
    return {};
  }

  Fd fd_;
  LinkOptions opts_;
  SlotPool& pool_;
  FrameLimits lim_;
  std::string link_;
  std::string peer_;
  Status error_;
  bool ended_ = false;
  std::atomic<bool> shut_down_{false};
  uint64_t frames_ = 0;
  uint64_t frame_offset_ = 0;  // stream byte offset of the frame being read
  Stats stats_;

  // sg state
  alignas(16) std::byte hdr_[sizeof(FrameHeader)];
  size_t hdr_got_ = 0;
  bool in_payload_ = false;
  FrameHeader cur_{};
  uint32_t cur_slot_ = kNoSlot;
  size_t payload_got_ = 0;

  // copy / capnp state (uint64_t arrays: 8-byte aligned for capnp)
  std::unique_ptr<uint64_t[]> buf_;
  std::unique_ptr<uint64_t[]> scratch_;
  size_t buf_cap_ = 0, begin_ = 0, end_ = 0;

  // release() side: only the releasing thread touches these.
  uint32_t batch_;
  uint32_t pending_credits_ = 0;
  std::atomic<uint32_t> end_slot_{kNoSlot};
  std::atomic<uint64_t> released_{0};
};

// ---------------------------------------------------------------------------
// Listener

class TcpListener final : public Listener {
 public:
  TcpListener(const LinkOptions& opts, SlotPool& pool) : opts_(opts), pool_(pool) {
    me_ = name_or(opts_.to, "receiver");
  }

  Status bind() {
    if (opts_.slot_bytes > pool_.slot_bytes() || opts_.slots > pool_.slots() || opts_.slots == 0)
      return Status::Error(fmt::format(
          "{}: link of {} slots x {} bytes does not fit a pool of {} slots x {} bytes", me_,
          opts_.slots, opts_.slot_bytes, pool_.slots(), pool_.slot_bytes()));
    if (opts_.tuple_bytes < kMinTupleBytes ||
        opts_.slot_bytes < kEventHeaderBytes + opts_.tuple_bytes)
      return Status::Error(fmt::format("{}: a {}-byte slot cannot hold an event of {}-byte tuples",
                                       me_, opts_.slot_bytes, opts_.tuple_bytes));
    AddrInfo ai;
    Status st = resolve(opts_.bind_address(), opts_.port, true, &ai);
    if (!st) return Status::Error(fmt::format("{}: cannot listen on {}:{}: {}", me_, opts_.host,
                                              opts_.port, st.message()));
    Fd fd(::socket(ai.ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid())
      return Status::Error(fmt::format("{}: socket failed: {}", me_, errno_text(errno)));
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // Before listen(), so accepted sockets inherit it.
    st = set_congestion(fd.get(), opts_, me_);
    if (!st) return st;
    if (::bind(fd.get(), ai.ai->ai_addr, ai.ai->ai_addrlen) != 0)
      return Status::Error(fmt::format("{}: cannot listen on {}:{}: {}", me_, opts_.host,
                                       opts_.port, errno_text(errno)));
    if (::listen(fd.get(), 16) != 0)
      return Status::Error(fmt::format("{}: listen on {}:{} failed: {}", me_, opts_.host,
                                       opts_.port, errno_text(errno)));
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    fd_ = std::move(fd);
    return {};
  }

  std::unique_ptr<Receiver> accept(Status* st) override {
    sockaddr_storage ss{};
    socklen_t len;
    int c;
    do {
      len = sizeof ss;
      c = ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
    } while (c < 0 && errno == EINTR && !shut_down_.load());
    if (shut_down_.load()) {
      if (c >= 0) ::close(c);
      *st = Status::Error(fmt::format("{}: listener on {}:{} shut down", me_, opts_.host, port_));
      return nullptr;
    }
    if (c < 0) {
      *st = Status::Error(fmt::format("{}: accept on {}:{} failed: {}", me_, opts_.host, port_,
                                      errno_text(errno)));
      return nullptr;
    }
    Fd fd(c);
    std::string from = sockaddr_text(ss);
    std::string sender = name_or(opts_.from, "?");
    std::string link = link_name(sender, me_, opts_.host, port_);
    if (Status s = set_nodelay(fd.get(), link); !s) {
      *st = s;
      return nullptr;
    }
    if (Status s = set_congestion(fd.get(), opts_, link); !s) {
      *st = s;
      return nullptr;
    }
    // The handshake must not hang accept() on a peer that says nothing.
    set_recv_timeout(fd.get(), opts_.connect_timeout_ms);
    alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
    uint32_t hlen = 0;
    HelloInfo hello;
    Status s = read_handshake(fd.get(), buf, &hlen, link + " from " + from, "Hello");
    if (s) {
      s = decode_hello(buf, hlen, &hello);
      if (!s) s = Status::Error(fmt::format("{} from {}: Hello: {}", link, from, s.message()));
    }
    std::string mismatch;
    if (s) {
      if (!hello.sender_name.empty()) sender = hello.sender_name;
      link = link_name(sender, me_, opts_.host, port_);
      HelloInfo mine = hello_from_options(opts_);
      mismatch = hello_mismatch(hello, mine);
    }
    ReplyInfo reply;
    reply.receiver_name = me_;
    if (!s || !mismatch.empty()) {
      reply.accepted = false;
      reply.error = s ? mismatch : s.message();
      size_t n = 0;
      if (encode_reply(reply, buf, sizeof buf, &n)) (void)write_all(fd.get(), buf, n, link, nullptr);
      *st = s ? Status::Error(fmt::format("{}: handshake rejected: {}", link, mismatch)) : s;
      return nullptr;
    }
    reply.accepted = true;
    reply.credits = opts_.slots;
    reply.slot_bytes = opts_.slot_bytes;
    reply.credit_batch = opts_.effective_credit_batch();
    size_t n = 0;
    s = encode_reply(reply, buf, sizeof buf, &n);
    if (s) s = write_all(fd.get(), buf, n, link, nullptr);
    if (!s) {
      *st = s;
      return nullptr;
    }
    set_recv_timeout(fd.get(), 0);
    *st = Status();
    return std::make_unique<TcpReceiver>(std::move(fd), opts_, pool_, link, sender);
  }

  void shutdown() override {
    shut_down_.store(true);
    ::shutdown(fd_.get(), SHUT_RDWR);
  }

  uint16_t port() const override { return port_; }

 private:
  LinkOptions opts_;
  SlotPool& pool_;
  std::string me_;
  Fd fd_;
  uint16_t port_ = 0;
  std::atomic<bool> shut_down_{false};
};

// ---------------------------------------------------------------------------
// Sender

// A piece of a frame's payload: bytes in a slot, and the slot to release once
// they are gone (kNoSlot when a later piece of the same descriptor follows).
struct Piece {
  const std::byte* p;
  uint32_t len;
  uint32_t events;
  uint32_t release;
};

// Credits as the sender sees them: a count, refilled from CreditFrames.
class CreditGate {
 public:
  CreditGate(int fd, const std::string& link, Stats& stats, uint32_t initial)
      : fd_(fd), link_(link), stats_(stats), credits_(initial), initial_(initial) {}

  uint32_t credits() const { return credits_; }
  bool low() const { return credits_ < (initial_ + 1) / 2; }

  // Takes what has arrived (block=false) or waits for at least one credit.
  Status refill(bool block) {
    for (;;) {
      ssize_t r = ::recv(fd_, buf_ + have_, sizeof buf_ - have_, block ? 0 : MSG_DONTWAIT);
      stats_.syscalls.add(1);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
        return Status::Error(
            fmt::format("recv of credits failed on {}: {}", link_, errno_text(errno)));
      }
      if (r == 0)
        return Status::Error(fmt::format("{}: receiver closed the link", link_));
      have_ += r;
      size_t off = 0;
      for (; have_ - off >= sizeof(CreditFrame); off += sizeof(CreditFrame)) {
        CreditFrame c;
        std::memcpy(&c, buf_ + off, sizeof c);
        if (c.magic != kCreditMagic)
          return Status::Error(fmt::format("{}: bad credit frame magic 0x{:08x}", link_, c.magic));
        if (uint64_t{credits_} + c.credits > initial_)
          return Status::Error(fmt::format(
              "{}: receiver returned {} credits, {} more than the {} it granted", link_,
              c.credits, uint64_t{credits_} + c.credits - initial_, initial_));
        credits_ += c.credits;
      }
      std::memmove(buf_, buf_ + off, have_ - off);
      have_ -= off;
      if (!block || credits_ > 0) return {};
    }
  }

  // One credit for one frame, waiting (and counting the wait) when none.
  Status take(bool* waited) {
    *waited = false;
    while (credits_ == 0) {
      *waited = true;
      Status st = refill(true);
      if (!st) return st;
    }
    --credits_;
    return {};
  }

 private:
  int fd_;
  const std::string& link_;
  Stats& stats_;
  uint32_t credits_;
  uint32_t initial_;
  std::byte buf_[512];
  size_t have_ = 0;
};

class TcpSender : public Sender {
 public:
  TcpSender(const LinkOptions& opts, const SlotPool& pool, SlotReleaser& releaser)
      : opts_(opts), pool_(pool), releaser_(releaser) {
    me_ = name_or(opts_.from, "sender");
    peer_ = name_or(opts_.to, "?");
    link_ = link_name(me_, peer_, opts_.host, opts_.port);
  }
  ~TcpSender() override = default;

  Status connect() {
    if (opts_.tcp.async_send && opts_.tcp.encoding == Encoding::kSg)
      return Status::Error(fmt::format(
          "{}: async_send is not supported with the sg encoding (it would keep slots until the "
          "queue drains); use copy or capnp",
          link_));
    AddrInfo ai;
    Status st = resolve(opts_.host, opts_.port, false, &ai);
    if (!st) return Status::Error(fmt::format("{}: {}", link_, st.message()));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.connect_timeout_ms);
    int last = 0;
    for (;;) {
      Fd fd(::socket(ai.ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!fd.valid())
        return Status::Error(fmt::format("{}: socket failed: {}", link_, errno_text(errno)));
      st = set_congestion(fd.get(), opts_, link_);
      if (!st) return st;
      if (::connect(fd.get(), ai.ai->ai_addr, ai.ai->ai_addrlen) == 0) {
        fd_ = std::move(fd);
        break;
      }
      last = errno;
      if (std::chrono::steady_clock::now() >= deadline)
        return Status::Error(fmt::format("connect to {}:{} failed on {} after {} ms: {}", opts_.host,
                                         opts_.port, link_, opts_.connect_timeout_ms,
                                         errno_text(last)));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    st = set_nodelay(fd_.get(), link_);
    if (!st) return st;
    return handshake();
  }

  Status close() override {
    if (closed_) return error_;
    closed_ = true;
    Status st = finish();
    if (!st && error_.ok()) error_ = st;
    if (fd_.valid() && error_.ok() && ended_) {
      // FIN after everything written, then read (and drop) credits until the
      // receiver half-closes once its END slot is released. Closing with
      // credits unread, or before late credits arrive, would send a reset
      // that can discard frames the receiver has not read yet. Bounded by
      // connect_timeout_ms for a receiver that never releases its END.
      ::shutdown(fd_.get(), SHUT_WR);
      set_recv_timeout(fd_.get(), opts_.connect_timeout_ms);
      char sink[512];
      while (::recv(fd_.get(), sink, sizeof sink, 0) > 0) {
      }
    }
    fd_.reset();
    return error_;
  }

  const std::string& peer() const override { return peer_; }
  LinkStats stats() const override { return stats_.snapshot(); }

 protected:
  // Flushes and stops whatever the encoding keeps (the async thread).
  virtual Status finish() { return {}; }

  Status fail(Status st) {
    if (error_.ok()) error_ = std::move(st);
    if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
    return error_;
  }

  Status precheck(std::span<const Descriptor> descs) {
    if (!error_.ok()) return error_;
    if (closed_) return Status::Error(fmt::format("{}: send after close", link_));
    if (ended_ && !descs.empty())
      return Status::Error(fmt::format("{}: send after the end of stream", link_));
    return {};
  }

  // Groups descriptors into frames of at most max_payload bytes, splitting a
  // descriptor larger than that at event boundaries; calls
  // frame(kind, pieces, n, payload_bytes, events) for each.
  template <class FrameFn>
  Status plan_frames(std::span<const Descriptor> descs, uint32_t max_payload, FrameFn frame) {
    size_t np = 0;
    uint32_t payload = 0, events = 0;
    auto close_frame = [&]() -> Status {
      if (np == 0) return {};
      Status st = frame(FrameKind::kEvents, pieces_.data(), np, payload, events);
      np = 0;
      payload = events = 0;
      return st;
    };
    auto add = [&](const std::byte* p, uint32_t len, uint32_t ev, uint32_t release) -> Status {
      if (np == pieces_.size() || payload + uint64_t{len} > max_payload) {
        Status st = close_frame();
        if (!st) return st;
      }
      pieces_[np++] = Piece{p, len, ev, release};
      payload += len;
      events += ev;
      return {};
    };
    for (size_t i = 0; i < descs.size(); ++i) {
      const Descriptor& d = descs[i];
      if (ended_)
        return fail(Status::Error(fmt::format("{}: descriptor after the end of stream", link_)));
      if (d.flags & kDescEnd) {
        Status st = close_frame();
        if (!st) return st;
        const std::byte* p = reinterpret_cast<const std::byte*>(&empty_end_);
        uint32_t len = 8;  // an EndOfStream naming no streams
        if (d.slot != kNoSlot) {
          if (d.slot >= pool_.slots() || uint64_t{d.offset} + d.bytes > pool_.slot_bytes())
            return fail(Status::Error(fmt::format("{}: END descriptor outside its slot", link_)));
          p = pool_.slot(d.slot) + d.offset;
          len = d.bytes;
        }
        if (len > max_payload)
          return fail(Status::Error(fmt::format(
              "{}: end-of-stream of {} bytes larger than the receiver's {}-byte slot", link_, len,
              max_payload)));
        Piece end{p, len, 0, d.slot};
        ended_ = true;
        st = frame(FrameKind::kEnd, &end, 1, len, 0);
        if (!st) return st;
        continue;
      }
      if (d.slot >= pool_.slots() || uint64_t{d.offset} + d.bytes > pool_.slot_bytes() ||
          d.bytes == 0)
        return fail(Status::Error(fmt::format(
            "{}: descriptor (slot {}, offset {}, {} bytes) outside the pool", link_, d.slot,
            d.offset, d.bytes)));
      const std::byte* base = pool_.slot(d.slot) + d.offset;
      if (d.bytes <= max_payload) {
        Status st = add(base, d.bytes, d.events, d.slot);
        if (!st) return st;
        continue;
      }
      // Larger than the receiver's slot: split at event boundaries.
      Status st = close_frame();
      if (!st) return st;
      uint32_t off = 0, start = 0, evs = 0;
      while (off < d.bytes) {
        std::string err = check_event_header(base + off, d.bytes - off, 0);
        if (!err.empty())
          return fail(Status::Error(
              fmt::format("{}: cannot split descriptor at byte {}: {}", link_, off, err)));
        EventHeader h;
        std::memcpy(&h, base + off, sizeof h);
        size_t len = h.wire_bytes();
        if (len > max_payload)
          return fail(Status::Error(fmt::format(
              "{}: event of {} bytes larger than the receiver's {}-byte slot", link_, len,
              max_payload)));
        if (off - start + len > max_payload) {
          st = add(base + start, off - start, evs, kNoSlot);
          if (!st) return st;
          st = close_frame();
          if (!st) return st;
          start = off;
          evs = 0;
        }
        off += len;
        ++evs;
      }
      st = add(base + start, off - start, evs, d.slot);
      if (!st) return st;
    }
    return close_frame();
  }

  void release(uint32_t slot) {
    if (slot != kNoSlot) releaser_.release(slot);
  }

  LinkOptions opts_;
  const SlotPool& pool_;
  SlotReleaser& releaser_;
  std::string me_, peer_, link_;
  Fd fd_;
  Stats stats_;
  Status error_;
  bool closed_ = false;
  bool ended_ = false;
  uint32_t peer_slot_bytes_ = 0;
  uint32_t initial_credits_ = 0;
  std::unique_ptr<CreditGate> gate_;
  std::vector<Piece> pieces_;
  struct {
    uint32_t n_streams = 0, reserved = 0;
  } empty_end_;

 private:
  Status handshake() {
    alignas(8) std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
    size_t n = 0;
    Status st = encode_hello(hello_from_options(opts_), buf, sizeof buf, &n);
    if (st) st = write_all(fd_.get(), buf, n, link_, nullptr);
    if (!st) return st;
    set_recv_timeout(fd_.get(), opts_.connect_timeout_ms);
    uint32_t len = 0;
    st = read_handshake(fd_.get(), buf, &len, link_, "HelloReply");
    if (!st) return st;
    ReplyInfo reply;
    st = decode_reply(buf, len, &reply);
    if (!st) return Status::Error(fmt::format("{}: HelloReply: {}", link_, st.message()));
    if (!reply.receiver_name.empty() && opts_.to.empty()) {
      peer_ = reply.receiver_name;
      link_ = link_name(me_, peer_, opts_.host, opts_.port);
    }
    if (!reply.accepted)
      return Status::Error(fmt::format("{}: handshake rejected: {}", link_, reply.error));
    if (reply.credits == 0 || reply.slot_bytes < kEventHeaderBytes + kMinTupleBytes)
      return Status::Error(fmt::format("{}: HelloReply grants {} credits of {}-byte slots", link_,
                                       reply.credits, reply.slot_bytes));
    set_recv_timeout(fd_.get(), 0);
    peer_slot_bytes_ = reply.slot_bytes;
    initial_credits_ = reply.credits;
    gate_ = std::make_unique<CreditGate>(fd_.get(), link_, stats_, reply.credits);
    // Each piece is at least one 64-byte event header.
    pieces_.resize(peer_slot_bytes_ / kEventHeaderBytes + 2);
    return {};
  }
};

// sg: gathers frame headers and slot bytes into as few sendmsg() calls as
// IOV_MAX allows; a slot is released once sendmsg has taken its bytes.
class SgSender final : public TcpSender {
 public:
  using TcpSender::TcpSender;

  Status send(std::span<const Descriptor> descs) override {
    Status st = precheck(descs);
    if (!st) return st;
    refilled_ = false;
    st = plan_frames(descs, peer_slot_bytes_,
                     [this](FrameKind kind, const Piece* p, size_t n, uint32_t payload,
                            uint32_t events) { return frame(kind, p, n, payload, events); });
    if (st) st = flush();
    if (!st) return fail(st);
    return {};
  }

 private:
  Status frame(FrameKind kind, const Piece* p, size_t n, uint32_t payload, uint32_t events) {
    // Drain credits that already arrived once per send() when running low, so
    // the common case never blocks and never costs a syscall per frame.
    if (gate_->low() && !refilled_) {
      Status st = gate_->refill(false);
      if (!st) return st;
      refilled_ = true;
    }
    if (gate_->credits() == 0) {
      // The receiver can only free slots of frames it has: send ours first.
      Status st = flush();
      if (!st) return st;
      stats_.credit_waits.add(1);
    }
    bool waited;
    Status st = gate_->take(&waited);
    if (!st) return st;
    if (niov_ == kIovMax) {
      st = flush();
      if (!st) return st;
    }
    FrameHeader& h = hdrs_[niov_];
    h = FrameHeader{kFrameMagic, static_cast<uint16_t>(kind), 0, payload, events};
    push(&h, sizeof h, kNoSlot);
    for (size_t i = 0; i < n; ++i) {
      if (niov_ == kIovMax) {
        st = flush();
        if (!st) return st;
      }
      push(p[i].p, p[i].len, p[i].release);
    }
    stats_.frames.add(1);
    return {};
  }

  void push(const void* p, size_t len, uint32_t release) {
    iov_[niov_] = iovec{const_cast<void*>(p), len};
    release_[niov_] = release;
    ++niov_;
  }

  Status flush() {
    size_t i = 0;
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
        release(release_[i]);
        ++i;
      }
      if (left > 0) {
        iov_[i].iov_base = static_cast<char*>(iov_[i].iov_base) + left;
        iov_[i].iov_len -= left;
      }
    }
    niov_ = 0;
    return {};
  }

  // Headers are indexed like the iovec that points at them, so a flush
  // frees both at once; every frame has at least one iovec for its header.
  FrameHeader hdrs_[kIovMax];
  iovec iov_[kIovMax];
  uint32_t release_[kIovMax];
  size_t niov_ = 0;
  bool refilled_ = false;
};

// copy / capnp: frames are written into chunks (contiguous buffers), then sent
// with plain send() calls, one credit per frame. With async_send a bounded
// queue of chunks sits between send() and a sender thread.
class BufferedSender final : public TcpSender {
 public:
  BufferedSender(const LinkOptions& opts, const SlotPool& pool, SlotReleaser& releaser)
      : TcpSender(opts, pool, releaser) {}

  ~BufferedSender() override {
    if (thread_.joinable()) {
      full_->close();
      thread_.join();
    }
  }

  Status start() {
    uint32_t max_payload = peer_slot_bytes_;
    if (opts_.tcp.encoding == Encoding::kCapnp) {
      capnp_bound_ = capnp_event_bound_bytes(peer_slot_bytes_, opts_.tuple_bytes);
      max_payload = capnp_bound_;
      scratch_.reset(new uint64_t[capnp_bound_ / 8 + 1]());
    }
    max_frame_ = sizeof(FrameHeader) + max_payload;
    chunk_bytes_ = 4 * max_frame_;
    const size_t nchunks = opts_.tcp.async_send ? 8 : 1;
    chunks_.resize(nchunks);
    for (auto& c : chunks_) {
      c.buf.reset(new std::byte[chunk_bytes_]);
      c.frame_end.resize(chunk_bytes_ / sizeof(FrameHeader) + 1);
    }
    if (opts_.tcp.async_send) {
      full_ = std::make_unique<SpscRing<uint32_t>>(16);
      free_ = std::make_unique<SpscRing<uint32_t>>(16);
      for (uint32_t i = 1; i < nchunks; ++i) free_->try_push(i);
      thread_ = std::thread([this] { drain_loop(); });
    }
    cur_ = 0;
    return {};
  }

  Status send(std::span<const Descriptor> descs) override {
    Status st = precheck(descs);
    if (!st) return st;
    st = thread_error();
    if (!st) return fail(st);
    if (opts_.tcp.encoding == Encoding::kCapnp)
      st = send_capnp(descs);
    else
      st = plan_frames(descs, peer_slot_bytes_,
                       [this](FrameKind kind, const Piece* p, size_t n, uint32_t payload,
                              uint32_t events) { return copy_frame(kind, p, n, payload, events); });
    // Send what we were given now: no waiting for more to fill the chunk.
    if (st) st = hand_off();
    if (!st) return fail(st);
    return {};
  }

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> buf;
    size_t used = 0;
    std::vector<size_t> frame_end;  // sized at start: no allocation later
    size_t frames = 0;
  };

  Status finish() override {
    Status st;
    if (!error_.ok()) st = error_;
    if (opts_.tcp.async_send && thread_.joinable()) {
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

  Chunk& open_frame(FrameKind kind, size_t* at) {
    Chunk& c = chunks_[cur_];
    *at = c.used;
    c.used += sizeof(FrameHeader);
    return c;
  }

  void close_frame(Chunk& c, size_t at, FrameKind kind, uint32_t payload, uint32_t events) {
    FrameHeader h{kFrameMagic, static_cast<uint16_t>(kind), 0, payload, events};
    std::memcpy(c.buf.get() + at, &h, sizeof h);
    c.frame_end[c.frames++] = c.used;
    stats_.frames.add(1);
  }

  Status copy_frame(FrameKind kind, const Piece* p, size_t n, uint32_t payload, uint32_t events) {
    Status st = room(sizeof(FrameHeader) + payload);
    if (!st) return st;
    size_t at;
    Chunk& c = open_frame(kind, &at);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(c.buf.get() + c.used, p[i].p, p[i].len);
      c.used += p[i].len;
      // Copied: the slot's bytes are no longer needed.
      release(p[i].release);
    }
    close_frame(c, at, kind, payload, events);
    return {};
  }

  Status send_capnp(std::span<const Descriptor> descs) {
    for (const Descriptor& d : descs) {
      if (ended_)
        return Status::Error(fmt::format("{}: descriptor after the end of stream", link_));
      if (d.flags & kDescEnd) {
        Status st = plan_frames(std::span<const Descriptor>(&d, 1), peer_slot_bytes_,
                                [this](FrameKind kind, const Piece* p, size_t n, uint32_t payload,
                                       uint32_t events) {
                                  return copy_frame(kind, p, n, payload, events);
                                });
        if (!st) return st;
        continue;
      }
      if (d.slot >= pool_.slots() || uint64_t{d.offset} + d.bytes > pool_.slot_bytes() ||
          d.bytes == 0)
        return Status::Error(fmt::format(
            "{}: descriptor (slot {}, offset {}, {} bytes) outside the pool", link_, d.slot,
            d.offset, d.bytes));
      const std::byte* base = pool_.slot(d.slot) + d.offset;
      for (uint32_t off = 0; off < d.bytes;) {
        std::string err = check_event_header(base + off, d.bytes - off, 0);
        if (!err.empty())
          return Status::Error(fmt::format("{}: event at byte {} of slot {}: {}", link_, off,
                                           d.slot, err));
        EventHeader h;
        std::memcpy(&h, base + off, sizeof h);
        Status st = room(max_frame_);
        if (!st) return st;
        size_t at;
        Chunk& c = open_frame(FrameKind::kCapnpEvent, &at);
        size_t len = 0;
        st = encode_capnp_event(base + off, reinterpret_cast<std::byte*>(scratch_.get()),
                                capnp_bound_, c.buf.get() + c.used, capnp_bound_, &len);
        if (!st) return Status::Error(fmt::format("{}: {}", link_, st.message()));
        c.used += len;
        close_frame(c, at, FrameKind::kCapnpEvent, static_cast<uint32_t>(len), 1);
        off += h.wire_bytes();
      }
      release(d.slot);
    }
    return {};
  }

  // The current chunk is complete: write it (sync) or queue it (async).
  Status hand_off() {
    Chunk& c = chunks_[cur_];
    if (c.frames == 0) return {};
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
    size_t done = 0, off = 0;
    bool refilled = false;
    while (done < c.frames) {
      if (gate_->low() && !refilled) {
        Status st = gate_->refill(false);
        if (!st) return st;
        refilled = true;
      }
      if (gate_->credits() == 0) {
        stats_.credit_waits.add(1);
        Status st = gate_->refill(true);
        if (!st) return st;
        continue;
      }
      size_t k = std::min<size_t>(gate_->credits(), c.frames - done);
      for (size_t i = 0; i < k; ++i) {
        bool waited;
        (void)gate_->take(&waited);
      }
      size_t end = c.frame_end[done + k - 1];
      Status st = write_all(fd_.get(), c.buf.get() + off, end - off, link_, &stats_);
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
};

}  // namespace

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, Status* st) {
  auto l = std::make_unique<TcpListener>(opts, pool);
  *st = l->bind();
  if (!st->ok()) return nullptr;
  return l;
}

std::unique_ptr<Sender> make_sender(const LinkOptions& opts, const SlotPool& pool,
                                    SlotReleaser& releaser, Status* st) {
  if (opts.tcp.encoding == Encoding::kSg) {
    auto s = std::make_unique<SgSender>(opts, pool, releaser);
    *st = s->connect();
    if (!st->ok()) return nullptr;
    return s;
  }
  auto s = std::make_unique<BufferedSender>(opts, pool, releaser);
  *st = s->connect();
  if (st->ok()) *st = s->start();
  if (!st->ok()) return nullptr;
  return s;
}

}  // namespace sluice::tcp

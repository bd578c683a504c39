// Bad input on a tcp link: a raw socket plays the peer and sends what a
// broken or hostile sender (or receiver) would. Every error must name the
// problem and the link, and nothing may crash or hang.
#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "transport/tcp/codec.h"
#include "transport/test_util.h"
#include "transport/link.h"
#include "transport/transport.h"

namespace sluice {
namespace {

using testing::loopback_options;
using testing::write_end;
using testing::verify_events;
using testing::write_event;

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) \
    << "'" << (text) << "' does not mention '" << (part) << "'"

struct RawSocket {
  int fd = -1;
  RawSocket() = default;
  RawSocket(RawSocket&& o) noexcept : fd(o.fd) { o.fd = -1; }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  ~RawSocket() {
    if (fd >= 0) ::close(fd);
  }
  void connect_to(uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  }
  void write(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      ssize_t r = ::send(fd, c, n, MSG_NOSIGNAL);
      if (r <= 0) return;  // the peer may have closed on us: that is the test
      c += r;
      n -= r;
    }
  }
  bool read(void* p, size_t n) {
    char* c = static_cast<char*>(p);
    while (n > 0) {
      ssize_t r = ::recv(fd, c, n, 0);
      if (r <= 0) return false;
      c += r;
      n -= r;
    }
    return true;
  }
  // Reads one handshake message (prefix + body) and decodes it as a reply.
  bool read_reply(ReplyInfo* r) {
    std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
    if (!read(buf, kHandshakePrefixBytes)) return false;
    uint32_t len;
    if (!decode_handshake_prefix(buf, &len)) return false;
    if (!read(buf, len)) return false;
    return decode_reply(buf, len, r).ok();
  }
  void write_hello(const HelloInfo& h) {
    std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
    size_t n = 0;
    ASSERT_TRUE(encode_hello(h, buf, sizeof buf, &n).ok());
    write(buf, n);
  }
};

LinkOptions sender_view(LinkOptions o, uint16_t port) {
  o.port = port;
  return o;
}

// A receive stage's wait, for one link: polls, sleeping on its fd, until
// something arrives, the stream ends, or 5 s pass.
Status receive(Receiver& r, std::span<Descriptor> out, size_t* n) {
  for (int i = 0; i < 500; ++i) {
    Status st = r.poll(out, n);
    if (!st || *n > 0 || r.ended()) return st;
    pollfd p{r.wait_fd(), POLLIN, 0};
    ::poll(&p, 1, 10);
  }
  *n = 0;
  return Status::Error("nothing arrived in 5 s");
}

// A listener over all the slots of `pool`.
std::unique_ptr<Listener> listen_on(const LinkOptions& o, SlotPool& pool, TransportContext& ctx,
                                    Status* st) {
  std::vector<uint32_t> all(pool.slots());
  pool.try_acquire_n(all.data(), all.size());
  return make_listener(o, pool, 0, ctx, st);
}

// A receiver whose upstream is a raw socket that shook hands correctly.
class RawUpstream : public ::testing::TestWithParam<Encoding> {
 protected:
  void SetUp() override {
    ro_ = loopback_options(GetParam());
    ro_.slot_bytes = 4096;
    ro_.slots = 2;
    ro_.tuple_bytes = 12;
    // The raw peer reads no credits: it sends whenever a slot came back,
    // which fixed credits grant at once (adaptive ones may hold them back).
    ro_.adaptive_credits = false;
    Status st;
    listener_ = listen_on(ro_, pool_, ctx_, &st);
    ASSERT_TRUE(listener_) << st.message();
    raw_.connect_to(listener_->port());
    raw_.write_hello(hello_from_options(sender_view(ro_, listener_->port())));
    receiver_ = listener_->accept(&st);
    ASSERT_TRUE(receiver_) << st.message();
    ReplyInfo reply;
    ASSERT_TRUE(raw_.read_reply(&reply));
    ASSERT_TRUE(reply.accepted) << reply.error;
    EXPECT_EQ(reply.credits, 2u);
  }

  // A good kEvents frame (sg/copy) or kCapnpEvent frame (capnp) of one event.
  std::vector<std::byte> good_frame(uint64_t seq) {
    std::vector<std::byte> ev(256);
    size_t n = write_event(ev.data(), 0, seq, seq, 1, 12);
    ev.resize(n);
    return frame_of(ev, 1);
  }

  std::vector<std::byte> frame_of(const std::vector<std::byte>& event, uint32_t events) {
    std::vector<std::byte> payload = event;
    uint16_t kind = static_cast<uint16_t>(FrameKind::kEvents);
    if (GetParam() == Encoding::kCapnp) {
      alignas(8) static std::byte scratch[65536];
      std::memset(scratch, 0, sizeof scratch);
      payload.resize(4096);
      size_t len = 0;
      EXPECT_TRUE(tcp::encode_capnp_event(event.data(), scratch, sizeof scratch, payload.data(),
                                          payload.size(), &len)
                      .ok());
      payload.resize(len);
      kind = static_cast<uint16_t>(FrameKind::kCapnpEvent);
    }
    FrameHeader h{kFrameMagic, kind, 0, static_cast<uint32_t>(payload.size()), events};
    std::vector<std::byte> f(sizeof h + payload.size());
    std::memcpy(f.data(), &h, sizeof h);
    std::memcpy(f.data() + sizeof h, payload.data(), payload.size());
    return f;
  }

  // END with `after` behind it in one write; END is handed out, and its
  // slot given back: the error that gives, "" if none. The link must be
  // finished (by its error) and have sent no credit for it.
  std::string end_then(const std::vector<std::byte>& after) {
    std::byte end[64];
    const size_t eb = write_end(end, 0, 1, 1);
    const FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kEnd), 0,
                        static_cast<uint32_t>(eb), 0};
    std::vector<std::byte> bytes(sizeof h + eb);
    std::memcpy(bytes.data(), &h, sizeof h);
    std::memcpy(bytes.data() + sizeof h, end, eb);
    bytes.insert(bytes.end(), after.begin(), after.end());
    raw_.write(bytes.data(), bytes.size());
    std::vector<Descriptor> out(8);
    size_t n = 0;
    Status st = receive(*receiver_, out, &n);
    if (!st) return "no END: " + st.message();
    if (n != 1 || !(out[0].flags & kDescEnd)) return "no END";
    st = receiver_->give_back(out[0].slot);
    EXPECT_TRUE(receiver_->finished());
    CreditFrame c;
    EXPECT_FALSE(raw_.read(&c, sizeof c)) << "a credit came back";
    return st.message();
  }

  std::string receive_error() {
    std::vector<Descriptor> out(8);
    for (int i = 0; i < 100; ++i) {
      size_t n = 0;
      Status st = receive(*receiver_, out, &n);
      if (!st) {
        // After an error the link only returns that error.
        size_t n2 = 0;
        Status again = receiver_->poll(out, &n2);
        EXPECT_EQ(again.message(), st.message());
        return st.message();
      }
      if (n == 0) return "stream ended";
    }
    return "no error";
  }

  LinkOptions ro_;
  TransportContext ctx_;
  SlotPool pool_{2, 4096};
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<Receiver> receiver_;
  RawSocket raw_;
};

// A read that finds the socket empty says so (the receive stage then sleeps
// in epoll instead of reading again for an EAGAIN), and one that stopped
// because `out` was full does not: with copy and capnp the rest may already
// sit in the link's buffer, where no epoll would ever report it.
TEST_P(RawUpstream, DrainedOnlyWhenTheReadFoundTheSocketEmpty) {
  std::vector<Descriptor> out(8);
  size_t n = 9;
  ASSERT_TRUE(receiver_->poll(out, &n).ok());
  EXPECT_EQ(n, 0u);
  EXPECT_TRUE(receiver_->drained()) << "nothing there: EAGAIN";

  // Two frames at once, taken one at a time.
  auto f0 = good_frame(0), f1 = good_frame(1);
  std::vector<std::byte> both(f0);
  both.insert(both.end(), f1.begin(), f1.end());
  raw_.write(both.data(), both.size());
  pollfd p{receiver_->wait_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  ASSERT_TRUE(receive(*receiver_, std::span<Descriptor>(out.data(), 1), &n).ok());
  ASSERT_EQ(n, 1u);
  EXPECT_FALSE(receiver_->drained()) << "out was full: the second frame may be read already";
  ASSERT_TRUE(receiver_->poll(std::span<Descriptor>(out.data() + 1, 1), &n).ok());
  EXPECT_EQ(n, 1u) << "the second frame, without waiting for the socket";
  size_t more = 9;
  ASSERT_TRUE(receiver_->poll(out, &more).ok());
  EXPECT_EQ(more, 0u);
  EXPECT_TRUE(receiver_->drained());
}

// Frames of many sizes, written in pieces of any size between the
// receiver's reads: each arrives whole, in order, once. (sg reads a frame
// boundary speculatively into the next slot and keeps what it took past the
// frame; this walks that path over every kind of split.)
TEST_P(RawUpstream, FramesInAnyPiecesArriveWholeAndInOrder) {
  std::mt19937 rng(17);
  std::vector<std::byte> stream;
  std::vector<size_t> ends;  // stream offset where each frame ends
  uint64_t seq = 0;
  for (uint64_t e = 0; e < 300; ++e) {
    std::vector<std::byte> ev(4096);
    const uint32_t tuples = 1 + rng() % 100;
    ev.resize(write_event(ev.data(), 0, seq, e, tuples, 12));
    seq += tuples;
    auto f = frame_of(ev, 1);
    stream.insert(stream.end(), f.begin(), f.end());
    ends.push_back(stream.size());
  }
  uint64_t expect_seq = 0, expect_event = 0;
  size_t written = 0, done = 0;
  std::vector<Descriptor> out(8);
  for (int spins = 0; done < ends.size() && spins < 100000; ++spins) {
    // The link has two slots: write no further than the end of frame done+1.
    const size_t limit = ends[std::min(done + 1, ends.size() - 1)];
    if (written < limit) {
      const size_t piece = std::min<size_t>(1 + rng() % 3000, limit - written);
      raw_.write(stream.data() + written, piece);
      written += piece;
    }
    size_t n = 0;
    Status st = receiver_->poll(out, &n);
    ASSERT_TRUE(st.ok()) << st.message();
    if (n == 0) {
      pollfd p{receiver_->wait_fd(), POLLIN, 0};
      ::poll(&p, 1, 1);
    }
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i].events, 1u);
      std::string bad = verify_events(pool_.slot(out[i].slot) + out[i].offset, out[i].bytes,
                                      out[i].events, &expect_seq, &expect_event);
      ASSERT_EQ(bad, "") << "frame " << done;
      ASSERT_TRUE(receiver_->give_back(out[i].slot).ok());
      ++done;
    }
  }
  EXPECT_EQ(done, ends.size());
  EXPECT_EQ(expect_seq, seq);
}

// sg: a small frame on a link that was idle costs one read (header and
// payload together), and nothing read past it is waited for in epoll.
TEST_P(RawUpstream, ASmallFrameOnAnIdleLinkIsOneRead) {
  if (GetParam() != Encoding::kSg) GTEST_SKIP() << "copy and capnp read into a buffer";
  std::vector<Descriptor> out(8);
  for (uint64_t e = 0; e < 4; ++e) {
    auto f = good_frame(e);
    raw_.write(f.data(), f.size());
    pollfd p{receiver_->wait_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    const uint64_t before = receiver_->stats().syscalls;
    size_t n = 0;
    ASSERT_TRUE(receiver_->poll(out, &n).ok());
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(receiver_->stats().syscalls - before, 1u) << "event " << e;
    EXPECT_TRUE(receiver_->drained());
    ASSERT_TRUE(receiver_->give_back(out[0].slot).ok());
  }
}

// An owner with nothing else to wait for asks the next poll() to wait in
// its read (the node's receive stage with one upstream, as a plain relay's
// blocking read): the frame comes back from that one read, and the poll
// after it never blocks again unless asked.
TEST_P(RawUpstream, AnAskedPollWaitsInItsReadForTheNextFrame) {
  std::vector<Descriptor> out(8);
  for (uint64_t e = 0; e < 3; ++e) {
    ASSERT_TRUE(receiver_->wait_in_next_poll());
    const std::vector<std::byte> f = good_frame(e);
    std::thread late([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      raw_.write(f.data(), f.size());
    });
    const uint64_t before = receiver_->stats().syscalls;
    const auto t0 = std::chrono::steady_clock::now();
    size_t n = 0;
    Status st = receiver_->poll(out, &n);
    const auto waited = std::chrono::steady_clock::now() - t0;
    late.join();
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(n, 1u) << "event " << e;
    EXPECT_GE(waited, std::chrono::milliseconds(80)) << "event " << e;
    if (GetParam() == Encoding::kSg) {
      EXPECT_EQ(receiver_->stats().syscalls - before, 1u) << "event " << e;
    }
    ASSERT_TRUE(receiver_->give_back(out[0].slot).ok());
    // Not asked: nothing there, and it says so at once.
    const auto t1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(receiver_->poll(out, &n).ok());
    EXPECT_EQ(n, 0u);
    EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::milliseconds(50));
  }
}

// A poll asked to wait returns at once a frame that is already there (in
// hand, read behind the one before it, or in the socket).
TEST_P(RawUpstream, AnAskedPollWithAFrameAlreadyThereDoesNotWait) {
  std::vector<std::byte> two = good_frame(0);
  const std::vector<std::byte> second = good_frame(1);
  two.insert(two.end(), second.begin(), second.end());
  raw_.write(two.data(), two.size());
  pollfd p{receiver_->wait_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // both frames are in
  std::vector<Descriptor> out(1);
  size_t n = 0;
  ASSERT_TRUE(receiver_->poll(out, &n).ok());
  ASSERT_EQ(n, 1u);
  ASSERT_TRUE(receiver_->give_back(out[0].slot).ok());
  // A third frame late, so that a poll that did wait would still return.
  std::thread rescue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const std::vector<std::byte> f = good_frame(2);
    raw_.write(f.data(), f.size());
  });
  ASSERT_TRUE(receiver_->wait_in_next_poll());
  const auto t0 = std::chrono::steady_clock::now();
  Status st = receiver_->poll(out, &n);
  const auto took = std::chrono::steady_clock::now() - t0;
  rescue.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(n, 1u);
  EXPECT_LT(took, std::chrono::milliseconds(1000));
}

// shutdown() from another thread ends a poll waiting in its read.
TEST_P(RawUpstream, ShutdownEndsAPollWaitingInItsRead) {
  ASSERT_TRUE(receiver_->wait_in_next_poll());
  std::thread stop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    receiver_->shutdown();
  });
  std::vector<Descriptor> out(8);
  size_t n = 0;
  Status st = receiver_->poll(out, &n);
  stop.join();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(n, 0u);
  EXPECT_HAS(st.message(), "shut down");
}

TEST_P(RawUpstream, GoodFrameThenBadFrameMagic) {
  auto f = good_frame(0);
  raw_.write(f.data(), f.size());
  auto g = good_frame(1);
  uint32_t bad = 0xdeadbeef;
  std::memcpy(g.data(), &bad, 4);
  raw_.write(g.data(), g.size());
  std::string e = receive_error();
  EXPECT_HAS(e, "bad frame magic 0xdeadbeef");
  EXPECT_HAS(e, "link loadgen -> node-a");
  EXPECT_HAS(e, "frame 1 at byte " + std::to_string(f.size()));
}

// Seen from outside: good events, then a 70,000-byte payload. The good ones
// are handed out (and so counted) before the error ends the link. (Two: the
// link has two slots, and this raw sender never waits for credit.)
TEST_P(RawUpstream, GoodFramesBeforeAnOversizedOneAreHandedOut) {
  for (uint64_t e = 0; e < 2; ++e) {
    auto f = good_frame(e);
    raw_.write(f.data(), f.size());
  }
  FrameHeader h{kFrameMagic,
                static_cast<uint16_t>(GetParam() == Encoding::kCapnp ? FrameKind::kCapnpEvent
                                                                     : FrameKind::kEvents),
                0, 70000, 1};
  raw_.write(&h, sizeof h);
  std::vector<Descriptor> out(8);
  size_t good = 0;
  Status st;
  for (int i = 0; i < 100 && st; ++i) {
    size_t n = 0;
    st = receive(*receiver_, out, &n);
    good += n;
  }
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "70000 bytes beyond");
  EXPECT_EQ(good, 2u);
}

TEST_P(RawUpstream, UnknownFrameKind) {
  auto f = good_frame(0);
  uint16_t kind = 9;
  std::memcpy(f.data() + 4, &kind, 2);
  raw_.write(f.data(), f.size());
  std::string e = receive_error();
  EXPECT_HAS(e, "unknown frame kind 9");
  EXPECT_HAS(e, "loadgen -> node-a");
}

TEST_P(RawUpstream, PayloadBeyondTheSlot) {
  FrameHeader h{kFrameMagic,
                static_cast<uint16_t>(GetParam() == Encoding::kCapnp ? FrameKind::kCapnpEvent
                                                                     : FrameKind::kEvents),
                0, 1u << 20, 1};
  raw_.write(&h, sizeof h);
  std::string e = receive_error();
  EXPECT_HAS(e, "1048576 bytes beyond");
  EXPECT_HAS(e, "4096-byte slot");
  EXPECT_HAS(e, "at byte 0");
}

TEST_P(RawUpstream, FrameCutOffMidEventThenClose) {
  auto f = good_frame(0);
  raw_.write(f.data(), f.size() - 20);
  ::shutdown(raw_.fd, SHUT_WR);
  std::string e = receive_error();
  EXPECT_HAS(e, "cut off");
  EXPECT_HAS(e, std::to_string(f.size() - 20) + " of " + std::to_string(f.size()) + " bytes");
  EXPECT_HAS(e, "loadgen -> node-a");
}

TEST_P(RawUpstream, PeerClosesMidStream) {
  auto f = good_frame(0);
  raw_.write(f.data(), f.size());
  ::shutdown(raw_.fd, SHUT_WR);
  std::vector<Descriptor> out(8);
  size_t n = 0;
  ASSERT_TRUE(receive(*receiver_, out, &n).ok());
  ASSERT_EQ(n, 1u);
  std::string e = receive_error();
  EXPECT_HAS(e, "link loadgen -> node-a");
  EXPECT_HAS(e, "upstream closed mid-stream after 1 frames (" + std::to_string(f.size()) +
                    " bytes)");
}

TEST_P(RawUpstream, SentWithoutCredit) {
  for (uint64_t i = 0; i < 3; ++i) {  // 2 credits were granted
    auto f = good_frame(i);
    raw_.write(f.data(), f.size());
  }
  std::string e = receive_error();
  EXPECT_HAS(e, "frame 2");
  EXPECT_HAS(e, "sent without credit");
}

TEST_P(RawUpstream, EndOfStreamThenStreamEnded) {
  std::byte end[64];
  size_t eb = write_end(end, 0, 0, 0);
  FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kEnd), 0,
                static_cast<uint32_t>(eb), 0};
  raw_.write(&h, sizeof h);
  raw_.write(end, eb);
  std::vector<Descriptor> out(8);
  size_t n = 0;
  ASSERT_TRUE(receive(*receiver_, out, &n).ok());
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(out[0].flags, kDescEnd);
  EXPECT_EQ(out[0].bytes, eb);
  ASSERT_TRUE(receive(*receiver_, out, &n).ok());
  EXPECT_EQ(n, 0u);
}

// END, then the sender's close: the link finishes when END's slot comes back.
TEST_P(RawUpstream, EndThenTheSendersCloseFinishes) {
  std::byte end[64];
  size_t eb = write_end(end, 0, 0, 0);
  FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kEnd), 0,
                static_cast<uint32_t>(eb), 0};
  raw_.write(&h, sizeof h);
  raw_.write(end, eb);
  ::shutdown(raw_.fd, SHUT_WR);
  std::vector<Descriptor> out(8);
  size_t n = 0;
  ASSERT_TRUE(receive(*receiver_, out, &n).ok());
  ASSERT_EQ(n, 1u);
  Status st = receiver_->give_back(out[0].slot);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(receiver_->finished());
}

// Nothing may follow END: a frame behind it (here in the same write, so it
// is there by the time END's slot comes back) fails the link, naming it and
// the frame, and gets no credit; so do stray bytes.
TEST_P(RawUpstream, AFrameAfterEndIsAProtocolError) {
  const std::vector<std::byte> after = good_frame(1);
  const std::string e = end_then(after);
  EXPECT_HAS(e, "link loadgen -> node-a (127.0.0.1:");
  EXPECT_HAS(e, fmt::format("a frame of kind {} and {} payload bytes came after END, as frame 1: "
                            "nothing may follow END",
                            GetParam() == Encoding::kCapnp ? 2 : 1, after.size() - sizeof(FrameHeader)));
}

TEST_P(RawUpstream, BytesAfterEndAreAProtocolError) {
  const std::string e = end_then(std::vector<std::byte>(3, std::byte{7}));
  EXPECT_HAS(e, "link loadgen -> node-a (127.0.0.1:");
  EXPECT_HAS(e, "3 bytes came after END");
}

TEST_P(RawUpstream, ShutdownUnblocksReceive) {
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    receiver_->shutdown();
  });
  std::string e = receive_error();
  t.join();
  EXPECT_HAS(e, "shut down");
}

INSTANTIATE_TEST_SUITE_P(Encodings, RawUpstream,
                         ::testing::Values(Encoding::kSg, Encoding::kCopy, Encoding::kCapnp),
                         [](const auto& i) { return std::string(encoding_name(i.param)); });

// Errors inside the events of a kEvents frame (sg, copy).
class RawUpstreamEvents : public RawUpstream {};

TEST_P(RawUpstreamEvents, BadEventMagicInsideAFrame) {
  auto f = good_frame(0);
  uint32_t bad = 0x12345678;
  std::memcpy(f.data() + sizeof(FrameHeader), &bad, 4);
  raw_.write(f.data(), f.size());
  std::string e = receive_error();
  EXPECT_HAS(e, "bad event magic 0x12345678");
  EXPECT_HAS(e, "loadgen -> node-a");
  EXPECT_HAS(e, "frame 0: event 0 at byte 0");
}

TEST_P(RawUpstreamEvents, BadEventVersion) {
  auto f = good_frame(0);
  uint16_t v = 7;
  std::memcpy(f.data() + sizeof(FrameHeader) + offsetof(EventHeader, version), &v, 2);
  raw_.write(f.data(), f.size());
  std::string e = receive_error();
  EXPECT_HAS(e, "event version 7");
}

TEST_P(RawUpstreamEvents, EventCountWrong) {
  auto f = good_frame(0);
  uint32_t events = 2;  // one event is there
  std::memcpy(f.data() + offsetof(FrameHeader, events), &events, 4);
  raw_.write(f.data(), f.size());
  std::string e = receive_error();
  EXPECT_HAS(e, "claims 2 events");
}

INSTANTIATE_TEST_SUITE_P(Encodings, RawUpstreamEvents,
                         ::testing::Values(Encoding::kSg, Encoding::kCopy),
                         [](const auto& i) { return std::string(encoding_name(i.param)); });

// capnp: a message that does not parse is an error, not a crash.
class RawUpstreamCapnp : public RawUpstream {};

TEST_P(RawUpstreamCapnp, GarbageCapnpEvent) {
  FrameHeader h{kFrameMagic, static_cast<uint16_t>(FrameKind::kCapnpEvent), 0, 64, 1};
  std::byte junk[64];
  std::memset(junk, 0xA5, sizeof junk);
  raw_.write(&h, sizeof h);
  raw_.write(junk, sizeof junk);
  std::string e = receive_error();
  EXPECT_HAS(e, "capnp");
  EXPECT_HAS(e, "loadgen -> node-a");
}

INSTANTIATE_TEST_SUITE_P(Encodings, RawUpstreamCapnp, ::testing::Values(Encoding::kCapnp),
                         [](const auto& i) { return std::string(encoding_name(i.param)); });

// --- handshake -------------------------------------------------------------

struct Shake {
  Status receiver, sender;
  // Only when the sender was refused: the agreeing upstream that connected
  // after it (good_sender) and whether the same accept() took it.
  Status good_sender;
  bool accepted_after_refusal = false;
};

// A real sender with options `so` against a real listener with `ro`, with
// accept() waiting on its own thread. A listener that refuses keeps waiting:
// then the real upstream (the receiver's own options) connects, and the same
// accept() call must return its receiver.
Shake handshake(LinkOptions ro, LinkOptions so) {
  TransportContext ctx;
  SlotPool rx(8, 65536), tx(8, 65536);
  Shake r;
  auto l = listen_on(ro, rx, ctx, &r.receiver);
  if (!l) return r;
  so.port = l->port();
  std::unique_ptr<Receiver> recv;
  std::thread a([&] { recv = l->accept(&r.receiver); });
  {
    auto s = make_sender(so, tx, ctx, &r.sender);
    if (s) s->abort();
  }
  if (!r.sender.ok()) {
    auto good = make_sender(sender_view(ro, l->port()), tx, ctx, &r.good_sender);
    if (!good) l->shutdown();  // or accept() would wait for ever
    a.join();
    r.accepted_after_refusal = recv != nullptr;
    if (good) good->abort();
    return r;
  }
  a.join();
  return r;
}

// The refused sender was told why (its error is the receiver's reason), and
// the listener was not ended by it.
#define EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s)                           \
  do {                                                                          \
    EXPECT_HAS((s).sender.message(), "handshake rejected");                     \
    EXPECT_TRUE((s).good_sender.ok()) << (s).good_sender.message();             \
    EXPECT_TRUE((s).accepted_after_refusal) << (s).receiver.message();          \
  } while (0)

LinkOptions rx_opts() {
  LinkOptions o = loopback_options(Encoding::kSg);
  o.slot_bytes = 65536;
  o.slots = 8;
  return o;
}

TEST(TcpHandshake, AgreeingEndsConnect) {
  Shake s = handshake(rx_opts(), sender_view(rx_opts(), 0));
  EXPECT_TRUE(s.receiver.ok()) << s.receiver.message();
  EXPECT_TRUE(s.sender.ok()) << s.sender.message();
}

TEST(TcpHandshake, OtherTupleSize) {
  LinkOptions so = sender_view(rx_opts(), 0);
  so.tuple_bytes = 64;
  Shake s = handshake(rx_opts(), so);
  ASSERT_FALSE(s.sender.ok());
  EXPECT_HAS(s.sender.message(), "link loadgen -> node-a (127.0.0.1:");
  EXPECT_HAS(s.sender.message(),
             "handshake rejected: schema 'sluice.tuple'/64-byte tuples, receiver expects "
             "128-byte tuples");
  // The receiver refused it and kept waiting for its real upstream.
  EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s);
}

TEST(TcpHandshake, OtherSchemaName) {
  LinkOptions so = sender_view(rx_opts(), 0);
  so.schema = "trades";
  Shake s = handshake(rx_opts(), so);
  ASSERT_FALSE(s.sender.ok());
  EXPECT_HAS(s.sender.message(), "schema 'trades'/128-byte tuples, receiver expects 'sluice.tuple'");
  EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s);
}

TEST(TcpHandshake, OtherSlotSize) {
  LinkOptions so = sender_view(rx_opts(), 0);
  so.slot_bytes = 4096;
  Shake s = handshake(rx_opts(), so);
  ASSERT_FALSE(s.sender.ok());
  EXPECT_HAS(s.sender.message(), "slot size 4096 bytes, receiver expects 65536 bytes");
  EXPECT_HAS(s.sender.message(), "loadgen -> node-a");
  EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s);
}

TEST(TcpHandshake, OtherEncoding) {
  LinkOptions so = sender_view(rx_opts(), 0);
  so.tcp.encoding = Encoding::kCapnp;
  Shake s = handshake(rx_opts(), so);
  ASSERT_FALSE(s.sender.ok());
  EXPECT_HAS(s.sender.message(), "carrier 'tcp/capnp', receiver expects 'tcp/sg'");
  EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s);
}

TEST(TcpHandshake, OtherTokenAndLinkId) {
  LinkOptions ro = rx_opts();
  ro.token = "secret";
  LinkOptions so = sender_view(ro, 0);
  so.token = "guess";
  Shake s = handshake(ro, so);
  ASSERT_FALSE(s.sender.ok());
  EXPECT_HAS(s.sender.message(), "token does not match");
  EXPECT_EQ(s.sender.message().find("secret"), std::string::npos);
  EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s);
  so = sender_view(rx_opts(), 0);
  so.link_id = 3;
  s = handshake(rx_opts(), so);
  ASSERT_FALSE(s.sender.ok());
  EXPECT_HAS(s.sender.message(), "link 3 instance 0, receiver expects link 0 instance 0");
  EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s);
}

// Acknowledgements are the same at both ends or the link is refused, either
// way round, naming both settings and both ends.
TEST(TcpHandshake, OtherAcks) {
  for (const bool sender_acks : {true, false}) {
    LinkOptions ro = rx_opts();
    ro.acks = !sender_acks;
    LinkOptions so = sender_view(ro, 0);
    so.acks = sender_acks;
    Shake s = handshake(ro, so);
    ASSERT_FALSE(s.sender.ok());
    EXPECT_HAS(s.sender.message(), "link loadgen -> node-a (127.0.0.1:");
    EXPECT_HAS(s.sender.message(),
               fmt::format("handshake rejected: sender 'loadgen' has acks {}, receiver 'node-a' "
                           "has acks {}",
                           sender_acks ? "on" : "off", sender_acks ? "off" : "on"));
    EXPECT_REFUSED_THEN_REAL_UPSTREAM_ACCEPTED(s);
  }
}

// A stranger on the listener's port: refused with a reply that says why (where
// it can still be told), and the listener keeps waiting: the real upstream
// that connects afterwards is accepted by the same accept().
class RawHandshake : public ::testing::Test {
 protected:
  void SetUp() override {
    Status st;
    opts_ = rx_opts();
    opts_.connect_timeout_ms = hello_deadline_ms_;
    listener_ = listen_on(opts_, pool_, ctx_, &st);
    ASSERT_TRUE(listener_) << st.message();
    accept_ = std::thread([this] { receiver_ = listener_->accept(&accept_status_); });
    raw_.connect_to(listener_->port());
  }
  void TearDown() override {
    if (accept_.joinable()) {
      listener_->shutdown();
      accept_.join();
    }
  }
  // The real upstream, after the stranger: accepted.
  void real_upstream_is_accepted() {
    SlotPool tx(4, 65536);
    Status st;
    LinkOptions so = sender_view(opts_, listener_->port());
    so.connect_timeout_ms = 5000;  // the sender's own patience, not the listener's deadline
    auto s = make_sender(so, tx, ctx_, &st);
    EXPECT_TRUE(s) << st.message();
    accept_.join();
    EXPECT_TRUE(receiver_) << accept_status_.message();
    if (s) s->abort();
  }
  // How long the listener waits for a connection's Hello.
  int hello_deadline_ms_ = 2000;
  LinkOptions opts_;
  TransportContext ctx_;
  SlotPool pool_{8, 65536};
  std::unique_ptr<Listener> listener_;
  std::thread accept_;
  std::unique_ptr<Receiver> receiver_;
  Status accept_status_;
  RawSocket raw_;
};

TEST_F(RawHandshake, BadVersion) {
  HelloInfo h = hello_from_options(sender_view(rx_opts(), 0));
  h.version = kLinkVersion + 1;
  raw_.write_hello(h);
  ReplyInfo reply;
  ASSERT_TRUE(raw_.read_reply(&reply));
  EXPECT_FALSE(reply.accepted);
  EXPECT_HAS(reply.error, "wire version " + std::to_string(kLinkVersion + 1) +
                              ", receiver speaks " + std::to_string(kLinkVersion));
  real_upstream_is_accepted();
}

TEST_F(RawHandshake, GarbageBytes) {
  const char junk[] = "GET / HTTP/1.1\r\n\r\n";
  raw_.write(junk, sizeof junk);
  ReplyInfo reply;
  ASSERT_TRUE(raw_.read_reply(&reply));  // the peer is told
  EXPECT_FALSE(reply.accepted);
  EXPECT_HAS(reply.error, "bad handshake magic");
  EXPECT_HAS(reply.error, "node-a (127.0.0.1:");
  real_upstream_is_accepted();
}

TEST_F(RawHandshake, OversizedLength) {
  uint32_t prefix[2] = {kHandshakeMagic, 1u << 20};
  raw_.write(prefix, sizeof prefix);
  ReplyInfo reply;
  ASSERT_TRUE(raw_.read_reply(&reply));
  EXPECT_HAS(reply.error, "handshake length 1048576");
  real_upstream_is_accepted();
}

TEST_F(RawHandshake, GarbageMessageBody) {
  uint32_t prefix[2] = {kHandshakeMagic, 64};
  std::byte junk[64];
  std::memset(junk, 0xFF, sizeof junk);
  raw_.write(prefix, sizeof prefix);
  raw_.write(junk, sizeof junk);
  ReplyInfo reply;
  ASSERT_TRUE(raw_.read_reply(&reply));
  EXPECT_HAS(reply.error, "malformed handshake message");
  real_upstream_is_accepted();
}

TEST_F(RawHandshake, PeerSaysNothingThenCloses) {
  ::shutdown(raw_.fd, SHUT_WR);
  ReplyInfo reply;
  ASSERT_TRUE(raw_.read_reply(&reply));
  EXPECT_HAS(reply.error, "peer closed the connection during the Hello");
  real_upstream_is_accepted();
}

// A listener that gives a connection 300 ms to say Hello.
class RawHandshakeShortDeadline : public RawHandshake {
 protected:
  RawHandshakeShortDeadline() { hello_deadline_ms_ = 300; }
};

TEST_F(RawHandshakeShortDeadline, NoHelloWithinTheTimeout) {
  // The stranger connects and stays silent: after the handshake deadline it
  // is refused (told so), and the real upstream gets in through the same accept().
  // (The reply's reason, not a clock, says it was the deadline: no test
  // asserts a timing.)
  ReplyInfo reply;
  ASSERT_TRUE(raw_.read_reply(&reply));
  EXPECT_FALSE(reply.accepted);
  EXPECT_HAS(reply.error, "timed out waiting for the Hello");
  real_upstream_is_accepted();
}

TEST(TcpListener, PortAlreadyInUse) {
  TransportContext ctx;
  SlotPool pool(8, 65536), pool2(8, 65536);
  Status st;
  auto a = listen_on(rx_opts(), pool, ctx, &st);
  ASSERT_TRUE(a) << st.message();
  LinkOptions o = rx_opts();
  o.port = a->port();
  auto b = listen_on(o, pool2, ctx, &st);
  EXPECT_FALSE(b);
  EXPECT_HAS(st.message(), "node-a");  // the receiving end names itself, not its upstream
  EXPECT_HAS(st.message(), "127.0.0.1:" + std::to_string(a->port()));
  EXPECT_HAS(st.message(), "in use");
}

TEST(TcpListener, ShutdownUnblocksAccept) {
  TransportContext ctx;
  SlotPool pool(8, 65536);
  Status st;
  auto l = listen_on(rx_opts(), pool, ctx, &st);
  ASSERT_TRUE(l);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    l->shutdown();
  });
  auto r = l->accept(&st);
  t.join();
  EXPECT_FALSE(r);
  EXPECT_HAS(st.message(), "shut down");
}

TEST(TcpListener, PoolTooSmallForTheLink) {
  TransportContext ctx;
  SlotPool pool(4, 4096);
  Status st;
  auto l = make_listener(rx_opts(), pool, 0, ctx, &st);
  EXPECT_FALSE(l);
  EXPECT_HAS(st.message(), "does not fit a pool of 4 slots");
}

TEST(TcpSender, ConnectTimesOutNamingTheAddress) {
  // Take a free port and close it again: nothing listens there.
  TransportContext ctx;
  SlotPool pool(8, 65536), tx(8, 65536);
  Status st;
  uint16_t port;
  {
    auto l = listen_on(rx_opts(), pool, ctx, &st);
    ASSERT_TRUE(l);
    port = l->port();
  }
  LinkOptions so = sender_view(rx_opts(), port);
  so.connect_timeout_ms = 200;
  auto s = make_sender(so, tx, ctx, &st);
  EXPECT_FALSE(s);
  EXPECT_HAS(st.message(), "connect to 127.0.0.1:" + std::to_string(port));
  EXPECT_HAS(st.message(), "loadgen -> node-a");
  EXPECT_HAS(st.message(), "Connection refused");
}

TEST(TcpSender, AsyncSendWithSgIsRejected) {
  TransportContext ctx;
  SlotPool pool(8, 65536);
  LinkOptions so = sender_view(rx_opts(), 1);
  so.tcp.async_send = true;
  Status st;
  auto s = make_sender(so, pool, ctx, &st);
  EXPECT_FALSE(s);
  EXPECT_HAS(st.message(), "async_send is not supported with the sg encoding");
}

TEST(Transport, UnknownTransport) {
  TransportContext ctx;
  SlotPool pool(8, 65536);
  LinkOptions o = rx_opts();
  o.transport = "rdma";
  Status st;
  EXPECT_FALSE(make_listener(o, pool, 0, ctx, &st));
  EXPECT_EQ(st.message(), "transport 'rdma' is not built in this version; known: tcp, fabric, ucx");
  EXPECT_FALSE(make_sender(o, pool, ctx, &st));
  EXPECT_EQ(st.message(), "transport 'rdma' is not built in this version; known: tcp, fabric, ucx");
}

TEST(Transport, EncodingNames) {
  for (Encoding e : {Encoding::kCapnp, Encoding::kCopy, Encoding::kSg}) {
    Encoding back;
    ASSERT_TRUE(parse_encoding(encoding_name(e), &back));
    EXPECT_EQ(back, e);
  }
  Encoding x;
  EXPECT_FALSE(parse_encoding("json", &x));
}

// --- a raw receiver: credits from a broken or hostile downstream -----------

// A loopback socket listening on a port of the kernel's choice (*port).
int listen_loopback(uint16_t* port) {
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(lfd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return lfd;
}

// A sg sender's options toward that socket: 4 KiB slots, 12-byte tuples.
LinkOptions raw_sender_options(uint16_t port, bool acks) {
  LinkOptions so = sender_view(loopback_options(Encoding::kSg), port);
  so.slot_bytes = 4096;
  so.tuple_bytes = 12;
  so.acks = acks;
  return so;
}

// Accepts the sender on `lfd` (and closes it), reads its handshake and
// answers as receiver node-a granting `credits` of 4 KiB, one per message.
RawSocket accept_and_reply(int lfd, uint32_t credits) {
  RawSocket peer;
  peer.fd = ::accept(lfd, nullptr, nullptr);
  ::close(lfd);
  std::byte buf[kHandshakePrefixBytes + kMaxHandshakeBytes];
  uint32_t hl = 0;
  EXPECT_TRUE(peer.read(buf, 8));
  EXPECT_TRUE(decode_handshake_prefix(buf, &hl).ok());
  EXPECT_TRUE(peer.read(buf, hl));
  ReplyInfo r;
  r.accepted = true;
  r.credits = credits;
  r.slot_bytes = 4096;
  r.credit_batch = 1;
  r.receiver_name = "node-a";
  size_t n = 0;
  EXPECT_TRUE(encode_reply(r, buf, sizeof buf, &n).ok());
  peer.write(buf, n);
  return peer;
}

class RawDownstream : public ::testing::Test {
 protected:
  // Starts a sender against a raw listening socket that grants 2 credits;
  // `after_reply` plays the receiver after the handshake.
  Status run(const std::function<void(RawSocket&)>& after_reply, bool acks = false) {
    uint16_t port = 0;
    int lfd = listen_loopback(&port);
    const LinkOptions so = raw_sender_options(port, acks);
    Status result;
    TransportContext ctx;
    SlotPool tx(8, 4096);
    std::thread t([&] {
      Status st;
      auto s = make_sender(so, tx, ctx, &st);
      if (!s) {
        result = st;
        return;
      }
      std::vector<Descriptor> d;
      for (int i = 0; i < 4; ++i) {
        uint32_t slot = tx.try_acquire();
        size_t n = write_event(tx.slot(slot), 0, i, i, 1, 12);
        d.push_back(Descriptor{slot, 0, static_cast<uint32_t>(n), 1, 1, 0});
        // One send per descriptor: each becomes its own frame and credit.
        st = s->send(std::span<const Descriptor>(&d.back(), 1));
        if (!st) break;
      }
      result = st;
    });
    RawSocket peer = accept_and_reply(lfd, 2);
    after_reply(peer);
    t.join();
    return result;
  }
};

TEST_F(RawDownstream, BadCreditMagic) {
  Status st = run([](RawSocket& p) {
    CreditFrame c{0x11111111, 1, 0};
    p.write(&c, sizeof c);
  });
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "bad credit frame magic 0x11111111");
  EXPECT_HAS(st.message(), "link loadgen -> node-a (127.0.0.1:");
}

TEST_F(RawDownstream, CreditsAboveTheGrant) {
  Status st = run([](RawSocket& p) {
    CreditFrame c{kCreditMagic, 5, 0};
    p.write(&c, sizeof c);
  });
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "returned 5 credits");
  EXPECT_HAS(st.message(), "the 2 it granted");
}

// With acks, an acknowledgement of frames never sent would have the sender
// drop copies nobody else holds: refused, naming both counts. The sender
// reads it after its second frame (its credits then below half the grant of
// 2), or, if it comes later, after the third.
TEST_F(RawDownstream, AnAckBeyondWhatWasSent) {
  Status st = run(
      [](RawSocket& p) {
        CreditFrame c{kCreditMagic, 1, 100};
        p.write(&c, sizeof c);
      },
      true);
  ASSERT_FALSE(st.ok());
  const std::string m = st.message();
  const std::string said = "the receiver acknowledged 100 frames of this connection; at most ";
  EXPECT_TRUE(m.find(said + "2 were sent") != std::string::npos || m.find(said + "3 were sent") != std::string::npos)
      << m;
  EXPECT_HAS(st.message(), "link loadgen -> node-a (127.0.0.1:");
}

// With acks, a bad credit message is a protocol error, not a broken
// connection: the receiver's bytes are wrong, and a new connection would
// bring the same. The sender ends with it at once; it does not connect
// again for reconnect_timeout_ms. (A receiver that went away is a break:
// ReceiverClosesWhileSenderWaitsForCredit, and the replay tests.)
TEST_F(RawDownstream, WithAcksABadCreditMessageEndsTheSenderAtOnce) {
  const CreditFrame bad[] = {{0x11111111, 1, 0}, {kCreditMagic, 5, 0}};
  const char* said[] = {"bad credit frame magic 0x11111111", "returned 5 credits"};
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = run([&](RawSocket& p) { p.write(&bad[i], sizeof bad[i]); }, true);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(st.protocol_error()) << st.message();
    EXPECT_HAS(st.message(), said[i]);
    EXPECT_EQ(st.message().find("connect"), std::string::npos) << st.message();
    EXPECT_LT(took, 5.0);  // against reconnect_timeout_ms' 10 s
  }
}

TEST_F(RawDownstream, ReceiverClosesWhileSenderWaitsForCredit) {
  Status st = run([](RawSocket& p) { ::shutdown(p.fd, SHUT_RDWR); });
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "loadgen -> node-a");
}

// A sender low on credits reads the credit messages that arrived after it
// sends a batch, not before it sends the next frame: the read (a system call)
// then sits in the link's idle time instead of in a frame's latency. With
// acks, the slots those messages acknowledge are released then too.
class CreditTopUp : public ::testing::TestWithParam<bool> {};

TEST_P(CreditTopUp, ASenderReadsArrivedCreditsAfterItsBatchNotBeforeTheNext) {
  const bool acks = GetParam();
  uint16_t port = 0;
  int lfd = listen_loopback(&port);
  const LinkOptions so = raw_sender_options(port, acks);
  TransportContext ctx;
  SlotPool tx(8, 4096);
  std::mutex mu;
  std::condition_variable cv;
  int step = 0;  // 1: frame 1 sent; 2: a credit message is in the sender's socket; 3: done
  auto wait_for = [&](int s) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, std::chrono::seconds(10), [&] { return step >= s; });
  };
  auto go = [&](int s) {
    std::lock_guard lk(mu);
    step = s;
    cv.notify_all();
  };
  Status result;
  std::vector<uint64_t> credits, held;  // after each send: credits in hand, frames kept for replay
  std::thread t([&] {
    Status st;
    auto s = make_sender(so, tx, ctx, &st);
    for (int i = 0; s && st && i < 3; ++i) {
      if (i == 1 && !wait_for(2)) st = Status::Error("the peer never sent its credit message");
      if (!st) break;
      const uint32_t slot = tx.try_acquire();
      const size_t n = write_event(tx.slot(slot), 0, i, i, 1, 12);
      const Descriptor d{slot, 0, static_cast<uint32_t>(n), 1, 1, 0};
      st = s->send(std::span<const Descriptor>(&d, 1));
      credits.push_back(s->stats().credits);
      held.push_back(s->replay_stats().held_frames);
      if (i == 0) go(1);
    }
    result = st;
    go(3);
    wait_for(4);  // the sender stays up (its socket open) until the peer is done
  });
  RawSocket peer = accept_and_reply(lfd, 4);
  EXPECT_TRUE(wait_for(1));
  CreditFrame c{kCreditMagic, 1, acks ? 1u : 0u};  // frame 1's credit back (and, with acks, frame 1 safe)
  peer.write(&c, sizeof c);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // in the sender's socket
  go(2);
  EXPECT_TRUE(wait_for(3));
  go(4);
  t.join();
  ASSERT_TRUE(result.ok()) << result.message();
  // 4 granted: 3 after frame 1; 2 after frame 2, half the grant, so no read;
  // after frame 3 one left, below half: the credit that waited since frame 1
  // is read at once, and 2 are in hand for the next frame.
  EXPECT_EQ(credits, (std::vector<uint64_t>{3, 2, 2}));
  // With acks, frame 1's slot went back with that read: 2 kept, not 3.
  const std::vector<uint64_t> want_held = acks ? std::vector<uint64_t>{1, 2, 2} : std::vector<uint64_t>{0, 0, 0};
  EXPECT_EQ(held, want_held);
}

INSTANTIATE_TEST_SUITE_P(Acks, CreditTopUp, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "on" : "off"; });

}  // namespace
}  // namespace sluice

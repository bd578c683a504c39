// Fuzzes the tcp transport's decoders with the exact functions the receiver
// uses. The first input byte picks the decoder and the link's encoding; the
// rest is what a hostile peer would send.
//   0: handshake (prefix, then Hello and HelloReply decoders)
//   1: frame stream: header, then payload (kEvents/kEnd checks or the capnp
//      event rebuild into a slot), repeatedly, as the receiver walks a stream
//   4: credit messages (credits and acks) as a tcp sender reads its stream,
//      cut where the input says, and one as a message carrier delivers it
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/tcp/codec.h"

using namespace sluice;

namespace {

void handshake(const std::byte* p, size_t n) {
  HelloInfo hello;
  ReplyInfo reply;
  if (n >= kHandshakePrefixBytes) {
    uint32_t len = 0;
    if (decode_handshake_prefix(p, &len).ok() && len <= n - kHandshakePrefixBytes) {
      (void)decode_hello(p + kHandshakePrefixBytes, len, &hello);
      (void)decode_reply(p + kHandshakePrefixBytes, len, &reply);
    }
  }
  // Also as a bare body of whatever length arrived.
  (void)decode_hello(p, n, &hello);
  (void)decode_reply(p, n, &reply);
  if (decode_hello(p, n, &hello).ok()) {
    LinkOptions o;
    (void)hello_mismatch(hello, hello_from_options(o));
  }
}

void frames(const std::byte* p, size_t n, Encoding enc) {
  LinkOptions o;
  o.tcp.encoding = enc;
  o.slot_bytes = 4096;
  o.tuple_bytes = 12;
  const tcp::FrameLimits lim = tcp::frame_limits(o);
  // Each payload gets its own allocation of exactly its size, so
  // AddressSanitizer sees any read past it (a large shared buffer would hide
  // an over-read inside its slack).
  static std::vector<uint64_t> scratch(lim.capnp_bytes / 8 + 2);
  static std::vector<std::byte> slot(o.slot_bytes);
  size_t off = 0;
  while (n - off >= sizeof(FrameHeader)) {
    FrameHeader h;
    if (!tcp::decode_frame_header(p + off, lim, &h).ok()) return;
    off += sizeof(FrameHeader);
    if (n - off < h.payload_bytes) return;
    // new std::byte[0] is a real zero-size allocation: ASan flags any read of it.
    std::unique_ptr<std::byte[]> own(new std::byte[h.payload_bytes]);
    std::byte* pay = own.get();
    std::memcpy(pay, p + off, h.payload_bytes);
    off += h.payload_bytes;
    uint64_t tuples = 0;
    if (h.kind == static_cast<uint16_t>(FrameKind::kCapnpEvent)) {
      uint32_t bytes = 0;
      // Odd offset: exercises the copy into aligned scratch.
      std::unique_ptr<std::byte[]> odd(new std::byte[h.payload_bytes + 1]);
      std::memcpy(odd.get() + 1, pay, h.payload_bytes);
      (void)tcp::decode_capnp_event(odd.get() + 1, h.payload_bytes, lim,
                                    reinterpret_cast<std::byte*>(scratch.data()), slot.data(),
                                    slot.size(), &bytes, &tuples);
    } else if (!tcp::check_frame_payload(h, pay, lim, &tuples).ok()) {
      return;
    }
  }
}

// The credit stream arrives in pieces: the first byte of each piece says
// how long it is, as recv() may cut anywhere. What a sender keeps between
// reads is what the tcp carrier keeps (a partial message); acks only grow.
void credits(const std::byte* p, size_t n) {
  std::byte buf[512];
  size_t have = 0;
  uint64_t sum = 0, acked = 0;
  size_t off = 0;
  while (off < n) {
    size_t cut = std::min<size_t>(static_cast<uint8_t>(p[off]) % 64 + 1, n - off - 1);
    ++off;
    cut = std::min(cut, sizeof buf - have);
    std::memcpy(buf + have, p + off, cut);
    off += cut;
    have += cut;
    size_t used = 0;
    const uint64_t before = acked;
    if (!read_credits(buf, have, &used, &sum, &acked).empty()) return;
    if (used > have || used % sizeof(CreditFrame) || acked < before) __builtin_trap();
    std::memmove(buf, buf + used, have - used);
    have -= used;
  }
  CreditFrame out;
  if (n >= 4) {
    uint32_t imm;
    std::memcpy(&imm, p, 4);
    (void)check_credit_message(p + 4, n - 4, imm, &out);
    if (check_named_credits(p + 4, n - 4, imm, 64, &out).empty())
      for (uint32_t i = 0; i < out.credits; ++i) {
        uint32_t s;
        std::memcpy(&s, p + 4 + sizeof(CreditFrame) + size_t{i} * 4, 4);
        if (s >= 64) __builtin_trap();
      }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::byte* p = reinterpret_cast<const std::byte*>(data + 1);
  size_t n = size - 1;
  switch (data[0] % 5) {
    case 0: handshake(p, n); break;
    case 1: frames(p, n, Encoding::kSg); break;
    case 2: frames(p, n, Encoding::kCopy); break;
    case 3: frames(p, n, Encoding::kCapnp); break;
    case 4: credits(p, n); break;
  }
  return 0;
}

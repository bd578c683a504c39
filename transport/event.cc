#include <algorithm>
#include "transport/event.h"

#include "transport/transport.h"  // Encoding

#include <fmt/format.h>
// XXH3_state_t on the stack (no allocation per event): its layout is public
// only with static linking in mind; the header and the library are one package.
#define XXH_STATIC_LINKING_ONLY
#include <xxh_x86dispatch.h>

namespace sluice {

// XXH3 from libxxhash; the dispatch entry picks the widest vector unit this
// CPU has (AVX2 here) at run time, so the binary stays portable.
uint64_t event_checksum(const std::byte* event) {
  EventHeader h;
  std::memcpy(&h, event, sizeof h);
  const uint64_t head = XXH3_64bits_withSeed_dispatch(event, kChecksumOffset, 0);
  const size_t body = h.tuple_block_bytes() + h.data_bytes;
  return XXH3_64bits_withSeed_dispatch(event + kEventHeaderBytes, body, head);
}

void seal_event(std::byte* event) {
  uint32_t flags;
  std::memcpy(&flags, event + offsetof(EventHeader, flags), sizeof flags);
  if (flags & kEventTemplate) {
    flags &= ~kEventTemplate;
    std::memcpy(event + offsetof(EventHeader, flags), &flags, sizeof flags);
  }
  uint64_t c = event_checksum(event);
  std::memcpy(event + kChecksumOffset, &c, sizeof c);
}

uint64_t template_body_hash(std::byte* event) {
  EventHeader h;
  std::memcpy(&h, event, sizeof h);
  std::byte* t = event + kEventHeaderBytes;
  for (uint32_t i = 0; i < h.tuple_count; ++i, t += h.tuple_bytes) std::memset(t, 0, kMinTupleBytes);
  return event_body_hash(event);
}

uint64_t event_body_hash(const std::byte* event) {
  EventHeader h;
  std::memcpy(&h, event, sizeof h);
  return XXH3_64bits_dispatch(event + kEventHeaderBytes, h.tuple_block_bytes() + h.data_bytes);
}

namespace {
// Tuples [0, n) from `t` on: checks seq and key (from `seq`), zeroing them
// when `zero`; returns the OR of the differences (0: all as the template).
uint64_t check_fields(std::byte* t, size_t tb, uint32_t n, uint64_t seq, bool zero) {
  uint64_t mul = seq * kTemplateKeyMul, bad = 0;
  for (uint32_t j = 0; j < n; ++j, t += tb, ++seq, mul += kTemplateKeyMul) {
    uint64_t s;
    uint32_t k;
    std::memcpy(&s, t + kTupleSeqOffset, 8);
    std::memcpy(&k, t + kTupleKeyOffset, 4);
    bad |= (s ^ seq) | (k ^ static_cast<uint32_t>(mul >> kTemplateKeyShift));
    if (zero) std::memset(t, 0, kMinTupleBytes);
  }
  return bad;
}

void write_fields(std::byte* t, size_t tb, uint32_t n, uint64_t seq) {
  uint64_t mul = seq * kTemplateKeyMul;
  for (uint32_t j = 0; j < n; ++j, t += tb, ++seq, mul += kTemplateKeyMul) {
    const uint32_t k = static_cast<uint32_t>(mul >> kTemplateKeyShift);
    std::memcpy(t + kTupleSeqOffset, &seq, 8);
    std::memcpy(t + kTupleKeyOffset, &k, 4);
  }
}
}  // namespace

bool check_template_event(std::byte* event, bool hash_body, uint64_t* body_hash) {
  EventHeader h;
  std::memcpy(&h, event, sizeof h);
  std::byte* body = event + kEventHeaderBytes;
  if (!hash_body) return check_fields(body, h.tuple_bytes, h.tuple_count, h.first_seq, false) == 0;
  // A few KiB of tuples at a time: checked and zeroed, hashed, written back
  // while their lines are still in L1 (streaming XXH3 gives the one-shot
  // hash), so the event's lines come from memory once.
  const size_t tb = h.tuple_bytes;
  constexpr size_t kChunkBytes = 16384;
  const uint32_t per_chunk = static_cast<uint32_t>(std::max<size_t>(1, kChunkBytes / tb));
  if (h.tuple_count <= per_chunk) {
    // One chunk (a small event): the one-shot hash, without the streaming
    // state's set-up and finish (about 300 instructions, most of what a
    // one-tuple event's check cost).
    const uint64_t bad = check_fields(body, tb, h.tuple_count, h.first_seq, true);
    *body_hash = XXH3_64bits_dispatch(body, h.tuple_block_bytes() + h.data_bytes);
    write_fields(body, tb, h.tuple_count, h.first_seq);
    return bad == 0;
  }
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  uint64_t bad = 0;
  for (uint32_t i = 0; i < h.tuple_count;) {
    const uint32_t m = std::min(per_chunk, h.tuple_count - i);
    std::byte* chunk = body + size_t{i} * tb;
    bad |= check_fields(chunk, tb, m, h.first_seq + i, true);
    XXH3_64bits_update_dispatch(&st, chunk, size_t{m} * tb);
    write_fields(chunk, tb, m, h.first_seq + i);
    i += m;
  }
  XXH3_64bits_update_dispatch(&st, body + h.tuple_block_bytes(), h.data_bytes);
  *body_hash = XXH3_64bits_digest(&st);
  return bad == 0;
}

uint64_t template_checksum(const std::byte* event, uint64_t body_hash) {
  return XXH3_64bits_withSeed_dispatch(event, kChecksumOffset, body_hash);
}

namespace {
// check_event_header's tests, in its order, without the messages.
bool event_header_ok(const std::byte* p, size_t avail, uint32_t expect_tuple_bytes) {
  if (avail < kEventHeaderBytes) return false;
  EventHeader h;
  std::memcpy(&h, p, sizeof h);
  return h.magic == kEventMagic && h.version == kWireVersion && h.header_bytes == kEventHeaderBytes &&
         h.tuple_bytes >= kMinTupleBytes && (expect_tuple_bytes == 0 || h.tuple_bytes == expect_tuple_bytes) &&
         h.tuple_count <= h.tuple_span && h.stream < kMaxStreams &&
         kEventHeaderBytes + uint64_t{h.tuple_count} * h.tuple_bytes + h.data_bytes <= avail;
}
}  // namespace

bool event_run_ok(const std::byte* p, size_t bytes, uint32_t events, uint32_t expect_tuple_bytes,
                  uint64_t* tuples) {
  size_t off = 0;
  uint64_t n_tuples = 0;
  for (uint32_t i = 0; i < events; ++i) {
    if (!event_header_ok(p + off, bytes - off, expect_tuple_bytes)) return false;
    EventHeader h;
    std::memcpy(&h, p + off, sizeof h);
    off += h.wire_bytes();
    n_tuples += h.tuple_count;
  }
  if (off != bytes) return false;
  if (tuples) *tuples = n_tuples;
  return true;
}

std::string check_event_header(const std::byte* p, size_t avail, uint32_t expect_tuple_bytes) {
  if (avail < kEventHeaderBytes)
    return fmt::format("event header cut off: {} of {} bytes", avail, kEventHeaderBytes);
  EventHeader h;
  std::memcpy(&h, p, sizeof h);
  if (h.magic != kEventMagic) return fmt::format("bad event magic 0x{:08x}", h.magic);
  if (h.version != kWireVersion)
    return fmt::format("event version {} (this build speaks {})", h.version, kWireVersion);
  if (h.header_bytes != kEventHeaderBytes)
    return fmt::format("event header length {} (expected {})", h.header_bytes, kEventHeaderBytes);
  if (h.tuple_bytes < kMinTupleBytes)
    return fmt::format("tuple size {} below the minimum {}", h.tuple_bytes, kMinTupleBytes);
  if (expect_tuple_bytes != 0 && h.tuple_bytes != expect_tuple_bytes)
    return fmt::format("tuple size {} but the link's schema says {}", h.tuple_bytes,
                       expect_tuple_bytes);
  if (h.tuple_count > h.tuple_span)
    return fmt::format("tuple count {} above tuple span {}", h.tuple_count, h.tuple_span);
  if (h.stream >= kMaxStreams) return fmt::format("stream {} beyond {}", h.stream, kMaxStreams);
  // 64-bit arithmetic: a hostile count times a hostile size cannot wrap.
  uint64_t len = kEventHeaderBytes + uint64_t{h.tuple_count} * h.tuple_bytes + h.data_bytes;
  if (len > avail)
    return fmt::format("event length {} beyond the {} bytes left in the frame", len, avail);
  return {};
}

std::string check_event_run(const std::byte* p, size_t bytes, uint32_t events,
                            uint32_t expect_tuple_bytes, uint64_t* tuples) {
  size_t off = 0;
  uint64_t n_tuples = 0;
  for (uint32_t i = 0; i < events; ++i) {
    std::string err = check_event_header(p + off, bytes - off, expect_tuple_bytes);
    if (!err.empty()) return fmt::format("event {} at byte {}: {}", i, off, err);
    EventHeader h;
    std::memcpy(&h, p + off, sizeof h);
    off += h.wire_bytes();
    n_tuples += h.tuple_count;
  }
  if (off != bytes)
    return fmt::format("{} events fill {} bytes but the frame holds {}", events, off, bytes);
  if (tuples) *tuples = n_tuples;
  return {};
}

std::string check_end_of_stream(const std::byte* p, size_t bytes) {
  if (bytes < 8) return fmt::format("end-of-stream cut off: {} bytes", bytes);
  uint32_t n, flags;
  std::memcpy(&n, p, 4);
  std::memcpy(&flags, p + 4, 4);
  if (n > kMaxStreams) return fmt::format("end-of-stream names {} streams (max {})", n, kMaxStreams);
  if ((flags & ~(kEndAccounts | kEndPartitioned)) ||
      ((flags & kEndPartitioned) && !(flags & kEndAccounts)))
    return fmt::format("end-of-stream flags {:#x} unknown", flags);
  const size_t want = EndOfStream::end_wire_bytes(n, flags);
  if (bytes != want)
    return fmt::format("end-of-stream of {} streams is {} bytes, frame says {}", n, want, bytes);
  return {};
}

std::string read_credits(const std::byte* p, size_t n, size_t* used, uint64_t* credits,
                         uint64_t* acked) {
  size_t off = 0;
  for (; n - off >= sizeof(CreditFrame); off += sizeof(CreditFrame)) {
    CreditFrame c;
    std::memcpy(&c, p + off, sizeof c);
    if (c.magic != kCreditMagic) {
      *used = off;
      return fmt::format("bad credit frame magic 0x{:08x}", c.magic);
    }
    if (c.credits > kMaxCreditsPerMessage) {
      *used = off;
      return fmt::format("a credit message grants {} credits (at most {})", c.credits,
                         kMaxCreditsPerMessage);
    }
    *credits += c.credits;
    if (c.acked > *acked) *acked = c.acked;
  }
  *used = off;
  return {};
}

namespace {
// A credit message's 16 bytes at p (the caller checked there are that
// many): the magic, and the grant against the immediate's.
std::string check_credit_header(const std::byte* p, uint32_t imm_credits, CreditFrame* out) {
  std::memcpy(out, p, sizeof *out);
  if (out->magic != kCreditMagic) return fmt::format("bad credit frame magic 0x{:08x}", out->magic);
  if (out->credits != imm_credits)
    return fmt::format("a credit message grants {} credits, its immediate says {}", out->credits,
                       imm_credits);
  return {};
}
}  // namespace

std::string check_credit_message(const std::byte* p, size_t len, uint32_t imm_credits,
                                 CreditFrame* out) {
  if (len != sizeof(CreditFrame))
    return fmt::format("a credit message of {} bytes (it is {})", len, sizeof(CreditFrame));
  if (std::string e = check_credit_header(p, imm_credits, out); !e.empty()) return e;
  if (out->credits > kMaxCreditsPerMessage)
    return fmt::format("a credit message grants {} credits (at most {})", out->credits,
                       kMaxCreditsPerMessage);
  return {};
}

std::string check_named_credits(const std::byte* p, size_t len, uint32_t imm_credits,
                                uint32_t slots, CreditFrame* out) {
  if (len < sizeof(CreditFrame))
    return fmt::format("a credit message of {} bytes (at least {})", len, sizeof(CreditFrame));
  if (std::string e = check_credit_header(p, imm_credits, out); !e.empty()) return e;
  if (out->credits == 0 || out->credits > slots)
    return fmt::format("a credit message grants {} credits (the link has {} slots)", out->credits,
                       slots);
  if (len != sizeof(CreditFrame) + size_t{out->credits} * 4)
    return fmt::format("a credit message of {} bytes names {} slots (it is {})", len, out->credits,
                       sizeof(CreditFrame) + size_t{out->credits} * 4);
  for (uint32_t i = 0; i < out->credits; ++i) {
    uint32_t s;
    std::memcpy(&s, p + sizeof(CreditFrame) + size_t{i} * 4, 4);
    if (s >= slots) return fmt::format("a credit message names slot {} (the link has {})", s, slots);
  }
  return {};
}

void read_end(const std::byte* p, size_t bytes, EndOfStream* out) {
  std::memcpy(&out->n_streams, p, 4);
  std::memcpy(&out->flags, p + 4, 4);
  if (out->n_streams > kMaxStreams) out->n_streams = kMaxStreams;
  const size_t n = out->n_streams;
  std::memcpy(out->streams, p + 8, std::min(bytes - 8, n * sizeof(EndOfStreamEntry)));
  std::memset(out->accounts, 0, n * sizeof(EndOfStreamAccount));
  if (!(out->flags & kEndAccounts) || bytes < EndOfStream::end_wire_bytes(n, out->flags)) return;
  const size_t each = (out->flags & kEndPartitioned) ? 32 : 24;
  const std::byte* a = p + 8 + n * sizeof(EndOfStreamEntry);
  for (size_t i = 0; i < n; ++i) std::memcpy(&out->accounts[i], a + i * each, each);
}

void write_end(const EndOfStream& eos, std::byte* p) {
  std::memcpy(p, &eos.n_streams, 4);
  std::memcpy(p + 4, &eos.flags, 4);
  const size_t n = eos.n_streams;
  std::memcpy(p + 8, eos.streams, n * sizeof(EndOfStreamEntry));
  if (!(eos.flags & kEndAccounts)) return;
  const size_t each = (eos.flags & kEndPartitioned) ? 32 : 24;
  std::byte* a = p + 8 + n * sizeof(EndOfStreamEntry);
  for (size_t i = 0; i < n; ++i) std::memcpy(a + i * each, &eos.accounts[i], each);
}

// The encodings' names live here, with the wire format, so every user (the
// codec and the fuzzer built from it, the deployment parser) shares one table.
const char* encoding_name(Encoding e) {
  switch (e) {
    case Encoding::kCapnp: return "capnp";
    case Encoding::kCopy: return "copy";
    case Encoding::kSg: return "sg";
  }
  return "?";
}

bool parse_encoding(std::string_view s, Encoding* e) {
  if (s == "capnp") *e = Encoding::kCapnp;
  else if (s == "copy") *e = Encoding::kCopy;
  else if (s == "sg") *e = Encoding::kSg;
  else return false;
  return true;
}

}  // namespace sluice

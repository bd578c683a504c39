// sluice event wire format.
//
// An event is the unit of transfer: an event header, a block of fixed-size
// tuples, and an optional block of array data. The bytes of an event are the
// same in a pool slot and on the wire (little-endian hosts only; the capnp
// encoding exists for heterogeneous peers), so the tcp `sg` encoding and the
// RDMA transports move them without touching them.
//
// Events travel in frames. A frame is what one credit pays for: its payload
// lands in exactly one receiver slot, so a frame's payload is never larger than
// the receiver's slot. A frame carries one or more whole events back to back.
//
// Lifecycle of an event:
//   1. the load generator writes header, tuples and data into a slot and seals
//      it (checksum);
//   2. every hop carries the bytes unchanged, or (an operator that drops tuples)
//      compacts them in place and reseals;
//   3. the sink checks the checksum, the stream's tuple sequence and latency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace sluice {

inline constexpr uint32_t kEventMagic = 0x45434C53;  // "SLCE"
inline constexpr uint32_t kFrameMagic = 0x52464C53;  // "SLFR"
inline constexpr uint32_t kCreditMagic = 0x52434C53; // "SLCR"
inline constexpr uint16_t kWireVersion = 2;  // the event header's version: 2, XXH3 checksum
// The link protocol's version, sent in Hello (transport/PROTOCOL.md): 3 added
// the acknowledgement to the credit message, 4 the sender's acks to Hello.
inline constexpr uint16_t kLinkVersion = 4;
inline constexpr uint32_t kMinTupleBytes = 12;
inline constexpr uint32_t kMaxStreams = 256;

// Event header, 64 bytes (one cache line), little-endian.
//
//  byte  0      4      6      8           12          16
//        +------+------+------+-----------+-----------+
//        |magic |vers. |hdrlen| stream    |tuple_bytes|
//        +------+------+------+-----------+-----------+
//  16    | first_seq (u64)                |
//  24    | tuple_count (u32) | tuple_span (u32)       |
//  32    | data_bytes (u32)  | flags (u32)            |
//  40    | send_ts_ns (u64)                           |
//  48    | event_seq (u64)                            |
//  56    | checksum (u64)                             |
//  64    tuple block: tuple_count x tuple_bytes
//        data block:  data_bytes
//
// first_seq is the stream sequence number of the first tuple the generator put
// into this event, tuple_span how many it put there. Operators that drop tuples
// lower tuple_count and keep tuple_span, so the sink tells filtered tuples from
// lost ones. checksum covers bytes [0, 56) of the header and both blocks.
//
// flags: kEventPart marks one part of an event cut by a key split (`split:
// key`): the tuples of the event that go to one link, with the event's own
// first_seq and tuple_span. Its tuple_span - tuple_count tuples went to the
// other links (or were filtered before the split); the split's END account
// `partitioned` explains them, so neither the sink nor an operator downstream
// counts them as filtered.
inline constexpr uint32_t kEventPart = 1;
// kEventTemplate marks an event exactly as the load generator's template made
// it (the default schema, nothing dropped or changed since): tuple i carries
// seq first_seq + i and key template_key(seq), and the checksum is the
// template form (template_checksum below), which the generator computes from
// the header alone. Whoever changes an event reseals it (seal_event), which
// clears the flag and writes the full checksum.
inline constexpr uint32_t kEventTemplate = 2;
struct EventHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_bytes;
  uint32_t stream;
  uint32_t tuple_bytes;
  uint64_t first_seq;
  uint32_t tuple_count;
  uint32_t tuple_span;
  uint32_t data_bytes;
  uint32_t flags;
  uint64_t send_ts_ns;
  uint64_t event_seq;
  uint64_t checksum;

  size_t tuple_block_bytes() const { return size_t{tuple_count} * tuple_bytes; }
  size_t wire_bytes() const { return sizeof(EventHeader) + tuple_block_bytes() + data_bytes; }
};
static_assert(sizeof(EventHeader) == 64);
inline constexpr size_t kEventHeaderBytes = sizeof(EventHeader);
// The smallest slot a link can use: one event of one tuple of the smallest
// size. A sender refuses a HelloReply that grants less.
inline constexpr uint32_t kMinSlotBytes = kEventHeaderBytes + kMinTupleBytes;
inline constexpr size_t kChecksumOffset = offsetof(EventHeader, checksum);

// Tuple, at least 12 bytes: the first 12 are fixed, the rest is payload.
//
//  byte 0             8         12            tuple_bytes
//       +-------------+---------+--- ... ---+
//       | seq (u64)   |key (u32)| payload   |
//       +-------------+---------+--- ... ---+
struct TupleFields {
  uint64_t seq;
  uint32_t key;
};
inline constexpr size_t kTupleSeqOffset = 0;
inline constexpr size_t kTupleKeyOffset = 8;

// The key the load generator gives tuple `seq` (a template event's keys): a
// multiplicative hash, uniform in [0, 1024), so a filter on key selects a
// predictable fraction. Tuple seq + 1's is (seq + 1) * kTemplateKeyMul >> 54,
// so a loop over consecutive tuples adds kTemplateKeyMul instead.
inline constexpr uint64_t kTemplateKeyMul = 0x9E3779B97F4A7C15ull;
inline constexpr int kTemplateKeyShift = 54;
inline uint32_t template_key(uint64_t seq) {
  return static_cast<uint32_t>((seq * kTemplateKeyMul) >> kTemplateKeyShift);
}

inline uint64_t tuple_seq(const std::byte* t) {
  uint64_t v;
  std::memcpy(&v, t + kTupleSeqOffset, sizeof v);
  return v;
}
inline uint32_t tuple_key(const std::byte* t) {
  uint32_t v;
  std::memcpy(&v, t + kTupleKeyOffset, sizeof v);
  return v;
}

// Frame header, 16 bytes, precedes every frame on a byte-stream transport.
//
//  byte 0        4      6      8              12             16
//       +--------+------+------+--------------+--------------+
//       | magic  | kind |flags | payload_bytes| events       |
//       +--------+------+------+--------------+--------------+
enum class FrameKind : uint16_t {
  kEvents = 1,     // payload: `events` whole events back to back (sg, copy)
  kCapnpEvent = 2, // payload: one Cap'n Proto Event message, flat-array form
  kEnd = 3,        // payload: EndOfStream; the sender will send nothing more
};
struct FrameHeader {
  uint32_t magic;
  uint16_t kind;
  uint16_t flags;
  uint32_t payload_bytes;
  uint32_t events;
};
static_assert(sizeof(FrameHeader) == 16);

// Credit message, 16 bytes, receiver -> sender on the same link: more
// credits, and the acknowledgement: how many frames of this connection, from
// the first, the receiver has finished with (their slots came back), so the
// sender may drop its copies of them (upstream backup, PROTOCOL.md section 5).
struct CreditFrame {
  uint32_t magic;
  uint32_t credits;
  uint64_t acked;
};
static_assert(sizeof(CreditFrame) == 16);

// The most credits one message may grant: more than any pool holds, far
// less than would wrap a sum of a few of them.
inline constexpr uint32_t kMaxCreditsPerMessage = 1u << 24;

// Reads the credit messages at the front of a byte stream (tcp): *used the
// bytes of whole messages read (a partial one stays), *credits their sum
// added, *acked raised to the largest ack seen. "" or what is wrong: a bad
// magic, or a grant beyond kMaxCreditsPerMessage.
std::string read_credits(const std::byte* p, size_t n, size_t* used, uint64_t* credits,
                         uint64_t* acked);
// One credit message as a message carrier delivers it: `len` bytes, the
// immediate's credit count alongside. "" or what is wrong.
std::string check_credit_message(const std::byte* p, size_t len, uint32_t imm_credits,
                                 CreditFrame* out);
// rma (PROTOCOL.md section 5, named credits): a credit message names the slots it grants:
// the CreditFrame, then `credits` slot numbers (uint32, of the link's slots,
// counted from its first), each below `slots`. "" or what is wrong; the
// names are at p + sizeof(CreditFrame).
std::string check_named_credits(const std::byte* p, size_t len, uint32_t imm_credits,
                                uint32_t slots, CreditFrame* out);
// rma: the note that follows a frame written into a named slot.
struct RmaNote {
  uint32_t slot;   // of the link's slots, counted from its first
  uint32_t bytes;  // the frame's payload
};
static_assert(sizeof(RmaNote) == 8);

// End of stream, the payload of a kEnd frame. Per stream: the sequence number
// one past the last tuple generated and the number of events generated, so the
// sink sees a lost tail. With flag kEndAccounts, one account per stream follows
// the entries, in their order: the tuples of that stream that operators
// upstream took out on purpose (filtered inside events they consumed,
// aggregated, joined), so the sink tells them from lost ones. With flag
// kEndPartitioned as well, each account has a fourth field: the tuples of
// that stream a key split sent to the other links (the sink counts them
// `partitioned`). Without it the accounts are the 24-byte form, as before.
//
//  byte 0            4           8
//       | n_streams  | flags     | n x { stream u32, reserved u32, next_seq u64, events u64 }
//       [ n x { filtered u64, aggregated u64, joined u64 [, partitioned u64] } ]
//                                   (flags & kEndAccounts [& kEndPartitioned])
inline constexpr uint32_t kEndAccounts = 1;
inline constexpr uint32_t kEndPartitioned = 2;  // only with kEndAccounts
struct EndOfStreamEntry {
  uint32_t stream;
  uint32_t reserved;
  uint64_t next_seq;
  uint64_t events;
};
struct EndOfStreamAccount {
  uint64_t filtered;
  uint64_t aggregated;
  uint64_t joined;
  uint64_t partitioned;
};
// In memory the accounts sit in their own array; read_end/write_end convert
// to and from the packed wire form.
struct EndOfStream {
  uint32_t n_streams;
  uint32_t flags;
  EndOfStreamEntry streams[kMaxStreams];
  EndOfStreamAccount accounts[kMaxStreams];

  size_t wire_bytes() const { return end_wire_bytes(n_streams, flags); }
  static constexpr size_t end_wire_bytes(uint32_t n, uint32_t flags) {
    const size_t account = !(flags & kEndAccounts) ? 0 : (flags & kEndPartitioned) ? 32 : 24;
    return 8 + size_t{n} * (sizeof(EndOfStreamEntry) + account);
  }
};
static_assert(sizeof(EndOfStreamAccount) == 32);
// The largest END payload: kMaxStreams entries with the partitioned accounts.
inline constexpr size_t kMaxEndBytes = 8 + kMaxStreams * 56;
static_assert(kMaxEndBytes == EndOfStream::end_wire_bytes(kMaxStreams, kEndAccounts | kEndPartitioned));
static_assert(kMaxEndBytes == sizeof(EndOfStream));
// Reads a checked END payload (check_end_of_stream) into *out; accounts are
// zero when it has none.
void read_end(const std::byte* p, size_t bytes, EndOfStream* out);
// Writes `eos` in its wire form to `p` (wire_bytes() bytes).
void write_end(const EndOfStream& eos, std::byte* p);
static_assert(sizeof(EndOfStreamEntry) == 24);

// Checksum of one event as laid out in memory: XXH3-64 (xxHash 0.8) of the
// header's first 56 bytes with seed 0 seeds XXH3-64 of the body (tuple block
// then data block, possibly empty):
//   checksum = XXH3_64bits_withSeed(body, len, XXH3_64bits_withSeed(header, 56, 0))
uint64_t event_checksum(const std::byte* event);

// Writes the event's checksum field (the full form above), clearing
// kEventTemplate: an event resealed is no longer the template's.
void seal_event(std::byte* event);

// The template form of the checksum (kEventTemplate): the body is hashed with
// every tuple's seq and key (its first 12 bytes) as zeros, so for a given
// template and tuple count it is one constant the generator computes once, and
// that hash seeds the hash of the header:
//   body_hash = XXH3_64bits(body with bytes [0, 12) of every tuple zeroed)
//   checksum  = XXH3_64bits_withSeed(header [0, 56), seed = body_hash)
// The seq and key fields are checked one by one instead (tuple i: first_seq +
// i, template_key(seq)); a payload or data byte changed changes body_hash.
//
// template_body_hash zeroes those 12 bytes of each tuple IN PLACE and returns
// body_hash: the generator calls it on a fresh slot, the sink once it has
// checked the fields (it is the event's last reader).
uint64_t template_body_hash(std::byte* event);
// XXH3_64bits of the body as it is (template_body_hash once the fields are zero).
uint64_t event_body_hash(const std::byte* event);
// The sink's side: whether every tuple's seq and key are the template's, and
// (hash_body) *body_hash = template_body_hash of the event, in one pass over
// it: the fields are zeroed a few KiB at a time while that piece is hashed
// and written back after, so the bytes are as they came when it returns.
bool check_template_event(std::byte* event, bool hash_body, uint64_t* body_hash);
uint64_t template_checksum(const std::byte* event, uint64_t body_hash);

// Checks an event header found at `p` with `avail` bytes available. Returns an
// empty string when it is well formed and fits, else what is wrong.
// `expect_tuple_bytes` of 0 accepts any tuple size.
std::string check_event_header(const std::byte* p, size_t avail, uint32_t expect_tuple_bytes);

// Walks a frame payload of kEvents kind: checks every event header, that the
// events tile the payload exactly, and that there are `events` of them.
// Returns an empty string when good; counts tuples into *tuples.
std::string check_event_run(const std::byte* p, size_t bytes, uint32_t events,
                            uint32_t expect_tuple_bytes, uint64_t* tuples);

// check_event_run's verdict alone, without building a message: true when it
// would return an empty string (and then *tuples is set). The data path
// asks this first and check_event_run only to say what is wrong: a string
// per frame costs a hop 100-160 ns here.
bool event_run_ok(const std::byte* p, size_t bytes, uint32_t events, uint32_t expect_tuple_bytes,
                  uint64_t* tuples);

// Checks an EndOfStream payload of `bytes` bytes.
std::string check_end_of_stream(const std::byte* p, size_t bytes);

// Event wire size for a tuple size and tuple count.
inline size_t event_wire_bytes(uint32_t tuple_bytes, uint32_t tuples, uint32_t data_bytes = 0) {
  return kEventHeaderBytes + size_t{tuple_bytes} * tuples + data_bytes;
}

// Tuples per event for a requested event size (0: one tuple per event).
inline uint32_t tuples_per_event(uint32_t tuple_bytes, uint32_t event_bytes) {
  if (event_bytes <= kEventHeaderBytes + tuple_bytes) return 1;
  return static_cast<uint32_t>((event_bytes - kEventHeaderBytes) / tuple_bytes);
}

}  // namespace sluice

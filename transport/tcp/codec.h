// Pure decoders and encoders of the tcp transport's wire: the handshake and
// frame headers/payloads. They take (bytes, length, limits) and return a
// Status; they never trust a length or count they were given, never throw and
// never allocate on the data path. The receiver uses exactly these functions,
// and transport/fuzz/fuzz_decoders.cc feeds them hostile bytes.
//
// Handshake message on the wire (both directions):
//
//  byte 0        4              8
//       +--------+--------------+--- length bytes ---+
//       | "SLHS" | length (u32) | capnp flat array   |
//       +--------+--------------+--------------------+
//
// length is a multiple of 8 and at most kMaxHandshakeBytes; both are checked
// before anything is allocated or read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/event.h"
#include "base/status.h"
#include "transport/transport.h"

namespace sluice::tcp {

inline constexpr uint32_t kHandshakeMagic = 0x53484C53;  // "SLHS"
inline constexpr uint32_t kMaxHandshakeBytes = 4096;
inline constexpr size_t kHandshakePrefixBytes = 8;

// What a sender says it was configured with (Hello).
struct HelloInfo {
  uint16_t version = kWireVersion;
  uint32_t link_id = 0;
  std::string schema;
  uint32_t tuple_bytes = 0;
  uint32_t slot_bytes = 0;
  uint32_t slots = 0;
  Encoding encoding = Encoding::kSg;
  std::string token;
  std::string sender_name;
};

// The receiver's answer (HelloReply).
struct ReplyInfo {
  bool accepted = false;
  std::string error;
  uint32_t credits = 0;
  uint32_t slot_bytes = 0;
  uint32_t credit_batch = 0;
  std::string receiver_name;
};

HelloInfo hello_from_options(const LinkOptions& opts);

// Checks the 8-byte prefix; *len is the length of the flat array that follows.
Status decode_handshake_prefix(const std::byte* p, uint32_t* len);

// Writes prefix + flat array into out (cap bytes); *len is the total.
Status encode_hello(const HelloInfo& h, std::byte* out, size_t cap, size_t* len);
Status encode_reply(const ReplyInfo& r, std::byte* out, size_t cap, size_t* len);

// Decodes the flat array (without prefix). `p` need not be aligned.
Status decode_hello(const std::byte* p, size_t len, HelloInfo* out);
Status decode_reply(const std::byte* p, size_t len, ReplyInfo* out);

// Empty when a sender's Hello agrees with what the receiver expects, else the
// mismatch in words ("schema 'sluice.tuple'/128-byte tuples, receiver expects
// 64-byte tuples"). Tokens are compared, never printed.
std::string hello_mismatch(const HelloInfo& got, const HelloInfo& expect);

// What a receiver accepts in a frame.
struct FrameLimits {
  Encoding encoding = Encoding::kSg;
  uint32_t slot_bytes = 0;     // largest kEvents / kEnd payload
  uint32_t tuple_bytes = 0;    // the link's schema
  uint32_t capnp_bytes = 0;    // largest kCapnpEvent payload (capnp_event_bound_bytes)
};
FrameLimits frame_limits(const LinkOptions& opts);

// Largest Cap'n Proto Event message for an event that fits a slot: the bound
// both ends use for kCapnpEvent frames (a capnp event is bigger than the
// event it carries: 24 bytes of struct per tuple plus padded payloads).
size_t capnp_event_bound_bytes(uint32_t slot_bytes, uint32_t tuple_bytes);

// Checks a 16-byte frame header: magic, kind allowed on this encoding,
// payload within the limit, a plausible event count.
Status decode_frame_header(const std::byte* p, const FrameLimits& lim, FrameHeader* out);

// Checks a complete kEvents or kEnd payload against its header; *tuples gets
// the tuple count (0 for kEnd).
Status check_frame_payload(const FrameHeader& h, const std::byte* payload, const FrameLimits& lim,
                           uint64_t* tuples);

// Decodes one kCapnpEvent payload and rebuilds the sluice event (header with
// the sender's checksum, tuples, data) at `slot` (slot_bytes long). When
// `payload` is not 8-byte aligned it is first copied into `scratch` (8-byte
// aligned, at least `bytes` long). *event_bytes / *tuples describe the rebuilt
// event.
Status decode_capnp_event(const std::byte* payload, size_t bytes, const FrameLimits& lim,
                          std::byte* scratch, std::byte* slot, size_t slot_bytes,
                          uint32_t* event_bytes, uint64_t* tuples);

// Serializes the event at `event` as one Cap'n Proto Event message into out
// (cap bytes). `scratch` (8-byte aligned, zeroed, scratch_bytes long) is the
// builder's first segment; it is zeroed again on return. With scratch of
// capnp_event_bound_bytes() nothing is allocated.
Status encode_capnp_event(const std::byte* event, std::byte* scratch, size_t scratch_bytes,
                          std::byte* out, size_t cap, size_t* len);

}  // namespace sluice::tcp

// Pure decoders and encoders of the tcp carrier's wire: frame headers and
// payloads, and the capnp encoding's events (the handshake is the protocol
// core's: transport/handshake.h). They take (bytes, length, limits) and return a
// Status; they never trust a length or count they were given, never throw and
// never allocate on the data path. The receiver uses exactly these functions,
// and transport/fuzz/fuzz_decoders.cc feeds them hostile bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/event.h"
#include "base/status.h"
#include "transport/handshake.h"
#include "transport/transport.h"

namespace sluice::tcp {

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

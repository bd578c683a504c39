// The handshake of every link, whatever its carrier: the sender's Hello and
// the receiver's HelloReply, each one Cap'n Proto message (transport/wire.capnp).
//
// On a byte stream a message travels as
//
//  byte 0        4              8
//       +--------+--------------+--- length bytes -----------------------+
//       | "SLHS" | length (u32) | capnp message: segment table, segments |
//       +--------+--------------+----------------------------------------+
//
// length is a multiple of 8 and at most kMaxHandshakeBytes; both are checked
// before anything is read. A message carrier (libfabric, UCX) sends the same
// bytes as one message. transport/PROTOCOL.md says what each field must be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "transport/event.h"
#include "transport/transport.h"

namespace sluice {

inline constexpr uint32_t kHandshakeMagic = 0x53484C53;  // "SLHS"
inline constexpr uint32_t kMaxHandshakeBytes = 4096;
inline constexpr size_t kHandshakePrefixBytes = 8;
// What a reader of a handshake message traverses at most: pointers nested
// this deep, and this many words (twice the largest message), so a hostile
// message (deep or self-amplifying pointers) fails fast instead of looping.
inline constexpr int kHandshakeNestingLimit = 8;
inline constexpr uint64_t kHandshakeTraversalWords = 2 * kMaxHandshakeBytes / 8;

// What a sender says it was configured with (Hello).
struct HelloInfo {
  uint16_t version = kLinkVersion;
  uint32_t link_id = 0;
  uint32_t instance = 0;
  std::string schema;
  uint32_t tuple_bytes = 0;
  uint32_t slot_bytes = 0;
  uint32_t slots = 0;
  std::string carrier;  // "tcp/sg", "tcp/copy", "tcp/capnp", ...
  std::string token;
  std::string sender_name;
  std::string receiver_name;
  bool acks = false;  // LinkOptions::acks: both ends must agree
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

// The carrier and its wire form, as Hello names it: "tcp/sg", ...
std::string carrier_name(const LinkOptions& opts);

// The Hello a sender with these options sends.
HelloInfo hello_from_options(const LinkOptions& opts);
// What a receiver with these options expects of a Hello (its own name as the
// receiver, whether or not its senders name it).
HelloInfo expected_hello(const LinkOptions& opts);

// Checks the 8-byte prefix; *len is the length of the message that follows.
Status decode_handshake_prefix(const std::byte* p, uint32_t* len);

// Writes prefix + message into out (cap bytes); *len is the total.
Status encode_hello(const HelloInfo& h, std::byte* out, size_t cap, size_t* len);
Status encode_reply(const ReplyInfo& r, std::byte* out, size_t cap, size_t* len);

// Decodes the message (without prefix). `p` need not be aligned.
Status decode_hello(const std::byte* p, size_t len, HelloInfo* out);
Status decode_reply(const std::byte* p, size_t len, ReplyInfo* out);

// Empty when a sender's Hello agrees with what the receiver expects, else the
// mismatch in words ("schema 'sluice.tuple'/128-byte tuples, receiver expects
// 64-byte tuples"; "sender 'loadgen' has acks on, receiver 'sink' has acks
// off: ..."). Tokens are compared, never printed.
std::string hello_mismatch(const HelloInfo& got, const HelloInfo& expect);

// Whether a token `got` from a peer equals the `expect`ed one, in time that
// depends on the expected token's length only: every byte is looked at
// whatever differs first, so a peer cannot find the token byte by byte from
// how fast it is refused. A length that differs refuses too, after the same work.
bool tokens_equal(std::string_view got, std::string_view expect);

}  // namespace sluice

// What only the tcp carrier has: its encodings and the original Borealis
// knobs. A link whose transport is not tcp ignores all of it; the deployment
// parser refuses these keys on such a link.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice {

// How a frame's events travel on the byte stream.
//   sg    - gathered straight from the pool slots (sendmsg), read straight into slots
//   copy  - packed into a contiguous buffer on both ends (memcpy)
//   capnp - each event a Cap'n Proto message, rebuilt on receipt (one event per frame)
enum class Encoding { kCapnp, kCopy, kSg };
const char* encoding_name(Encoding e);
bool parse_encoding(std::string_view s, Encoding* e);

struct TcpOptions {
  Encoding encoding = Encoding::kSg;
  bool async_send = false;        // original: a send queue drained by its own thread
  bool rx_select = false;         // original: poll() with a timeout before every read
  uint32_t read_bytes = 65536;    // capnp/copy: bytes asked of each read
  uint32_t poll_timeout_us = 1000;
  std::string congestion;         // TCP_CONGESTION per socket ("" = system default)
  // TCP_RTO_MAX_MS per socket (Linux 6.15+): the cap of the retransmission
  // timeout's back-off, so a wire that was down carries the stream again
  // within about this much of coming back up (the system's cap: 120 s).
  // 0: the system's; else 1000-120000 (the kernel's range).
  uint32_t rto_max_ms = 1000;
  // TCP keepalive per socket: an idle link probes its peer after this many
  // seconds, then every second. A peer whose process died answers with a
  // reset (its own reset lost, as in a cut, or its host rebooted): the link
  // breaks at once, instead of a sender waiting for credits, or a receiver
  // for frames, forever on a connection that is gone. A peer host that
  // stays silent breaks it after kKeepaliveProbes more seconds. 0: off.
  uint32_t keepalive_s = 1;
};

// Unanswered keepalive probes, one a second, before an idle link is broken.
inline constexpr int kKeepaliveProbes = 60;

}  // namespace sluice

// The message carriers' common half: what a link over a message endpoint
// (a libfabric endpoint, a UCX endpoint) needs besides the endpoint itself.
// transport/fabric and transport/ucx each supply an Endpoint and a Factory;
// everything else is here, once:
//
//   1. A control connection (TCP, tcp/connect.h) carries the handshake of
//      transport/handshake.h, exactly as on a tcp link, then the endpoint
//      addresses both ways, then a "ready" byte once the receiver has posted
//      one receive per slot: no data message is ever unexpected.
//   2. Data frames are messages sender -> receiver, each landing in one
//      pre-posted slot. The frame header travels as the message's immediate
//      data (fabric: FI_REMOTE_CQ_DATA; ucx: the tag), so the payload lands at
//      the slot's first byte. A frame of several pieces is gathered (iov)
//      when the endpoint takes that many, else copied into a staging buffer
//      of its own (one per send in flight).
//   3. Credit messages go receiver -> sender the same way (a 16-byte
//      CreditFrame, credits and the acknowledged count, into one of the
//      sender's small pre-posted buffers).
//   4. The control connection stays open: the receiver's finish ('F'), and
//      the end of either process (EOF), travel on it, so a peer that vanishes
//      is seen even where the endpoint would not say (UCX's error mode NONE).
//   5. An endpoint that cannot sleep on an fd (libfabric shm) gets a doorbell:
//      a page of shared memory with one "sleeping" flag per side. A side that
//      found nothing to do polls for its window (at most spin_us, shorter
//      while what it waited for came later than that: spin.h), without acks
//      yielding its core between two looks, sets its flag, looks once more,
//      and sleeps on the control connection; the peer, after anything that
//      gives it work (a message sent, a message consumed), clears the flag and
//      writes one byte. An idle link costs nothing; a busy one no syscall.
//   6. rma: on (an endpoint that can write into its peer's memory): the
//      receiver exposes its pool at connect (Endpoint::expose) and sends the
//      key after the addresses; it posts no receive per slot, only one small
//      note buffer per slot. Its handshake credits name its slots in order
//      (the link's first to last), and every later credit message names the
//      slots it grants (check_named_credits). The sender writes a frame into
//      the slot at the head of its named ones (Endpoint::write: through a
//      pointer where the library maps the peer's memory, ucp_rkey_ptr over
//      shared memory; else a put), then sends an RmaNote {slot, bytes} with
//      the frame's immediate, ordered after the write. The receiver hands
//      the slot on when the note arrives: no copy on its side. The sender
//      keeps the copy for replay in its own slot, as without rma.
//   7. In place (rma where the peer's slots are mapped here, Endpoint::
//      mapped): the sender offers the slot at the head of its named ones as
//      the next frame's room (TxCarrier::room); a node's last operator
//      writes its output there, and the frame is only its note. Not with
//      acks: the replay copy is the sender's own slot.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "transport/link.h"
#include "transport/transport.h"

namespace sluice::msg {

// The 64-bit immediate of every message: a marker, the direction, the frame
// kind and a 32-bit value (events of a data frame, credits of a credit one).
//
//  bit 63        48 47    40 39    32 31                0
//      | 0x534C "SL"| dir    | kind   | value            |
enum class Dir : uint8_t { kData = 1, kCredit = 2 };
inline constexpr uint64_t kImmMarker = 0x534Cull << 48;
inline constexpr uint64_t kImmChannelMask = 0xFFFFFF0000000000ull;  // marker + dir
inline constexpr uint16_t kCreditKind = 0x43;                      // 'C'
inline uint64_t make_imm(Dir d, uint16_t kind, uint32_t value) {
  return kImmMarker | uint64_t{static_cast<uint8_t>(d)} << 40 | uint64_t{kind & 0xFFu} << 32 | value;
}
inline uint64_t channel_of(Dir d) { return kImmMarker | uint64_t{static_cast<uint8_t>(d)} << 40; }
inline uint16_t imm_kind(uint64_t imm) { return (imm >> 32) & 0xFF; }
inline uint32_t imm_value(uint64_t imm) { return static_cast<uint32_t>(imm); }

struct Completion {
  enum Type : uint8_t { kRecv, kSend, kError } type;
  uint64_t ctx;     // what was passed with the receive or send
  uint32_t len;     // kRecv: bytes received
  uint64_t imm;     // kRecv: the sender's immediate
  int err;          // kError: the provider's code (0 if none)
};

// One end of one link over a message library. Owned by one thread (the
// stage that owns the link) after it is made.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // The receiver: `ctx` identifies the buffer when its message arrives.
  virtual Status post_recv(void* buf, size_t len, uint64_t ctx) = 0;
  // Sends one message; *again: the endpoint is full now (drive poll() and
  // retry). The buffers stay untouched until ctx's kSend completion.
  virtual Status send(const iovec* iov, size_t n, uint64_t imm, uint64_t ctx, bool* again) = 0;
  // Completions, at most max; never blocks. Drives the library's progress.
  virtual Status poll(Completion* out, size_t max, size_t* n) = 0;
  // Before sleeping on fd(): true when nothing is pending and fd() will
  // become readable on the next completion (false: poll again).
  virtual bool arm() = 0;
  // The fd to sleep on, or -1 when the endpoint cannot sleep (doorbell).
  virtual int fd() const = 0;
  // Most iov entries one send takes.
  virtual size_t max_iov() const = 0;
  // Sends the endpoint can have in flight.
  virtual size_t tx_depth() const = 0;
  // What carries the data, for the log: "fabric/shm", "ucx lanes: sysv, cma".
  virtual std::string describe() const = 0;
  // Memory a send or receive will name besides the pool the endpoint was
  // opened with (staging and credit buffers): registered now where the
  // provider needs registered memory (FI_MR_LOCAL), else nothing.
  virtual Status add_region(void* p, size_t len) { return {}; }
  // Connects to the peer whose address came over the control connection
  // (the receiver: the sender's; the sender: nothing new, it was given the
  // receiver's at open). Waits at most timeout_ms.
  virtual Status connect(const std::string& peer_addr, uint32_t timeout_ms) = 0;

  // rma (item 6). The receiver, connected: lets the peer write into
  // [p, p + len); *key is what the sender needs to (sent to it as it is).
  virtual Status expose(void* p, size_t len, std::string* key) {
    return Status::Error("this carrier has no rma mode");
  }
  // The sender, connected: takes the receiver's key; *how says how writes
  // will go ("in place", "put"), for the log.
  virtual Status attach(const std::string& key, std::string* how) {
    return Status::Error("this carrier has no rma mode");
  }
  // Writes the pieces, one after the other, at `offset` of what the peer
  // exposed, then sends `note` with `imm` so that the peer sees it only
  // after the written bytes; ctx's kSend completion comes once the note is
  // sent, and the pieces may be reused from then on. *again: nothing was
  // done, the endpoint is full now (as send()).
  virtual Status write(const iovec* iov, size_t n, uint64_t offset, const iovec& note, uint64_t imm,
                       uint64_t ctx, bool* again) {
    return Status::Error("this carrier has no rma mode");
  }
  // Sent something on its own since the last call (a write's note, once the
  // write completed): the peer may need waking (the doorbell).
  virtual bool sent_on_its_own() { return false; }
  // Most pieces one write() takes (more are copied into one first).
  virtual size_t max_write_iov() const { return max_iov(); }
  // The sender, attached: what the peer exposed, mapped into this process
  // (ucx: ucp_rkey_ptr over shared memory), where write() is a memcpy;
  // nullptr where writes go through the library (a put).
  virtual std::byte* mapped() const { return nullptr; }
  // The receiver, rma: the notes of written frames complete in the order
  // they were sent (ucx: eager tagged messages of one endpoint), so frames
  // are handed out in that order, not in the order their slots were named.
  virtual bool notes_in_order() const { return false; }
};

// Makes a carrier's endpoints; one per link end.
class Factory {
 public:
  virtual ~Factory() = default;
  // "fabric/shm": what Hello names, and what an error names.
  virtual std::string carrier() const = 0;
  // The receiver: an endpoint whose address (*addr) the sender is sent.
  virtual std::unique_ptr<Endpoint> open_rx(const LinkOptions& opts, SlotPool& pool,
                                            std::string* addr, Status* st) = 0;
  // The sender: an endpoint toward the receiver at `peer_addr`; *addr is
  // what the receiver needs to reach it.
  virtual std::unique_ptr<Endpoint> open_tx(const LinkOptions& opts, SlotPool& pool,
                                            const std::string& peer_addr, std::string* addr,
                                            Status* st) = 0;
};

std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, uint32_t first_slot,
                                        std::shared_ptr<Factory> factory, Status* st);
std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool,
                                    std::shared_ptr<Factory> factory, Status* st);

}  // namespace sluice::msg

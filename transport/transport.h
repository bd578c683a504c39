// The transport interface: one narrow pair of link ends, chosen per link.
//
// A link joins the send stage of one node to the receive stage of the next.
//   1. The downstream node makes a Listener (binds now: a port in use fails
//      here, at start, not mid-run) over its own SlotPool.
//   2. The upstream node's send stage connects a Sender; the two exchange a
//      Cap'n Proto handshake (version, schema, slot size, encoding, token) and
//      the receiver grants one credit per free slot.
//   3. Sender::send() turns descriptors into frames, one credit per frame, and
//      tells its SlotReleaser when each descriptor's bytes are gone.
//   4. Receiver::receive() hands out one descriptor per frame that arrived,
//      zero copy where the encoding allows; Receiver::release() takes the slot
//      back and returns the credit upstream.
//   5. The end of a stream is a descriptor with kDescEnd: it flows through the
//      stages like an event, so nothing queued before it is lost.
//
// Transports live in their own folders (tcp/, fabric/, ucx/); their library
// headers never appear here. A transport that does not support a choice
// returns a Status naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/descriptor.h"
#include "base/ring.h"
#include "transport/pool.h"
#include "base/status.h"
#include "transport/tcp/options.h"

namespace sluice {

// Everything one end of a link needs to know. Both ends are built from the
// same deployment file, and the handshake checks that they agree.
struct LinkOptions {
  std::string transport = "tcp";  // the carrier: tcp (fabric, ucx: the RDMA issue)

  // The protocol core: the same for every carrier.
  uint32_t slot_bytes = 65536;    // receiver slot = the largest frame payload
  uint32_t slots = 64;            // receiver slots = initial credits
  uint32_t credit_batch = 0;      // credits returned in batches of this (0: slots/4)
  uint32_t connect_timeout_ms = 10000;
  std::string token;              // optional shared secret checked at handshake
  Wait wait = Wait::kBlock;       // for the transport's own internal queues

  // Schema of the stream on this link.
  uint32_t tuple_bytes = 128;
  std::string schema = "sluice.tuple";

  // The two ends: names (for errors: "link node-a -> node-b"), where the
  // sender connects, where the receiver binds.
  std::string from;                // the sending process
  std::string to;                  // the receiving process
  std::string host = "127.0.0.1";  // the receiver's address, as the sender reaches it
  std::string listen;              // the address the receiver binds ("" = host)
  uint16_t port = 0;
  uint32_t link_id = 0;            // the link's index in the deployment; checked at handshake
  uint32_t instance = 0;           // which instance of the pipeline; checked at handshake

  // What only one carrier has.
  TcpOptions tcp;

  uint32_t effective_credit_batch() const {
    uint32_t b = credit_batch ? credit_batch : slots / 4;
    if (b == 0) b = 1;
    return b > slots ? slots : b;
  }
  const std::string& bind_address() const { return listen.empty() ? host : listen; }
};

// Gets a slot back when the transport no longer needs its bytes.
class SlotReleaser {
 public:
  virtual ~SlotReleaser() = default;
  virtual void release(uint32_t slot) = 0;
};

// Releases straight into a pool (the load generator's side).
class PoolReleaser final : public SlotReleaser {
 public:
  explicit PoolReleaser(SlotPool& pool) : pool_(pool) {}
  void release(uint32_t slot) override { pool_.release(slot); }

 private:
  SlotPool& pool_;
};

struct LinkStats {
  uint64_t frames = 0;
  uint64_t bytes = 0;          // wire bytes, frame headers included
  uint64_t credit_waits = 0;   // times the sender had to wait for a credit
  uint64_t syscalls = 0;       // send/recv family calls on the data path
};

class Receiver : public SlotReleaser {
 public:
  // Waits for at least one frame, then returns as many as have fully arrived,
  // one descriptor each, at most out.size(). *n = 0 means the stream ended
  // after its END descriptor was handed out. An error names the peer; after an
  // error, the link is closed and the receiver only returns that error.
  virtual Status receive(std::span<Descriptor> out, size_t* n) = 0;
  // From any one other thread: the slot is free again; a credit goes upstream.
  void release(uint32_t slot) override = 0;
  // From another thread: make a blocked receive() return (shutdown).
  virtual void shutdown() = 0;
  virtual const std::string& peer() const = 0;
  virtual LinkStats stats() const = 0;
};

class Sender {
 public:
  virtual ~Sender() = default;
  // Sends the descriptors, in order, as frames; waits while the receiver has
  // no credit. Calls the releaser for each descriptor once its bytes are gone.
  // An END descriptor sends the end of stream after everything before it.
  virtual Status send(std::span<const Descriptor> descs) = 0;
  // Flushes what is queued and closes the link.
  virtual Status close() = 0;
  virtual const std::string& peer() const = 0;
  virtual LinkStats stats() const = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  // Waits for the upstream sender, checks its handshake, and returns the
  // receiving end (nullptr with *st set on error or shutdown).
  virtual std::unique_ptr<Receiver> accept(Status* st) = 0;
  virtual void shutdown() = 0;
  virtual uint16_t port() const = 0;  // the bound port (useful with port 0)
};

// Binds opts.host:opts.port for a link whose events land in `pool`.
std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool, Status* st);

// Connects to opts.host:opts.port (retrying until connect_timeout_ms) and
// shakes hands. Descriptors passed to send() name slots of `pool`.
std::unique_ptr<Sender> make_sender(const LinkOptions& opts, const SlotPool& pool,
                                    SlotReleaser& releaser, Status* st);

}  // namespace sluice

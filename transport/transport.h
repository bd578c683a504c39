// transport/: may include base/ only.
//
// The transport interface: a link's two ends, chosen per link, over the one
// protocol core (transport/link.h) and a carrier underneath it.
//
//   transport/          event and frame format, the pool, the handshake, the
//                       protocol core (Receiver, Sender), this registry
//   transport/tcp/      the tcp carrier (encodings sg, copy, capnp)
//   transport/msg/      what the message carriers share: control connection,
//                       pre-posted slots, credits as messages, the doorbell
//   transport/fabric/   libfabric (providers tcp, net, shm, verbs)
//   transport/ucx/      UCX (transports tcp, sm, ...)
//
// A process makes one TransportContext (where the RDMA carriers will own a
// fabric domain or a UCX context and register each pool once), then for each
// link into it a Listener over a range of its pool's slots, and for each link
// out of it a Sender. Carrier library headers never appear here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>
#include <span>
#include <string>

#include "base/descriptor.h"
#include "base/ring.h"
#include "base/status.h"
#include "transport/pool.h"
#include "transport/msg/options.h"
#include "transport/tcp/options.h"

namespace sluice {

// Everything one end of a link needs to know. Both ends are built from the
// same deployment file, and the handshake checks that they agree.
// With acks, a receiver grants credit at most this many times its slots
// frames beyond what it acknowledged: the most a sender keeps for replay.
inline constexpr uint32_t kAckWindowPerSlot = 4;

struct LinkOptions {
  std::string transport = "tcp";  // the carrier: tcp | fabric | ucx

  // The protocol core: the same for every carrier.
  uint32_t slot_bytes = 65536;    // receiver slot = the largest frame payload
  uint32_t slots = 64;            // receiver slots = initial credits
  uint32_t credit_batch = 0;      // credits returned in batches of this (0: slots/4)
  // Credits sized to the link: where the sender runs out of credits, the
  // receiver lets it hold (in credits and frames on their way) twice what the
  // link carries in one credit round trip, measured, within [credit_batch,
  // slots]. Off (`credits: fixed`, the original preset): all slots.
  bool adaptive_credits = true;
  uint32_t connect_timeout_ms = 10000;
  // The process's stop (a signal): when it is set, the first connect gives
  // up at once instead of trying until connect_timeout_ms, as does a wait for
  // a receiver that refuses the link as busy; nothing was sent on the link
  // yet. A reconnect (acks) does not look at it: frames it sent wait on it.
  const std::atomic<bool>* stop = nullptr;
  // The process's stop-at-once (SIGTERM): a reconnect gives up too.
  const std::atomic<bool>* abort = nullptr;
  std::string token;              // optional shared secret checked at handshake
  Wait wait = Wait::kBlock;       // for the transport's own internal queues
  // Upstream backup (PROTOCOL.md section 5): the sender keeps every frame it
  // sent, in its pool slot, until the receiver acknowledges it; a link that
  // breaks is connected again within reconnect_timeout_ms and what was not
  // acknowledged is sent again. Off: a broken link ends the run, as in v2.
  bool acks = false;
  uint32_t reconnect_timeout_ms = 10000;
  // With acks: how long a receiver whose stage goes to sleep may hold an
  // acknowledgement short of a credit batch, for the frames that would
  // complete the batch; 0: it sends what it owes before every sleep.
  uint32_t ack_delay_ms = 0;
  // The sending node's send stage may wait this long for more to gather
  // into the frame it sends (at most a slot of the receiver's); 0: it sends
  // what is queued at once. Read by the node, not the carrier.
  uint32_t max_delay_us = 0;

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
  bool name_receiver = true;       // Hello names `to` (off where the sender cannot know it)

  // What only some carriers have.
  TcpOptions tcp;
  MsgOptions msg;  // fabric, ucx

  uint32_t effective_credit_batch() const {
    uint32_t b = credit_batch ? credit_batch : slots / 4;
    if (b == 0) b = 1;
    return b > slots ? slots : b;
  }
  const std::string& bind_address() const { return listen.empty() ? host : listen; }
};

class Receiver;
class Sender;

// Process-wide transport resources: what a carrier opens once per process
// (a libfabric fabric and domain with the pools registered in it, ...), kept
// here by key for as long as the context lives; links made in it share them.
class TransportContext {
 public:
  struct State {
    virtual ~State() = default;
  };
  TransportContext() = default;
  TransportContext(const TransportContext&) = delete;
  TransportContext& operator=(const TransportContext&) = delete;
  // Pools that links send from or receive into; a carrier that needs
  // registered memory registers each once in each domain it opens.
  Status register_pool(SlotPool& pool) { return {}; }
  // The state kept under `key`, made by `make` the first time (any thread).
  std::shared_ptr<State> state(const std::string& key,
                               const std::function<std::shared_ptr<State>(Status*)>& make,
                               Status* st) {
    std::lock_guard lk(mu_);
    for (auto& [k, v] : states_)
      if (k == key) return v;
    auto v = make(st);
    if (v) states_.emplace_back(key, v);
    return v;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, std::shared_ptr<State>>> states_;
};

class Listener {
 public:
  virtual ~Listener() = default;
  // Waits for the link's upstream: connections whose handshake does not match
  // (a stranger, another schema, silence) are refused with a log line and the
  // wait goes on. Returns the receiving end, or nullptr with *st set once
  // shut down or on a fatal error.
  virtual std::unique_ptr<Receiver> accept(Status* st) = 0;
  // From another thread: makes accept() return.
  virtual void shutdown() = 0;
  // While on, between accepts: a connection is answered with a refusal
  // (kLinkBusy: "connected to its upstream already") and closed, not left
  // waiting. Turned off before the next accept() (a reconnecting upstream).
  virtual void turn_away(bool /*on*/) {}
  virtual uint16_t port() const = 0;  // the bound port (useful with port 0)
};

// The refusal of turn_away, after the link's name. A sender whose process
// was restarted meets it while the receiver still tends the link of its
// previous run (draining its slots): with acks it tries again (node/net.cc).
inline constexpr const char* kLinkBusy = " is connected to its upstream already";

// Binds opts.bind_address():opts.port now (a port in use fails here, at
// start). Frames land in slots [first_slot, first_slot + opts.slots) of `pool`,
// which the caller owns (acquired) and hands to the link.
std::unique_ptr<Listener> make_listener(const LinkOptions& opts, SlotPool& pool,
                                        uint32_t first_slot, TransportContext& ctx, Status* st);

// Connects to opts.host:opts.port (retrying until connect_timeout_ms) and
// shakes hands. Descriptors passed to send() name slots of `pool`, released to
// it once sent.
std::unique_ptr<Sender> make_sender(const LinkOptions& opts, SlotPool& pool,
                                    TransportContext& ctx, Status* st);

}  // namespace sluice

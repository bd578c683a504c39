// A carrier: what moves a link's frames and credit messages, under the
// protocol core (transport/link.h). TCP, a libfabric endpoint or a UCX
// endpoint, each in its own folder and build target. A carrier never decides
// anything the protocol decides: credits, framing, length checks, END and the
// clean close are the core's. It only:
//
//   receiving end (RxCarrier)              sending end (TxCarrier)
//   - lands frames in slots it was given   - sends a frame gathered from pieces,
//     (post), reports them (poll)            and releases each piece's slot once
//   - sends credit messages                  its bytes are gone
//   - after END, says what came behind it  - hands over credit messages (credits)
//     (after_end), then that it will send  - after END, waits for the receiver's
//     no more (finish)                       finish (close)
//
// Both expose a wait handle, an fd that becomes readable when poll() or
// credits() may have more; the stage that owns the link sleeps on it together
// with its ring (base/ring.h, EventCount::fd()). A carrier that completes
// asynchronously drives its progress inside poll()/credits()/progress().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "transport/event.h"
#include "transport/pool.h"

namespace sluice {

class CreditGate;  // transport/link.h

// Counters of one link end: single writer (the owning stage), read by anyone.
struct LinkStats {
  uint64_t frames = 0;
  uint64_t bytes = 0;          // wire bytes, frame headers included
  uint64_t credit_waits = 0;   // sender: times it had to wait for a credit
  uint64_t syscalls = 0;       // send/recv family calls on the data path
  uint64_t granted = 0;        // receiver: credits granted in total (initial included)
  uint64_t max_held = 0;       // receiver: most frames held at once (received - returned)
  uint64_t credit_wait_ns = 0; // sender: time spent waiting for a credit
  uint64_t credits = 0;        // sender: credits in hand now
  uint64_t slots_free = 0;     // receiver: its slots posted and empty now (the sender's credits
                               // and those on their way back to it)
  uint64_t window = 0;         // receiver: credits it lets the sender hold now, frames on
                               // their way included (slots, unless adaptive_credits)
  uint64_t window_mean = 0;    // receiver: the window over the run, weighted by frames carried
  uint64_t rtt_us = 0;         // receiver, adaptive_credits: the credit round trip it measured
  uint64_t credit_msgs = 0;    // receiver: credit messages it sent
  uint64_t in_place = 0;       // sender: frames the process wrote straight into the
                               // receiver's slot (TxCarrier::room), sent without a copy
};

// A frame that arrived: its payload is in `slot`, in the event wire form
// (kEvents: `events` whole events; kEnd: an EndOfStream). A carrier that
// changes the form on the wire (capnp) has rebuilt it by now.
struct Arrival {
  uint32_t slot;
  FrameKind kind;
  uint32_t bytes;
  uint32_t events;
};

class RxCarrier {
 public:
  virtual ~RxCarrier() = default;
  // `slot` receives a later frame (in posting order, for a stream carrier).
  virtual Status post(uint32_t slot) = 0;
  // Frames that have fully arrived, at most out.size(); never blocks.
  // *n = 0 and ok: nothing now (sleep on wait_fd()).
  virtual Status poll(std::span<Arrival> out, size_t* n) = 0;
  // A credit message granting `credits` more frames and acknowledging the
  // first `acked` frames of the connection.
  virtual Status send_credits(uint32_t credits, uint64_t acked) = 0;
  // After END was handed out, before finish(): what arrived behind it, "" if
  // nothing did (or only the sender's close). Never blocks: it says what is
  // here by now, which the core reports as a protocol error (nothing may
  // follow END).
  virtual std::string after_end() = 0;
  // END has passed through the node: no more credits will be sent.
  virtual void finish() = 0;
  // From any thread: make the owner's wait return and poll() fail.
  virtual void shutdown() = 0;
  virtual int wait_fd() const = 0;
  // A carrier that must be looked at periodically (rx_poll: select) says how
  // often; -1: only when wait_fd() is readable.
  virtual int poll_period_ms() const { return -1; }
  // The last poll() read the connection empty (a short read): the owner may
  // sleep on wait_fd() without calling poll() first, to be told by EAGAIN
  // what it knows; wait_fd() must then be level-triggered (readable while
  // anything is unread). false: poll before sleeping.
  virtual bool drained() const { return false; }
  // Asks that the next poll() wait in its read until something arrives (or
  // shutdown()), instead of the owner waiting on wait_fd() and then
  // polling: one system call per wake-up where that is two. The owner asks
  // only when nothing but this connection can give it work. false: not
  // offered (poll() never blocks).
  virtual bool wait_in_next_poll() { return false; }
  // post() and send_credits() may run on another thread than poll()'s, one
  // at a time (the owner serializes them): a socket's, not a library's
  // endpoint, which its own thread must drive.
  virtual bool any_thread_gives_back() const { return false; }
  virtual LinkStats stats() const = 0;
};

class TxCarrier {
 public:
  // A piece of a frame's payload, and the slot to release once its bytes are
  // gone (kNoSlot when a later piece of the same descriptor follows).
  struct Piece {
    const std::byte* p;
    uint32_t len;
    uint32_t release;
  };
  virtual ~TxCarrier() = default;
  // Most pieces in one frame, and most events (capnp: one event per frame).
  virtual size_t max_pieces() const = 0;
  virtual uint32_t max_events_per_frame() const { return UINT32_MAX; }
  // Sends (or queues) one frame; the core has taken its credit.
  virtual Status frame(FrameKind kind, const Piece* pieces, size_t n, uint32_t payload_bytes,
                       uint32_t events) = 0;
  // Pushes out whatever frame() queued.
  virtual Status flush() = 0;
  // Credits that arrived since the last call; with `block`, waits until some
  // do (or the link fails). *acked is raised to the highest acknowledgement
  // that arrived (left as it is when none did).
  virtual Status credits(bool block, uint32_t* got, uint64_t* acked) = 0;
  // After END and flush: waits (at most timeout_ms) for the receiver to
  // finish, then closes.
  virtual Status close(uint32_t timeout_ms) = 0;
  // Closes at once: the receiver sees the stream cut short.
  virtual void abort() = 0;
  // From any thread, while the carrier lives: the owner's call blocked in
  // credits() or close() (a receiver that grants nothing) returns an error
  // now, and so does every call after. The process is stopping the link.
  virtual void interrupt() = 0;
  virtual int wait_fd() const = 0;
  // A carrier that completes sends asynchronously has work for its owner
  // even while nothing new is to be sent (reap completions, release slots):
  // busy() says so, and progress() does it without blocking. The send stage
  // then sleeps on its ring and wait_fd() together. tcp completes in frame()
  // and flush(): never busy.
  virtual bool busy() const { return false; }
  virtual Status progress() { return {}; }
  // The slots of pieces given to frame() that it has not released (their
  // bytes not yet gone). The core asks a broken link's carrier before it
  // drops it, and releases them once it is gone: with acks, only the
  // pieces a Remaker can make again carry a slot to release.
  virtual void unreleased(std::vector<uint32_t>*) const {}
  virtual LinkStats stats() const = 0;
  // A carrier with a send queue of its own takes each frame's credit from
  // `gate` when it writes the frame; the core then hands it frames without
  // taking credits itself. Others return false and the core takes them.
  virtual bool takes_credits(CreditGate* gate) { return false; }
  // In place: a slot of the receiver's, named by a credit, mapped into this
  // process (ucx rma over shared memory: ucp_rkey_ptr), set aside for one
  // frame, and its *capacity. The caller holds a credit for it (the core
  // took one). A frame whose one piece is exactly this room is not copied:
  // its bytes are there already, only its note goes, and the room is used
  // up. Other frames go into the slots named after it meanwhile. Asked
  // again before it is used, the same room. nullptr: this carrier writes
  // no frame in place, or it holds no named slot now.
  virtual std::byte* room(uint32_t* capacity) { return nullptr; }
  // The room set aside goes back, unused, to be the next frame's slot (its
  // credit goes back to the core's gate: the caller's to do).
  virtual void unroom() {}
};

}  // namespace sluice

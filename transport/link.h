// The protocol core: one link's two ends, the same over every carrier.
//
// Lifecycle of a link:
//   1. The receiving process binds a Listener for the link (make_listener in
//      transport.h) over a range of its pool's slots: one per credit.
//   2. The sending process connects (make_sender). The carrier carries the
//      handshake (transport/handshake.h): Hello with what the sender was built
//      with; the receiver checks it against its own options and answers with
//      the initial credits (one per slot of its range, all posted by now) or
//      refuses, and then keeps waiting for its real upstream.
//   3. Sender::send() frames runs of descriptors: each frame's payload fits
//      one receiver slot and costs one credit; a sender never has more frames
//      in flight than it was granted. Pieces are released to the pool once
//      the carrier says their bytes are gone.
//   4. Receiver::poll() hands out one descriptor per frame that arrived,
//      after checking every length and count in it. The receiver keeps the
//      ledger: credits granted, frames received, slots returned; a frame
//      beyond the grant is a protocol error naming the peer.
//   5. Releasing a slot from any stage only puts it back on the pool's free
//      queue. The thread that owns the receiving end (the receive stage)
//      takes it from there and gives it back to its link (give_back): the
//      slot is posted again and credits go upstream in batches.
//   6. END is a frame (it costs a credit) after everything else; Sender::end().
//      When its slot comes back, the receiver returns what credit it owes and
//      finishes; Sender::close() waits for that, so no frame is lost to a
//      connection torn down early. A frame that came after END by then is a
//      protocol error instead: no last credits, and the link's error names it.
//   7. Acknowledgements (LinkOptions::acks): every credit message also says
//      how many frames of the connection, from the first, came back to the
//      receiver (a prefix: its slots were given back, so whatever the frame
//      became downstream was itself acknowledged, or consumed). The sender
//      keeps each frame it sent in its pool slots (the descriptor's holder,
//      no copy) until then: memory held for replay is bounded by the sender's
//      pool and the receiver's window, and an outage shows as backpressure.
//      A broken connection then does not end the link: the sender connects
//      again (back-off, within reconnect_timeout_ms), and sends every frame
//      not yet acknowledged, in order, before anything new. The receiver's end
//      of a broken link is replaced by the listener's next accept (node/net.cc).
//      A protocol error (Status::protocol_error: the peer's bytes are wrong)
//      ends the link with acks too: a new connection would bring the same.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/descriptor.h"
#include "base/fd.h"
#include "base/status.h"
#include "transport/carrier.h"
#include "transport/pool.h"
#include "transport/transport.h"

namespace sluice {

// A listener's check before it binds (step 1): the link's slots, from
// first_slot, lie inside the pool and each is as large as the link's
// slot_bytes. The error names the receiver (`opts.to`).
Status check_link_fits_pool(const LinkOptions& opts, const SlotPool& pool, uint32_t first_slot);

// A node that keeps no copies (docs/DESIGN.md, "A node that keeps no
// copies"): its sender lets a forwarded frame's slot go once sent, as without
// acks, and instead *claims* the frame it came in: the receiver acknowledges
// a claimed frame upstream only once the sender says the next hop
// acknowledged it. The node's receive stage is the ledger; the sender calls
// it from the thread that sends.
class AckLedger {
 public:
  // A claimed frame: which upstream link, which connection of it, which frame.
  struct Claim {
    uint64_t frame = 0;
    uint32_t link = 0, gen = 0;
  };
  enum class Take { kClaimed, kNotMine, kStale };
  virtual ~AckLedger() = default;
  // Before the slot is released: claims the frame in it (kClaimed), or says
  // the slot is not a received frame's (kNotMine: the process stage's own,
  // which the sender keeps as usual), or that it was handed out before the
  // last replay_upstream() (kStale: it must not be sent; its upstream sends
  // it again).
  virtual Take claim(uint32_t slot, Claim* c) = 0;
  // The frame a claim names is safe downstream; acked() after a run of these.
  virtual void ack(const Claim& c) = 0;
  virtual void acked() = 0;
  // The downstream link broke with claimed frames unacknowledged: the
  // upstream links are broken so that their senders send them again, and
  // everything handed out before is stale from now on.
  virtual void replay_upstream() = 0;
  // The slot holds a frame handed out before the last replay_upstream().
  virtual bool stale(uint32_t slot) const = 0;
};

// The receiving end of one link; owned by one thread (the receive stage)
// except shutdown().
class Receiver {
 public:
  // The listener made this after the handshake: slots [first_slot,
  // first_slot + opts.slots) of `pool` are posted and granted.
  Receiver(const LinkOptions& opts, std::unique_ptr<RxCarrier> carrier, SlotPool& pool,
           uint32_t first_slot, std::string name);
  ~Receiver();

  // Frames that arrived, one descriptor each, at most out.size(); never
  // blocks (*n = 0: nothing now, sleep on wait_fd()), unless the owner
  // asked it to (wait_in_next_poll). After END, *n = 0.
  // After an error the link is closed and poll() only returns that error.
  Status poll(std::span<Descriptor> out, size_t* n);
  // The owner: `slot` (one of this link's) is free again.
  Status give_back(uint32_t slot);
  bool owns(uint32_t slot) const { return slot - first_slot_ < slots_; }
  // Credits the sender holds now: granted and not yet spent on a frame.
  uint64_t sender_credits() const { return granted_.get() - received_; }
  // Frames handed out whose slots have not come back.
  uint64_t outstanding() const { return received_ - returned_; }
  // Frames of this connection acknowledged so far (a prefix).
  uint64_t acked() const { return acked_; }
  // Claims (AckLedger): from now on a frame claimed before its slot came
  // back is acknowledged only once ack_claimed() says so. While any frame
  // is unacknowledged the receiver keeps one credit back, so that the
  // acknowledgement that follows has a credit message to ride on (on the
  // message carriers every one grants at least one), and it finishes only
  // once every frame is acknowledged. The owner, before the first frame.
  void use_claims();
  // The frame in `slot` (handed out, not yet given back) waits for
  // ack_claimed(); its number. Any thread that holds the slot.
  uint64_t claim(uint32_t slot);
  // Any thread: the claimed frame is safe downstream. The owner then
  // calls collect_acks().
  void ack_claimed(uint64_t frame);
  // The owner: moves the acknowledged prefix over what ack_claimed()
  // completed, and finishes the link if that was all it waited for.
  Status collect_acks();
  // Sends the credits (and acknowledgement) held back for a batch, if any:
  // so a sender waiting for acknowledgements is never left waiting on a
  // batch that is not coming.
  Status flush_credits();
  // With acks, before the owner sleeps: milliseconds until it should
  // flush_credits() for an acknowledgement it owes short of a batch; 0:
  // now; -1: none owed. One owed is held up to ack_delay_ms (LinkOptions)
  // while the owner sleeps: the frames that follow it within that time
  // complete the batch. A sender that waits for it (its replay log full,
  // its snapshot waiting for its outputs to settle, its close) waits that
  // much longer at most.
  int ack_due_ms();
  // Credits that the frames of the last poll() made room for (adaptive
  // credits). poll() sends them first thing; an owner that may sleep
  // without polling again (its link read empty) sends them before it does.
  // They wait for the frames to be handed on: at a low rate a credit
  // message is a system call (on loopback tcp, the whole receive path)
  // that would otherwise sit between every frame's arrival and its
  // processing.
  Status send_due();
  // Frames ahead of the acknowledged prefix a receiver grants credit for: a
  // frame whose slot is held long (behind a slow downstream link) holds up
  // the acknowledgement of those after it, and this bounds how far. Senders
  // size their replay log by it.
  static uint64_t window(uint32_t slots) { return uint64_t{slots} * kAckWindowPerSlot; }
  uint32_t credit_batch() const { return batch_; }
  uint32_t first_slot() const { return first_slot_; }
  bool ended() const { return ended_; }   // END handed out
  bool finished() const { return finished_ || !error_.ok(); }  // and its slot came back
  int wait_fd() const { return carrier_->wait_fd(); }
  int poll_period_ms() const { return carrier_->poll_period_ms(); }
  // give_back() may run on another thread while the owner sleeps (one at a
  // time, the owner serializing them): RxCarrier::any_thread_gives_back.
  bool any_thread_gives_back() const { return carrier_->any_thread_gives_back(); }
  // The carrier read the connection empty: poll() would find nothing until
  // wait_fd() is readable (RxCarrier::drained).
  bool drained() const { return error_.ok() && carrier_->drained(); }
  // The next poll() may block in the carrier's read until a frame (or EOF,
  // or shutdown()) comes (RxCarrier::wait_in_next_poll). false: not offered.
  bool wait_in_next_poll() { return error_.ok() && !ended_ && carrier_->wait_in_next_poll(); }
  // From any thread: poll() fails from now on, and a sleeping owner wakes.
  void shutdown();
  const std::string& name() const { return name_; }
  LinkStats stats() const;

 private:
  Status fail(Status st);  // the first error stays the link's
  Status fail(std::string msg);
  // Moves acked_ over the frames whose slots came back and, if claimed,
  // were acknowledged downstream.
  void advance();
  // END's slot and every other came back (and, with claims, all were
  // acknowledged): the last credits go and the link finishes.
  bool may_finish() const;
  // As the link finishes: anything that arrived after END (in the poll that
  // handed END out, or in the carrier since) fails the link, naming it.
  Status check_after_end();
  // Sends pending credits (all of them after END), at most as many as the
  // acknowledgement window and the credit window allow; none if fewer than
  // `least` would go. `ack`: an acknowledgement not yet sent goes anyway.
  Status send_pending(bool all, uint32_t least = 1, bool ack = false);
  // adaptive_credits: the rate and round trip of the last period, and the
  // window they give.
  void adapt(int64_t now_ns);

  LinkOptions opts_;
  std::unique_ptr<RxCarrier> carrier_;
  SlotPool& pool_;
  const uint32_t first_slot_, slots_, batch_;
  std::string name_;
  Status error_;
  bool ended_ = false, finished_ = false, end_back_ = false;
  uint32_t end_slot_ = kNoSlot;
  std::string after_end_;  // a frame that came behind END in the poll that handed it out
  uint64_t received_ = 0, returned_ = 0;
  Counter granted_, max_held_, held_, credit_msgs_;  // read by stats() from any thread
  uint32_t pending_ = 0;
  // adaptive_credits: frames that arrived made room for credits held back;
  // they go at the next poll() or send_due(), after the frames were handed on.
  bool credit_due_ = false;
  // adaptive_credits: frames arrived since adapt() last ran (send_due runs it).
  bool adapt_due_ = false;
  // The acknowledgement: frame number per slot of the link, and which frames
  // ahead of the acked prefix came back (a ring indexed by frame number).
  std::vector<uint64_t> frame_of_;
  std::vector<uint8_t> back_;
  // Claims, by frame number as back_: kClaimed (the sender's, before the
  // slot was released), then | kAckedDownstream (ack_claimed).
  std::unique_ptr<std::atomic<uint8_t>[]> claim_;
  bool claims_ = false;
  uint64_t acked_ = 0, acked_sent_ = 0;
  int64_t ack_owed_ns_ = 0;  // when the owner first slept owing one (0: not yet)
  std::atomic<bool> shut_down_{false};
  // adaptive_credits. The window bounds granted - received: credits the
  // sender holds plus frames on their way. A probe times a credit message
  // sent while the sender held none (and had nothing on its way) to the
  // arrival of the first frame that spends one of its credits: the round
  // trip; the shortest in a period counts.
  uint32_t window_;
  uint64_t probe_frame_ = UINT64_MAX;
  int64_t probe_ns_ = 0, period_ns_ = 0, period_rtt_ns_ = INT64_MAX;
  uint64_t period_received_ = 0;
  // What the link ran with: the window of each period weighted by the
  // frames it carried (the summary's credit_window).
  double window_frames_ = 0, frames_sized_ = 0;
  Counter window_now_, window_mean_, rtt_us_;
};

// Credits as a sender sees them: what the receiver granted, one taken per
// frame, refilled from the credit messages the carrier hands over, and never
// above the grant. One thread takes credits: the send stage, or the thread of
// a carrier with its own send queue (tcp's async_send), which takes each
// frame's credit when it writes the frame, as Borealis' send queue did.
class CreditGate {
 public:
  CreditGate(TxCarrier& carrier, uint32_t initial, const std::string& name)
      : carrier_(carrier), initial_(initial), credits_(initial), name_(name) {
    available_.set(initial);
  }
  // A new batch of frames: credits that already arrived are taken once per
  // batch when running low, so the common case costs no syscall per frame.
  // A batch after a top_up() takes them only when out of credits: the top-up
  // looked for them after the last batch went.
  void new_batch() {
    refilled_ = false;
    topped_up_before_ = topped_up_;
    topped_up_ = false;
  }
  // After a batch went out: credits that arrived meanwhile are read now,
  // while no frame waits for the read, so the next frame is not held behind
  // it (a receive system call, 1-2 us on a VM, once per credit message).
  Status top_up() {
    if (credits_ >= (initial_ + 1) / 2) return {};
    topped_up_ = true;
    return refill(false);
  }
  // Takes 1..want credits into *got. With none left, runs before_wait (the
  // receiver can only free slots of frames it has: push out what is queued),
  // counts a wait, and waits for the receiver.
  template <class BeforeWait>
  Status take(uint32_t want, uint32_t* got, BeforeWait before_wait) {
    if (!refilled_ && (credits_ == 0 || (credits_ < (initial_ + 1) / 2 && !topped_up_before_))) {
      Status st = refill(false);
      if (!st) return st;
      refilled_ = true;
    }
    if (credits_ == 0) {
      Status st = before_wait();
      if (!st) return st;
      waits_.add(1);
      // Time blocked is measured around the wait alone: two clock reads
      // per wait, none per frame.
      const auto t0 = std::chrono::steady_clock::now();
      while (credits_ == 0) {
        st = refill(true);
        if (!st) break;
      }
      wait_ns_.add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - t0)
                                             .count()));
      if (!st) return st;
    }
    *got = want < credits_ ? want : credits_;
    credits_ -= *got;
    available_.set(credits_);
    return {};
  }
  // One credit, without waiting (in hand, or in a credit message that has
  // arrived): an in-place room's. *got false: none now.
  Status try_take(bool* got) {
    *got = false;
    if (credits_ == 0) {
      Status st = refill(false);
      if (!st) return st;
    }
    if (credits_ == 0) return {};
    --credits_;
    available_.set(credits_);
    *got = true;
    return {};
  }
  // A credit taken and not spent (a room given back).
  void put_back() {
    ++credits_;
    available_.set(credits_);
  }
  // Waits for a credit message (any), keeping what it brings; for a sender
  // whose replay log is full.
  Status wait_message() { return refill(true); }
  // Takes in the credit messages that arrived, without waiting.
  Status poll_messages() { return refill(false); }
  // Frames of the connection the receiver acknowledged (any thread).
  uint64_t acked() const { return acked_.load(std::memory_order_acquire); }
  uint64_t waits() const { return waits_.get(); }
  uint64_t wait_ns() const { return wait_ns_.get(); }
  // Credits in hand now (a relaxed copy the owner keeps for readers elsewhere).
  uint64_t available() const { return available_.get(); }

 private:
  Status refill(bool block);

  TxCarrier& carrier_;
  const uint32_t initial_;
  uint32_t credits_;
  const std::string& name_;
  bool refilled_ = false;
  bool topped_up_ = false, topped_up_before_ = false;
  Counter waits_, wait_ns_, available_;
  std::atomic<uint64_t> acked_{0};
};

// A sender's connection, made by its carrier's connect function: the carrier
// after the handshake, with the receiver's grant.
struct Connection {
  std::unique_ptr<TxCarrier> carrier;
  uint32_t credits = 0;
  uint32_t peer_slot_bytes = 0;
};
// Connects (once, within timeout_ms) and shakes hands.
using Connector = std::function<Status(uint32_t timeout_ms, Connection*)>;

// With acks, a broken link's sender connects again after this long, doubled
// after every try that fails, up to the most (within reconnect_timeout_ms).
inline constexpr uint32_t kReconnectBackoffMs = 10;
inline constexpr uint32_t kReconnectBackoffMaxMs = 50;

// What a sender's upstream backup did, for the summary.
struct ReplayStats {
  uint64_t reconnects = 0;     // connections made again after a break
  uint64_t acked_events = 0;   // events of the frames acknowledged so far, every connection
  uint64_t replayed_frames = 0;
  uint64_t replayed_events = 0;
  uint64_t held_frames = 0;    // frames sent and not yet acknowledged, now
  uint64_t logged_frames = 0;  // frames ever put in the log (its tail), every connection
  uint64_t done_frames = 0;    // of those, the ones acknowledged or forgotten (its head)
  uint64_t max_held_frames = 0;
  uint64_t remade_events = 0;  // events a replay made again from their headers (Remaker)
};

// A source whose events can be made again from their headers (the load
// generator: an event's bytes are a function of its stream, sequence
// numbers and tuple count). With acks, a sender given one (set_remaker)
// keeps, of each whole event it sends alone in a descriptor, the 64-byte
// header instead of the slot: the slot goes back to the pool once its
// bytes are gone, as without acks, so the source's working set stays what
// its queue needs, not its queue and the receiver's whole window. A
// replay makes each such event again in a slot of the pool's reserve,
// byte for byte (the header carries its send time and checksum).
class Remaker {
 public:
  virtual ~Remaker() = default;
  // Reserve slots a replay may hold at once: a frame keeps at most this
  // many events by header (the others by slot).
  virtual uint32_t room() const = 0;
  // Makes the event whose header is `h` again in a free reserved slot of
  // the sender's pool: *slot, or kNoSlot when every one is still being
  // sent. The sending thread calls it, the only one that takes reserve
  // slots; the error names what does not match.
  virtual Status remake(const EventHeader& h, uint32_t* slot) = 0;
};

// With acks, the pieces (descriptors) a sender's log keeps per frame of the
// receiver's window, on average. A frame of small events gathers many: a
// load generator's one-tuple events go one per piece, 150-250 to a 64 KiB
// frame. At 4 per frame the log filled at about a thousand events, long
// before the window (4 x slots frames), and the sender waited for the
// sink's next snapshot (when idle, one each 4 ms): the demo at one tuple
// per event with acks and snapshots ran at 0.73 M tuples/s against 3.6 M
// at 64. A kept piece is 16 bytes, and 64 more where the sender keeps it by
// header (load generators) or 16 as a claim (nodes that forward): at most
// about 2.6 MiB for a window of 512 frames, and only with acks.
inline constexpr uint32_t kKeptPiecesPerFrame = 64;

// The sending end of one link; owned by one thread (the send stage).
class Sender {
 public:
  // The carrier shook hands: the receiver granted `credits` frames of at most
  // `peer_slot_bytes` each. Descriptors passed to send() name slots of `pool`,
  // and each is released to it once its bytes are gone.
  Sender(const LinkOptions& opts, std::unique_ptr<TxCarrier> carrier, SlotPool& pool,
         uint32_t credits, uint32_t peer_slot_bytes, std::string name);
  ~Sender();

  // Sends the descriptors, in order, as frames; waits while the receiver has
  // no credit.
  Status send(std::span<const Descriptor> descs);
  // The end of the stream (an EndOfStream payload, copied), after everything
  // sent before it.
  Status end(const std::byte* eos, uint32_t bytes);
  // After end(): waits for the receiver to finish, then closes.
  Status close();
  // Closes at once, without END: the receiver sees the stream cut short.
  void abort();
  // From any thread: a send or close blocked on the receiver (no credit, no
  // finish) fails now, and the link does not connect again: its process is
  // stopping it (TxCarrier::interrupt).
  void interrupt();
  // With acks: how to connect again after a break (the carrier's own
  // connect, as make_sender used it). Without one, a break ends the link.
  void set_connector(Connector c) { connect_ = std::move(c); }
  // With acks: keep events by header, made again by `r` for a replay
  // (Remaker). Before the first send; `r` outlives the sender.
  void set_remaker(Remaker* r);
  // A node that keeps no copies (AckLedger): the frames it forwards are
  // claimed, not kept; a break with any of them unacknowledged makes the
  // upstreams send them again (ledger->replay_upstream()) and forgets the
  // log, and stale descriptors are dropped. Before the first send; `l`
  // outlives the sender.
  void set_ledger(AckLedger* l);
  // With a ledger: waits until no claimed frame is unacknowledged, so the
  // end of the stream goes out with nothing left that only the upstreams
  // could send again. Recovers a break meanwhile (the claims are then the
  // upstreams' to replay).
  Status settle_claims();
  ReplayStats replay_stats() const;
  // The carrier has completions to reap while nothing new is sent; the
  // owner then calls progress() and sleeps on wait_fd() with its ring.
  // With acks, frames not yet acknowledged are work too: their
  // acknowledgements free the pool's slots, so the owner reads them even
  // while nothing new is to be sent.
  bool busy() const { return carrier_->busy() || (opts_.acks && log_head_ < log_tail_); }
  bool carrier_busy() const { return carrier_->busy(); }
  // In place (TxCarrier::room, `in_place: on`): a slot of the receiver's
  // set aside, with a credit, for one frame that is written straight into
  // it, and its *capacity; asked again before that frame is sent, the same
  // room. nullptr where this link cannot now (a carrier that does not map
  // the receiver's slots; acks, where the replay copy must stay in this
  // process; no credit in hand). A descriptor with kDescInPlace passed to
  // send() is what was written there; frames sent meanwhile go into other
  // slots. One thread: the one that sends.
  std::byte* room(uint32_t* capacity);
  Status progress();
  int wait_fd() const { return carrier_->wait_fd(); }
  const std::string& name() const { return name_; }
  LinkStats stats() const;

 private:
  Status fail(Status st);
  Status emit(FrameKind kind, const TxCarrier::Piece* p, size_t n, uint32_t payload,
              uint32_t events, bool credit_taken = false);
  // Upstream backup: keeps a frame until acknowledged; drops what was.
  // *dropped: the frame is stale (AckLedger) and was not kept; its slots
  // went back.
  Status keep(FrameKind kind, const TxCarrier::Piece* p, size_t n, uint32_t payload,
              uint32_t events, bool* dropped);
  bool remakable(const TxCarrier::Piece& q) const;
  Status drop_acked();
  // After a carrier error with acks: connect again and replay; else fail.
  Status recover(Status why);
  Status replay();
  Status add_piece(const std::byte* p, uint32_t len, uint32_t events, uint32_t release);
  // A replay's piece kept by header: made again in a reserve slot, waiting
  // for the carrier to release one where none is free.
  Status remade_piece(uint64_t kept, TxCarrier::Piece* out);
  Status close_frame();
  Status flush();  // the carrier's, recovering a broken link with acks
  Status wait_acked();
  // With a ledger, after a break with claims unacknowledged: the log is the
  // upstreams' to send again; what it kept of this process's own goes back.
  void forget_log();
  // Releases the slots of a frame that will not be sent (stale, or forgotten
  // before the carrier took it): those the carrier does not hold.
  void drop_frame(const TxCarrier::Piece* p, size_t n);

  LinkOptions opts_;
  std::unique_ptr<TxCarrier> carrier_;
  SlotPool& pool_;
  const uint32_t initial_credits_, peer_slot_bytes_;
  const size_t max_pieces_;
  const uint32_t max_events_;
  std::string name_;
  Status error_;
  std::unique_ptr<CreditGate> gate_;
  bool carrier_takes_credits_ = false;
  // Upstream backup (opts_.acks): a ring of the frames sent and not yet
  // acknowledged, their pieces in a ring of their own. Log index i holds the
  // frame numbered i - conn_base_ on the current connection.
  struct Kept {
    FrameKind kind;
    uint64_t first_piece;
    uint32_t pieces, payload, events;
  };
  Connector connect_;
  std::vector<Kept> log_;
  std::vector<TxCarrier::Piece> kept_pieces_;
  uint64_t log_head_ = 0, log_tail_ = 0, piece_head_ = 0, piece_tail_ = 0, conn_base_ = 0;
  std::vector<TxCarrier::Piece> scratch_;  // a kept frame's pieces, gathered for a replay
  // set_remaker: the header of each kept piece whose p is null (kept by
  // header), at the piece's index.
  Remaker* remaker_ = nullptr;
  // set_ledger: the claim of each kept piece whose release is kClaimedPiece,
  // at the piece's index; claims in the log; forget_log()s so far.
  AckLedger* ledger_ = nullptr;
  std::vector<AckLedger::Claim> claims_;
  uint64_t claimed_held_ = 0, forgets_ = 0;
  std::vector<EventHeader> kept_headers_;
  Counter reconnects_, replayed_frames_, replayed_events_, held_frames_, max_held_frames_,
      remade_events_, acked_events_, logged_frames_, done_frames_;
  mutable std::mutex swap_mu_;  // carrier_ and gate_ replaced by a recovery, against stats()
  LinkStats retired_;           // what the connections before this one counted
  bool ended_ = false, closed_ = false, closed_without_end_ = false;
  std::atomic<bool> interrupted_{false};
  // The frame being planned.
  std::vector<TxCarrier::Piece> pieces_;
  size_t np_ = 0;
  uint32_t payload_ = 0, events_ = 0;
  std::unique_ptr<std::byte[]> end_buf_;
  std::byte* room_ = nullptr;  // the room set aside (its credit taken), until its frame goes
  uint32_t room_cap_ = 0;
};

}  // namespace sluice

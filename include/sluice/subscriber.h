// A subscriber: the application as an end of a graph's stream, the
// downstream of the processes its deployment links to it.
//
//   1. open() binds its links' listeners; its upstreams connect to it (they
//      retry until the application is up).
//   2. poll(handler, limit, timeout) hands each event that arrived to the
//      handler as a read-only view of its tuples, valid inside the call,
//      then gives its slot back (the credit upstream). Each event was
//      checked as the sink checks it first: checksum, each stream's
//      sequence; a replay's duplicates (acks) are dropped, never handed on.
//   3. Acknowledgements (acks on its links): by default an event is
//      acknowledged once its handler returned. With manual_acks it is
//      acknowledged only when the application says so (acknowledge(): a sink
//      that commits a transaction first); until then its upstream keeps it,
//      and past the link's window gives no more credit.
//   4. After END, poll says kClosed; close() writes the summary (lost,
//      duplicated, corrupt: the sink's verdict).
// A handler that never returns holds its slots: the upstreams run out of
// credit and the publishers see kBackPressured; nothing grows.
// One thread calls poll, acknowledge and close.
#pragma once

#include <chrono>
#include <memory>

#include "sluice/types.h"

namespace sluice {

class SubscriberImpl;

// One event, read-only, valid until its handler returns.
struct EventView {
  const std::byte* tuples = nullptr;
  uint32_t count = 0;        // tuples
  uint32_t tuple_bytes = 0;
  uint32_t stream = 0;
  uint64_t first_seq = 0;    // the first tuple's seq
  uint64_t event_seq = 0;    // the event's number in its stream
  TupleView tuple(uint32_t i) const { return TupleView(tuples + size_t{i} * tuple_bytes); }
  std::span<const std::byte> bytes() const { return {tuples, size_t{count} * tuple_bytes}; }
};

// Where a stream's output already reached (a sink that keeps its own
// position): events before next_event_seq are replays, and dropped.
struct StreamPosition {
  uint32_t stream = 0;
  uint64_t next_event_seq = 0;
  uint64_t next_seq = 0;  // the seq its next tuple has
};

struct SubscriberOptions {
  bool manual_acks = false;              // acknowledge() says when (needs acks: on)
  std::vector<StreamPosition> resume;    // before the first event
};

// The sink's counts (tuples), so far.
struct Counts {
  uint64_t events = 0, tuples = 0;
  uint64_t lost = 0, duplicated = 0, corrupt = 0, deduplicated = 0;
  bool ended = false;  // END arrived
};

class Subscriber {
 public:
  using Handler = void (*)(void* context, const EventView& event);
  static Result open(const Connect& c, std::unique_ptr<Subscriber>* out,
                     const SubscriberOptions& o = {});
  ~Subscriber();  // closes (close()) if it was not
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  const Layout& layout() const;

  // Hands at most `limit` events to handler(context, event), waiting up to
  // `timeout` for the first. kOk (*handled may be 0: none came), kClosed
  // once END came and everything before it was handled, kError.
  Code poll(Handler handler, void* context, int limit = 64, std::chrono::milliseconds timeout = {},
            int* handled = nullptr);
  template <class F>
  Code poll(F&& f, int limit = 64, std::chrono::milliseconds timeout = {}, int* handled = nullptr) {
    return poll([](void* ctx, const EventView& e) { (*static_cast<std::remove_reference_t<F>*>(ctx))(e); },
                static_cast<void*>(&f), limit, timeout, handled);
  }
  // manual_acks: every event handled so far is acknowledged upstream.
  Code acknowledge();

  Counts counts() const;
  // Stops if END has not come, then writes the summary. A second close
  // says kClosed.
  Result close();
  const std::string& error() const;

 private:
  explicit Subscriber(std::unique_ptr<SubscriberImpl> impl);
  std::unique_ptr<SubscriberImpl> impl_;
};

}  // namespace sluice

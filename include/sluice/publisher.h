// A publisher: the application as the source of a graph's stream, the
// upstream of the processes its deployment links it to.
//
//   1. open() connects its links (the handshake checks schema and token) and
//      returns once they are up, or with the receiver's refusal.
//   2. claim(n) hands out room for n tuples inside a slot of its pool: the
//      application writes them in place (TupleRef, or the bytes), then
//      commit() hands the event to the links (no copy); offer() copies a
//      buffer the application already holds. With no free slot within the
//      timeout the call says kBackPressured: the receivers give no credit,
//      or (acks) what was sent waits for its acknowledgement. Memory is the
//      pool, sized once.
//   3. Its links run as the load generator's do: credits, frames, and with
//      acks a kept copy of each event until acknowledged, a link that breaks
//      connected again and its unacknowledged events sent again, with
//      nothing for the application to do.
//   4. flush() waits until everything committed is acknowledged (acks) or
//      sent; close() sends END after it, waits for the receivers to finish
//      and writes the summary.
// One thread calls claim, commit, offer, flush and close; the counters may
// be read from any.
#pragma once

#include <chrono>
#include <memory>

#include "sluice/types.h"

namespace sluice {

class PublisherImpl;

// Room for tuples in a slot of the publisher's pool, until committed or
// aborted.
struct Claim {
  std::byte* tuples = nullptr;  // capacity tuples of tuple_bytes each, back to back
  uint32_t capacity = 0;
  uint32_t tuple_bytes = 0;
  uint32_t stream = 0;
  TupleRef tuple(uint32_t i) const { return TupleRef(tuples + size_t{i} * tuple_bytes); }
  std::span<std::byte> bytes() const { return {tuples, size_t{capacity} * tuple_bytes}; }
  uint32_t slot = UINT32_MAX;  // the library's
};

class Publisher {
 public:
  // The publisher `c` names, connected; *out is null when it is not (the
  // message says why: a file, a refusal at the handshake, a timeout).
  static Result open(const Connect& c, std::unique_ptr<Publisher>* out);
  ~Publisher();  // closes (close()) if it was not
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  const Layout& layout() const;
  uint32_t max_tuples() const;  // per event: what event_bytes holds
  uint32_t streams() const;     // streams it may write: 0 .. streams() - 1

  // Room for n tuples (1 .. max_tuples()) of stream `stream`, waiting up to
  // `timeout` for a free slot. Write every tuple but its seq (the library
  // numbers each stream's tuples from 0), then commit or abort.
  Code claim(uint32_t n, Claim* out, std::chrono::milliseconds timeout = {}, uint32_t stream = 0);
  // Sends the first n tuples of the claim (all it holds by default) as
  // one event: numbered, checksummed, handed to the links.
  Code commit(Claim& c, uint32_t n = UINT32_MAX);
  void abort(Claim& c);
  // claim, copy `tuples` (whole tuples, at most max_tuples()), commit.
  Code offer(std::span<const std::byte> tuples, std::chrono::milliseconds timeout = {},
             uint32_t stream = 0);

  // Waits until every committed event is acknowledged downstream (acks on)
  // or sent (off): kOk, kBackPressured when the timeout ran out first.
  Code flush(std::chrono::milliseconds timeout);
  uint64_t committed() const;     // events, since open
  uint64_t acknowledged() const;  // of those, acknowledged downstream (acks on; 0 with them off)
  uint64_t sent() const;          // of those, handed to the links

  // END after everything committed; waits up to `timeout` for every
  // receiver to take it, then writes the summary. A second close says
  // kClosed.
  Result close(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // What the last kError was.
  const std::string& error() const;

 private:
  explicit Publisher(std::unique_ptr<PublisherImpl> impl);
  std::unique_ptr<PublisherImpl> impl_;
};

}  // namespace sluice

// graph/: may include base/ and transport/.
//
// The key split (`split: key`, `split_key: FIELD`): a process with several
// downstream links sends each tuple to link key_link(field, n), so every tuple
// of one key always takes the same link and a group-by behind each link is
// exact for the keys it gets.
//
// The process stage runs it as the last operator of its chain. Each event
// is cut into one part per link that gets at least one of its tuples: a copy
// of the event's header (flag kEventPart) with only that link's tuples, the
// SAME first_seq and tuple_span, resealed, so the sink's per-tuple sequence
// check stays exact. Parts go into slots of the pool's reserve (one held at
// a time) and carry their link in the descriptor (kDescRouted). For each
// link and stream the tally counts the tuples of the events it cut that went
// to other links, and per stream the tuples dropped inside those events
// before the split (a filter ahead of it: span less count); the send stage
// puts the first into each link's END as the stream's `partitioned` account
// and adds the second to its `filtered` one, so each sink explains the
// tuples it did not get and still ends with lost = 0, and a tuple a filter
// dropped is never counted partitioned.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/operator.h"
#include "graph/schema.h"

namespace sluice {

// The split's hash of a key value: the splitmix64 finalizer (a fixed 64-bit
// mix). A tuple goes to link floor(key_hash(v) * n / 2^64), v the field as an
// integer (load_i64: f64 truncated): the hash's high bits, the best mixed.
// Its low bits, key_hash(v) % n, sent 7 of the keys 0-7 to one of two links
// (and 6 of 8 to one of four), where this gives 4 and 4 (3, 2, 2, 1): a
// group-by over a few keys split over replicas is as even as it can be.
inline uint64_t key_hash(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
inline uint32_t key_link(uint64_t v, uint32_t links) {
  return static_cast<uint32_t>((static_cast<unsigned __int128>(key_hash(v)) * links) >> 64);
}

// Per link and stream: tuples of the events the split cut that went to other
// links; per stream: tuples dropped inside those events before the split.
// Written by the process stage, read by the send stage at END (the END
// descriptor's trip through the ring orders the two). Sized when made.
class PartitionTally {
 public:
  explicit PartitionTally(uint32_t links)
      : links_(links), not_sent_(size_t{links} * kMaxStreams), filtered_ahead_(kMaxStreams) {}
  uint32_t links() const { return links_; }
  uint64_t& not_sent(uint32_t stream, uint32_t link) {
    return not_sent_[size_t{stream < kMaxStreams ? stream : kMaxStreams - 1} * links_ + link];
  }
  uint64_t not_sent(uint32_t stream, uint32_t link) const {
    return const_cast<PartitionTally*>(this)->not_sent(stream, link);
  }
  uint64_t& filtered_ahead(uint32_t stream) {
    return filtered_ahead_[stream < kMaxStreams ? stream : kMaxStreams - 1];
  }
  uint64_t filtered_ahead(uint32_t stream) const {
    return const_cast<PartitionTally*>(this)->filtered_ahead(stream);
  }

 private:
  uint32_t links_;
  std::vector<uint64_t> not_sent_;
  std::vector<uint64_t> filtered_ahead_;
};

// Writes the parts of the `events` events at `run` bound for `link` into
// `out` (room for `capacity` bytes) starting at event *next; stops before
// the first part that does not fit. Returns bytes written; *next moves past
// every event handled, *parts and *tuples count what was written. Each
// handled event adds its tuples less those written to tally (stream, link),
// and (once, on link 0) its span less its tuples to the stream's
// filtered_ahead, unless it is itself a part of an earlier split (whose
// accounts, carried in END, already explain what it lacks).
size_t write_parts(const std::byte* run, uint32_t events, const FieldRef& key, uint32_t link,
                   uint32_t links, std::byte* out, size_t capacity, uint32_t* next,
                   uint32_t* parts, uint32_t* tuples, PartitionTally* tally);

// The operator, made by the runtime (it is no kind a deployment names).
const OperatorSpec& partition_spec();
// Over output schema `out`, `field` a numeric field of it, to `tally.links()` links.
std::unique_ptr<Operator> make_partition(const Schema& out, const std::string& field,
                                         std::shared_ptr<PartitionTally> tally, Status* st);

}  // namespace sluice

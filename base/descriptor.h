// The descriptor: what moves between stages instead of the events it names.
#pragma once

#include <cstdint>

namespace sluice {

inline constexpr uint32_t kNoSlot = UINT32_MAX;
inline constexpr uint32_t kDescEnd = 1;  // bytes hold an EndOfStream payload
// The process stage chose the downstream link: (flags >> kDescLinkShift) is
// its index (a key split's parts, graph/partition.h).
inline constexpr uint32_t kDescRouted = 2;
inline constexpr uint32_t kDescLinkShift = 8;
// The events are not in a pool slot (slot: kNoSlot) but in the room the
// sending link offered in the receiver's slot (Sender::room): the send is
// their note alone. Consumed next by that link, and by nothing else.
inline constexpr uint32_t kDescInPlace = 4;

// A descriptor names a run of whole, contiguous events in one pool slot (or,
// with kDescEnd, an end-of-stream payload). Only descriptors move between
// stages; the events stay where they are.
struct Descriptor {
  uint32_t slot;
  uint32_t offset;
  uint32_t bytes;
  uint32_t events;
  uint32_t tuples;
  uint32_t flags;
};

}  // namespace sluice

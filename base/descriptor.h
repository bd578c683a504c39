// The descriptor: what moves between stages instead of the events it names.
#pragma once

#include <cstdint>

namespace sluice {

inline constexpr uint32_t kNoSlot = UINT32_MAX;
inline constexpr uint32_t kDescEnd = 1;  // bytes hold an EndOfStream payload

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

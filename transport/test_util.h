// Helpers shared by the transport's tests and benchmarks (the conformance
// suite of every carrier, tcp's own tests and benchmark): events written the
// way the load generator writes them, and options for a loopback link.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/event.h"
#include "transport/transport.h"

namespace sluice::testing {

// Writes one sealed event at dst: tuples first_seq.. (key = tuple index,
// payload a pattern of the seq), data_bytes of pattern. Returns its bytes.
size_t write_event(std::byte* dst, uint32_t stream, uint64_t first_seq, uint64_t event_seq,
                   uint32_t tuples, uint32_t tuple_bytes, uint32_t data_bytes = 0);

// Writes an EndOfStream for one stream; returns its bytes.
size_t write_end(std::byte* dst, uint32_t stream, uint64_t next_seq, uint64_t events);

// Checks that the events of a run are sealed and carry tuples expect_seq...;
// advances *expect_seq / *expect_event. Empty when good.
std::string verify_events(const std::byte* p, size_t bytes, uint32_t events, uint64_t* expect_seq,
                          uint64_t* expect_event);

LinkOptions loopback_options(Encoding e, const std::string& sender = "loadgen",
                             const std::string& receiver = "node-a");

}  // namespace sluice::testing

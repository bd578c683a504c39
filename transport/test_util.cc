#include "transport/test_util.h"

#include <fmt/format.h>

#include <cstring>

namespace sluice::testing {
namespace {
void pattern(std::byte* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  while (n >= 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p, &x, 8);
    p += 8;
    n -= 8;
  }
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>(x >> (8 * i));
}
}  // namespace

size_t write_event(std::byte* dst, uint32_t stream, uint64_t first_seq, uint64_t event_seq,
                   uint32_t tuples, uint32_t tuple_bytes, uint32_t data_bytes) {
  EventHeader h{};
  h.magic = kEventMagic;
  h.version = kWireVersion;
  h.header_bytes = kEventHeaderBytes;
  h.stream = stream;
  h.tuple_bytes = tuple_bytes;
  h.first_seq = first_seq;
  h.tuple_count = tuples;
  h.tuple_span = tuples;
  h.data_bytes = data_bytes;
  h.send_ts_ns = 1000 + event_seq;
  h.event_seq = event_seq;
  std::memcpy(dst, &h, sizeof h);
  std::byte* t = dst + kEventHeaderBytes;
  for (uint32_t i = 0; i < tuples; ++i, t += tuple_bytes) {
    uint64_t seq = first_seq + i;
    uint32_t key = i;
    std::memcpy(t, &seq, 8);
    std::memcpy(t + 8, &key, 4);
    pattern(t + 12, tuple_bytes - 12, seq);
  }
  pattern(t, data_bytes, event_seq + 77);
  seal_event(dst);
  return h.wire_bytes();
}

size_t write_end(std::byte* dst, uint32_t stream, uint64_t next_seq, uint64_t events) {
  EndOfStreamEntry e{stream, 0, next_seq, events};
  uint32_t head[2] = {1, 0};
  std::memcpy(dst, head, 8);
  std::memcpy(dst + 8, &e, sizeof e);
  return 8 + sizeof e;
}

std::string verify_events(const std::byte* p, size_t bytes, uint32_t events, uint64_t* expect_seq,
                          uint64_t* expect_event) {
  size_t off = 0;
  for (uint32_t i = 0; i < events; ++i) {
    if (off + kEventHeaderBytes > bytes) return fmt::format("event {} beyond the run", i);
    EventHeader h;
    std::memcpy(&h, p + off, sizeof h);
    if (event_checksum(p + off) != h.checksum)
      return fmt::format("event {} (seq {}) checksum mismatch", h.event_seq, h.first_seq);
    if (h.event_seq != *expect_event)
      return fmt::format("event seq {} but expected {}", h.event_seq, *expect_event);
    if (h.first_seq != *expect_seq)
      return fmt::format("event {} first seq {} but expected {}", h.event_seq, h.first_seq,
                         *expect_seq);
    const std::byte* t = p + off + kEventHeaderBytes;
    for (uint32_t j = 0; j < h.tuple_count; ++j, t += h.tuple_bytes)
      if (tuple_seq(t) != h.first_seq + j)
        return fmt::format("event {} tuple {} has seq {}", h.event_seq, j, tuple_seq(t));
    *expect_seq += h.tuple_count;
    *expect_event += 1;
    off += h.wire_bytes();
  }
  if (off != bytes) return fmt::format("run of {} events is {} bytes, descriptor says {}", events, off, bytes);
  return {};
}

LinkOptions loopback_options(Encoding e, const std::string& sender, const std::string& receiver) {
  LinkOptions o;
  o.tcp.encoding = e;
  o.host = "127.0.0.1";
  o.port = 0;
  o.connect_timeout_ms = 5000;
  o.from = sender;
  o.to = receiver;
  return o;
}

}  // namespace sluice::testing

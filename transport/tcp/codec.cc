#include "transport/tcp/codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cstring>

#include "wire.capnp.h"

namespace sluice::tcp {
namespace {

constexpr size_t kWord = sizeof(capnp::word);

}  // namespace

FrameLimits frame_limits(const LinkOptions& opts) {
  FrameLimits l;
  l.encoding = opts.tcp.encoding;
  l.slot_bytes = opts.slot_bytes;
  l.tuple_bytes = opts.tuple_bytes;
  size_t cb = capnp_event_bound_bytes(opts.slot_bytes, opts.tuple_bytes);
  l.capnp_bytes = cb > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(cb);
  return l;
}

size_t capnp_event_bound_bytes(uint32_t slot_bytes, uint32_t tuple_bytes) {
  if (tuple_bytes < kMinTupleBytes) tuple_bytes = kMinTupleBytes;
  size_t room = slot_bytes > kEventHeaderBytes ? slot_bytes - kEventHeaderBytes : 0;
  size_t max_tuples = room / tuple_bytes;
  // Per tuple: 2 data words + 1 pointer in the list, plus the padded payload.
  size_t tuple_words = 3 + (tuple_bytes - kMinTupleBytes + kWord - 1) / kWord;
  // Segment table, root pointer, Event struct (7 data + 2 pointer words), list
  // tag, data block, and slack for the builder's rounding.
  size_t words = 1 + 1 + 9 + 1 + max_tuples * tuple_words + (room + kWord - 1) / kWord + 16;
  return words * kWord;
}

Status decode_frame_header(const std::byte* p, const FrameLimits& lim, FrameHeader* out) {
  FrameHeader h;
  std::memcpy(&h, p, sizeof h);
  if (h.magic != kFrameMagic)
    return Status::Error(
        fmt::format("bad frame magic 0x{:08x} (expected 0x{:08x})", h.magic, kFrameMagic));
  if (h.flags != 0)
    return Status::Error(fmt::format("frame flags {:#x} (none are defined: they must be 0)", h.flags));
  const bool capnp = lim.encoding == Encoding::kCapnp;
  switch (static_cast<FrameKind>(h.kind)) {
    case FrameKind::kEvents: {
      if (capnp) return Status::Error("events frame on a capnp-encoded link");
      if (h.payload_bytes > lim.slot_bytes)
        return Status::Error(fmt::format("frame payload of {} bytes beyond the {}-byte slot",
                                         h.payload_bytes, lim.slot_bytes));
      // An event may hold no tuples (a filter dropped them all): 64 bytes.
      if (h.events == 0 || uint64_t{h.events} * kEventHeaderBytes > h.payload_bytes)
        return Status::Error(fmt::format("frame of {} bytes claims {} events", h.payload_bytes,
                                         h.events));
      break;
    }
    case FrameKind::kCapnpEvent:
      if (!capnp)
        return Status::Error(fmt::format("capnp event frame on a {}-encoded link",
                                         encoding_name(lim.encoding)));
      if (h.payload_bytes > lim.capnp_bytes)
        return Status::Error(fmt::format(
            "capnp frame payload of {} bytes beyond the {} bytes an event of a {}-byte slot needs",
            h.payload_bytes, lim.capnp_bytes, lim.slot_bytes));
      if (h.payload_bytes == 0 || h.payload_bytes % kWord != 0)
        return Status::Error(
            fmt::format("capnp frame payload of {} bytes is not whole words", h.payload_bytes));
      if (h.events != 1)
        return Status::Error(fmt::format("capnp frame claims {} events (carries 1)", h.events));
      break;
    case FrameKind::kEnd:
      if (h.payload_bytes > lim.slot_bytes || h.payload_bytes > kMaxEndBytes)
        return Status::Error(fmt::format(
            "end-of-stream frame payload of {} bytes beyond the {}", h.payload_bytes,
            h.payload_bytes > kMaxEndBytes ? fmt::format("largest END ({} bytes)", kMaxEndBytes)
                                           : fmt::format("{}-byte slot", lim.slot_bytes)));
      if (h.events != 0)
        return Status::Error(fmt::format("end-of-stream frame claims {} events", h.events));
      break;
    default:
      return Status::Error(fmt::format("unknown frame kind {}", h.kind));
  }
  *out = h;
  return {};
}

Status check_frame_payload(const FrameHeader& h, const std::byte* payload, const FrameLimits& lim,
                           uint64_t* tuples) {
  std::string err;
  *tuples = 0;
  if (h.kind == static_cast<uint16_t>(FrameKind::kEvents)) {
    if (!event_run_ok(payload, h.payload_bytes, h.events, lim.tuple_bytes, tuples))
      err = check_event_run(payload, h.payload_bytes, h.events, lim.tuple_bytes, tuples);
  } else if (h.kind == static_cast<uint16_t>(FrameKind::kEnd))
    err = check_end_of_stream(payload, h.payload_bytes);
  else
    err = fmt::format("frame kind {} has no plain payload", h.kind);
  if (!err.empty()) return Status::Error(std::move(err));
  return {};
}

Status decode_capnp_event(const std::byte* payload, size_t bytes, const FrameLimits& lim,
                          std::byte* scratch, std::byte* slot, size_t slot_bytes,
                          uint32_t* event_bytes, uint64_t* tuples) {
  if (bytes == 0 || bytes % kWord != 0)
    return Status::Error(fmt::format("capnp event of {} bytes is not whole words", bytes));
  const std::byte* aligned = payload;
  if (reinterpret_cast<uintptr_t>(payload) % alignof(capnp::word) != 0) {
    std::memcpy(scratch, payload, bytes);
    aligned = scratch;
  }
  try {
    capnp::ReaderOptions o;
    // Every word is read at most once by a well-formed event; twice the size
    // leaves room and stops amplification by shared pointers.
    o.traversalLimitInWords = 2 * bytes / kWord + 64;
    o.nestingLimit = 8;
    capnp::FlatArrayMessageReader reader(
        kj::arrayPtr(reinterpret_cast<const capnp::word*>(aligned), bytes / kWord), o);
    auto ev = reader.getRoot<Event>();
    const uint32_t tb = ev.getTupleBytes();
    if (tb != lim.tuple_bytes)
      return Status::Error(fmt::format("capnp event of {}-byte tuples, the link's schema says {}",
                                       tb, lim.tuple_bytes));
    auto list = ev.getTuples();
    auto data = ev.getData();
    const uint32_t n = list.size();
    if (data.size() != ev.getDataBytes())
      return Status::Error(fmt::format("capnp event says {} data bytes but carries {}",
                                       ev.getDataBytes(), data.size()));
    uint64_t len = kEventHeaderBytes + uint64_t{n} * tb + data.size();
    if (len > slot_bytes || len > lim.slot_bytes)
      return Status::Error(fmt::format(
          "capnp event of {} tuples and {} data bytes ({} bytes) beyond the {}-byte slot", n,
          data.size(), len, lim.slot_bytes));
    EventHeader h{};
    h.magic = kEventMagic;
    h.version = kWireVersion;
    h.header_bytes = kEventHeaderBytes;
    h.stream = ev.getStream();
    h.tuple_bytes = tb;
    h.first_seq = ev.getFirstSeq();
    h.tuple_count = n;
    h.tuple_span = ev.getTupleSpan();
    h.data_bytes = data.size();
    h.flags = ev.getFlags();
    h.send_ts_ns = ev.getSendTsNs();
    h.event_seq = ev.getEventSeq();
    h.checksum = ev.getChecksum();
    std::memcpy(slot, &h, sizeof h);
    std::byte* t = slot + kEventHeaderBytes;
    const size_t payload_len = tb - kMinTupleBytes;
    for (uint32_t i = 0; i < n; ++i, t += tb) {
      auto tr = list[i];
      auto p = tr.getPayload();
      if (p.size() != payload_len)
        return Status::Error(fmt::format("capnp tuple {} carries {} payload bytes, schema says {}",
                                         i, p.size(), payload_len));
      uint64_t seq = tr.getSeq();
      uint32_t key = tr.getKey();
      std::memcpy(t + kTupleSeqOffset, &seq, sizeof seq);
      std::memcpy(t + kTupleKeyOffset, &key, sizeof key);
      if (payload_len) std::memcpy(t + kMinTupleBytes, p.begin(), payload_len);
    }
    if (data.size()) std::memcpy(t, data.begin(), data.size());
    std::string err = check_event_header(slot, len, lim.tuple_bytes);
    if (!err.empty()) return Status::Error("capnp event rebuilt badly: " + err);
    *event_bytes = static_cast<uint32_t>(len);
    *tuples = n;
    return {};
  } catch (const kj::Exception& e) {
    return Status::Error(fmt::format("malformed capnp event: {}", e.getDescription().cStr()));
  }
}

Status encode_capnp_event(const std::byte* event, std::byte* scratch, size_t scratch_bytes,
                          std::byte* out, size_t cap, size_t* len) {
  EventHeader h;
  std::memcpy(&h, event, sizeof h);
  if (h.tuple_bytes < kMinTupleBytes)
    return Status::Error(fmt::format("event of {}-byte tuples", h.tuple_bytes));
  try {
    // The builder's first segment is the caller's zeroed scratch: no heap
    // allocation per event, and the destructor zeroes it again for the next.
    capnp::MallocMessageBuilder msg(
        kj::arrayPtr(reinterpret_cast<capnp::word*>(scratch), scratch_bytes / kWord),
        capnp::AllocationStrategy::FIXED_SIZE);
    auto ev = msg.initRoot<Event>();
    ev.setStream(h.stream);
    ev.setFirstSeq(h.first_seq);
    ev.setEventSeq(h.event_seq);
    ev.setTupleSpan(h.tuple_span);
    ev.setSendTsNs(h.send_ts_ns);
    ev.setChecksum(h.checksum);
    ev.setTupleBytes(h.tuple_bytes);
    ev.setDataBytes(h.data_bytes);
    ev.setFlags(h.flags);
    auto list = ev.initTuples(h.tuple_count);
    const std::byte* t = event + kEventHeaderBytes;
    const size_t payload_len = h.tuple_bytes - kMinTupleBytes;
    for (uint32_t i = 0; i < h.tuple_count; ++i, t += h.tuple_bytes) {
      auto tb = list[i];
      tb.setSeq(tuple_seq(t));
      tb.setKey(tuple_key(t));
      auto p = tb.initPayload(payload_len);
      if (payload_len) std::memcpy(p.begin(), t + kMinTupleBytes, payload_len);
    }
    if (h.data_bytes) {
      auto d = ev.initData(h.data_bytes);
      std::memcpy(d.begin(), t, h.data_bytes);
    }
    size_t bytes = capnp::computeSerializedSizeInWords(msg) * kWord;
    if (bytes > cap)
      return Status::Error(
          fmt::format("capnp event of {} bytes beyond the {} bytes left to write it", bytes, cap));
    kj::ArrayOutputStream os(kj::arrayPtr(reinterpret_cast<kj::byte*>(out), bytes));
    capnp::writeMessage(os, msg);
    *len = bytes;
    return {};
  } catch (const kj::Exception& e) {
    return Status::Error(fmt::format("cannot serialize event: {}", e.getDescription().cStr()));
  }
}

}  // namespace sluice::tcp

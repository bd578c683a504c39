// The handshake codec: Hello and HelloReply as Cap'n Proto messages behind an
// 8-byte prefix. Pure functions: they never trust a length they were given,
// never throw, and allocate only the small builders of the handshake itself.
#include "transport/handshake.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cstring>

#include "wire.capnp.h"

namespace sluice {
namespace {

constexpr size_t kWord = sizeof(capnp::word);

std::string text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

static_assert(kHandshakeTraversalWords == 2 * kMaxHandshakeBytes / kWord);

// Handshake messages are tiny: a small traversal budget makes a hostile
// message (deep or self-amplifying pointers) fail fast instead of looping.
capnp::ReaderOptions handshake_reader_options() {
  capnp::ReaderOptions o;
  o.traversalLimitInWords = kHandshakeTraversalWords;
  o.nestingLimit = kHandshakeNestingLimit;
  return o;
}

Status write_framed(capnp::MessageBuilder& msg, std::byte* out, size_t cap, size_t* len) {
  size_t bytes = capnp::computeSerializedSizeInWords(msg) * kWord;
  if (bytes > kMaxHandshakeBytes)
    return Status::Error(fmt::format("handshake of {} bytes beyond the limit of {}", bytes,
                                     kMaxHandshakeBytes));
  if (kHandshakePrefixBytes + bytes > cap)
    return Status::Error(fmt::format("handshake of {} bytes beyond a buffer of {}", bytes, cap));
  uint32_t prefix[2] = {kHandshakeMagic, static_cast<uint32_t>(bytes)};
  std::memcpy(out, prefix, sizeof prefix);
  kj::ArrayOutputStream os(
      kj::arrayPtr(reinterpret_cast<kj::byte*>(out + kHandshakePrefixBytes), bytes));
  capnp::writeMessage(os, msg);
  *len = kHandshakePrefixBytes + bytes;
  return {};
}

// Copies an unaligned handshake into aligned words on the stack (<= 4 KiB).
template <class Fn>
Status with_aligned_handshake(const std::byte* p, size_t len, Fn fn) {
  if (len == 0 || len % kWord != 0 || len > kMaxHandshakeBytes)
    return Status::Error(fmt::format("handshake length {} (want a multiple of 8, at most {})", len,
                                     kMaxHandshakeBytes));
  capnp::word words[kMaxHandshakeBytes / kWord];
  std::memcpy(words, p, len);
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words, len / kWord),
                                         handshake_reader_options());
    return fn(reader);
  } catch (const kj::Exception& e) {
    return Status::Error(fmt::format("malformed handshake message: {}", e.getDescription().cStr()));
  }
}

}  // namespace

std::string carrier_name(const LinkOptions& opts) {
  if (opts.transport == "tcp") return "tcp/" + std::string(encoding_name(opts.tcp.encoding));
  if (opts.transport == "fabric") return "fabric/" + opts.msg.fabric_provider;
  if (opts.transport == "ucx") return "ucx/" + opts.msg.ucx_tls;
  return opts.transport;
}

HelloInfo hello_from_options(const LinkOptions& opts) {
  HelloInfo h;
  h.version = kLinkVersion;
  h.link_id = opts.link_id;
  h.schema = opts.schema;
  h.tuple_bytes = opts.tuple_bytes;
  h.slot_bytes = opts.slot_bytes;
  h.slots = opts.slots;
  h.instance = opts.instance;
  h.carrier = carrier_name(opts);
  h.token = opts.token;
  h.sender_name = opts.from;
  h.receiver_name = opts.name_receiver ? opts.to : std::string();
  h.acks = opts.acks;
  return h;
}

HelloInfo expected_hello(const LinkOptions& opts) {
  HelloInfo h = hello_from_options(opts);
  h.receiver_name = opts.to;
  return h;
}

Status decode_handshake_prefix(const std::byte* p, uint32_t* len) {
  uint32_t prefix[2];
  std::memcpy(prefix, p, sizeof prefix);
  if (prefix[0] != kHandshakeMagic)
    return Status::Error(fmt::format("bad handshake magic 0x{:08x} (expected 0x{:08x})", prefix[0],
                                     kHandshakeMagic));
  if (prefix[1] == 0 || prefix[1] > kMaxHandshakeBytes || prefix[1] % kWord != 0)
    return Status::Error(fmt::format(
        "handshake length {} (want a multiple of 8 between 8 and {})", prefix[1],
        kMaxHandshakeBytes));
  *len = prefix[1];
  return {};
}

Status encode_hello(const HelloInfo& h, std::byte* out, size_t cap, size_t* len) {
  try {
    capnp::MallocMessageBuilder msg(256);
    auto b = msg.initRoot<Hello>();
    b.setVersion(h.version);
    b.setLinkId(h.link_id);
    b.setSchema(h.schema);
    b.setTupleBytes(h.tuple_bytes);
    b.setSlotBytes(h.slot_bytes);
    b.setSlots(h.slots);
    b.setInstance(h.instance);
    b.setCarrier(h.carrier);
    b.setToken(h.token);
    b.setSenderName(h.sender_name);
    b.setReceiverName(h.receiver_name);
    b.setAcks(h.acks);
    return write_framed(msg, out, cap, len);
  } catch (const kj::Exception& e) {
    return Status::Error(fmt::format("cannot build Hello: {}", e.getDescription().cStr()));
  }
}

Status encode_reply(const ReplyInfo& r, std::byte* out, size_t cap, size_t* len) {
  try {
    capnp::MallocMessageBuilder msg(256);
    auto b = msg.initRoot<HelloReply>();
    b.setAccepted(r.accepted);
    b.setError(r.error);
    b.setCredits(r.credits);
    b.setSlotBytes(r.slot_bytes);
    b.setCreditBatch(r.credit_batch);
    b.setReceiverName(r.receiver_name);
    return write_framed(msg, out, cap, len);
  } catch (const kj::Exception& e) {
    return Status::Error(fmt::format("cannot build HelloReply: {}", e.getDescription().cStr()));
  }
}

Status decode_hello(const std::byte* p, size_t len, HelloInfo* out) {
  return with_aligned_handshake(p, len, [&](capnp::MessageReader& reader) -> Status {
    auto h = reader.getRoot<Hello>();
    HelloInfo r;
    r.version = h.getVersion();
    r.link_id = h.getLinkId();
    r.schema = text(h.getSchema());
    r.tuple_bytes = h.getTupleBytes();
    r.slot_bytes = h.getSlotBytes();
    r.slots = h.getSlots();
    r.instance = h.getInstance();
    r.carrier = text(h.getCarrier());
    r.token = text(h.getToken());
    r.sender_name = text(h.getSenderName());
    r.receiver_name = text(h.getReceiverName());
    r.acks = h.getAcks();
    *out = std::move(r);
    return {};
  });
}

Status decode_reply(const std::byte* p, size_t len, ReplyInfo* out) {
  return with_aligned_handshake(p, len, [&](capnp::MessageReader& reader) -> Status {
    auto h = reader.getRoot<HelloReply>();
    ReplyInfo r;
    r.accepted = h.getAccepted();
    r.error = text(h.getError());
    r.credits = h.getCredits();
    r.slot_bytes = h.getSlotBytes();
    r.credit_batch = h.getCreditBatch();
    r.receiver_name = text(h.getReceiverName());
    *out = std::move(r);
    return {};
  });
}

bool tokens_equal(std::string_view got, std::string_view expect) {
  // The length's difference folds into the same accumulator as the bytes'.
  // Bytes of `got` past its end read as 0, so a short `got` costs the same
  // loop; only the expected length (not secret from its owner) sets the time.
  volatile unsigned char diff = got.size() == expect.size() ? 0 : 1;
  for (size_t i = 0; i < expect.size(); ++i) {
    const unsigned char g = i < got.size() ? static_cast<unsigned char>(got[i]) : 0;
    diff = diff | (g ^ static_cast<unsigned char>(expect[i]));
  }
  return diff == 0;
}

std::string hello_mismatch(const HelloInfo& got, const HelloInfo& expect) {
  if (got.version != expect.version)
    return fmt::format("wire version {}, receiver speaks {}", got.version, expect.version);
  if (got.schema != expect.schema || got.tuple_bytes != expect.tuple_bytes) {
    if (got.schema != expect.schema)
      return fmt::format("schema '{}'/{}-byte tuples, receiver expects '{}'/{}-byte tuples",
                         got.schema, got.tuple_bytes, expect.schema, expect.tuple_bytes);
    return fmt::format("schema '{}'/{}-byte tuples, receiver expects {}-byte tuples", got.schema,
                       got.tuple_bytes, expect.tuple_bytes);
  }
  if (got.slot_bytes != expect.slot_bytes)
    return fmt::format("slot size {} bytes, receiver expects {} bytes", got.slot_bytes,
                       expect.slot_bytes);
  if (got.carrier != expect.carrier)
    return fmt::format("carrier '{}', receiver expects '{}'", got.carrier, expect.carrier);
  // Acknowledgements change what both ends do with the credit message's
  // `acked` and after a break (PROTOCOL.md, section 5): one end with them
  // and one without would each run its half of a different protocol.
  if (got.acks != expect.acks) {
    auto who = [](const char* end, const std::string& name) {
      return name.empty() ? fmt::format("the {}", end) : fmt::format("{} '{}'", end, name);
    };
    return fmt::format("{} has acks {}, {} has acks {}: both ends of a link need the same acks",
                       who("sender", got.sender_name), got.acks ? "on" : "off",
                       who("receiver", expect.receiver_name), expect.acks ? "on" : "off");
  }
  if (got.link_id != expect.link_id || got.instance != expect.instance)
    return fmt::format("link {} instance {}, receiver expects link {} instance {}", got.link_id,
                       got.instance, expect.link_id, expect.instance);
  if (!got.receiver_name.empty() && got.receiver_name != expect.receiver_name)
    return fmt::format("addressed to '{}', this is '{}'", got.receiver_name,
                       expect.receiver_name);
  if (!tokens_equal(got.token, expect.token)) return "token does not match the receiver's";
  return {};
}

}  // namespace sluice

// Writes the seed corpus of fuzz_decoders into a folder: valid handshakes,
// valid frames (sg/copy events, capnp event, END) and a few broken ones.
// Usage: gen_corpus <dir>. The committed corpus/ was made with it.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/tcp/codec.h"
#include "transport/test_util.h"

using namespace sluice;

namespace {
std::string dir;

void put(const char* name, uint8_t selector, const std::vector<std::byte>& body) {
  std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  std::fputc(selector, f);
  std::fwrite(body.data(), 1, body.size(), f);
  std::fclose(f);
}

std::vector<std::byte> frame(FrameKind kind, const std::byte* p, size_t n, uint32_t events) {
  FrameHeader h{kFrameMagic, static_cast<uint16_t>(kind), 0, static_cast<uint32_t>(n), events};
  std::vector<std::byte> v(sizeof h + n);
  std::memcpy(v.data(), &h, sizeof h);
  std::memcpy(v.data() + sizeof h, p, n);
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  dir = argv[1];
  std::vector<std::byte> buf(kHandshakePrefixBytes + kMaxHandshakeBytes);
  size_t n = 0;
  LinkOptions o;
  o.from = "loadgen";
  encode_hello(hello_from_options(o), buf.data(), buf.size(), &n);
  put("hello", 0, {buf.begin(), buf.begin() + n});
  o.acks = true;
  encode_hello(hello_from_options(o), buf.data(), buf.size(), &n);
  put("hello_acks", 0, {buf.begin(), buf.begin() + n});
  o.acks = false;
  encode_reply({true, "", 64, 65536, 16, "node-a"}, buf.data(), buf.size(), &n);
  put("reply", 0, {buf.begin(), buf.begin() + n});
  std::vector<std::byte> bad(buf.begin(), buf.begin() + n);
  bad[4] = std::byte{0xff};  // length beyond the limit
  put("hello_oversized", 0, bad);

  std::vector<std::byte> ev(4096);
  size_t eb = testing::write_event(ev.data(), 0, 0, 0, 2, 12, 8);
  eb += testing::write_event(ev.data() + eb, 0, 2, 1, 1, 12);
  auto f = frame(FrameKind::kEvents, ev.data(), eb, 2);
  std::vector<std::byte> end(64);
  size_t endb = testing::write_end(end.data(), 0, 3, 2);
  auto e = frame(FrameKind::kEnd, end.data(), endb, 0);
  std::vector<std::byte> stream = f;
  stream.insert(stream.end(), e.begin(), e.end());
  put("events_then_end_sg", 1, stream);
  put("events_then_end_copy", 2, stream);
  put("end", 1, e);
  // A frame after END: the codec takes it; the receiver refuses it
  // (Receiver::check_after_end), which is not a decoder's to see.
  auto after = stream;
  after.insert(after.end(), f.begin(), f.end());
  put("events_end_events_sg", 1, after);
  auto flagged = f;
  flagged[6] = std::byte{1};  // frame flags: none are defined
  put("frame_flags", 1, flagged);
  auto bm = f;
  bm[sizeof(FrameHeader)] = std::byte{0};  // bad event magic
  put("bad_event_magic", 1, bm);
  auto cut = f;
  cut.resize(cut.size() - 10);
  put("cut_off", 1, cut);

  o.slot_bytes = 4096;
  o.tuple_bytes = 12;
  size_t bound = tcp::capnp_event_bound_bytes(o.slot_bytes, o.tuple_bytes);
  std::vector<uint64_t> scratch(bound / 8 + 1), out(bound / 8 + 1);
  size_t len = 0;
  size_t one = testing::write_event(ev.data(), 0, 0, 0, 3, 12, 16);
  (void)one;
  tcp::encode_capnp_event(ev.data(), reinterpret_cast<std::byte*>(scratch.data()), bound,
                          reinterpret_cast<std::byte*>(out.data()), bound, &len);
  auto c = frame(FrameKind::kCapnpEvent, reinterpret_cast<std::byte*>(out.data()), len, 1);
  stream = c;
  stream.insert(stream.end(), e.begin(), e.end());
  put("capnp_event_then_end", 3, stream);
  auto cb = c;
  cb[sizeof(FrameHeader) + 12] = std::byte{0x7f};  // a corrupt pointer
  put("capnp_corrupt", 3, cb);

  // The largest END (every stream, accounts with a partitioned field), in a
  // slot that holds it: the frames case's slot is 4096 bytes, so it is
  // refused there as beyond the slot, a byte past every length check.
  auto eos = std::make_unique<EndOfStream>();
  eos->n_streams = kMaxStreams;
  eos->flags = kEndAccounts | kEndPartitioned;
  std::vector<std::byte> big(eos->wire_bytes());
  write_end(*eos, big.data());
  put("end_largest", 1, frame(FrameKind::kEnd, big.data(), big.size(), 0));

  // Credit messages, cut into pieces of 5 and 16 bytes (the byte before
  // each piece is its length less one).
  std::vector<std::byte> cr;
  const CreditFrame cf[3] = {{kCreditMagic, 4, 2}, {kCreditMagic, 1, 3}, {kCreditMagic, 2, 6}};
  const auto* cp = reinterpret_cast<const std::byte*>(cf);
  for (size_t off = 0, k = 0; off < sizeof cf; ++k) {
    const size_t piece = std::min<size_t>(k % 2 ? 16 : 5, sizeof cf - off);
    cr.push_back(std::byte(piece - 1));
    cr.insert(cr.end(), cp + off, cp + off + piece);
    off += piece;
  }
  put("credits_in_pieces", 4, cr);
  return 0;
}

#include "graph/partition.h"

#include <cstring>

#include <fmt/format.h>

namespace sluice {

size_t write_parts(const std::byte* run, uint32_t events, const FieldRef& key, uint32_t link,
                   uint32_t links, std::byte* out, size_t capacity, uint32_t* next,
                   uint32_t* parts, uint32_t* tuples, PartitionTally* tally) {
  size_t used = 0, off = 0;
  // Skip to event *next (a run's events are walked from its front each call).
  for (uint32_t e = 0; e < *next; ++e) {
    EventHeader h;
    std::memcpy(&h, run + off, sizeof h);
    off += h.wire_bytes();
  }
  for (; *next < events; ++*next) {
    const std::byte* p = run + off;
    EventHeader h;
    std::memcpy(&h, p, sizeof h);  // checked when it arrived
    // The part is at most the event; it must fit whole (its tuples are not
    // known before they are copied).
    if (used + h.wire_bytes() > capacity) break;
    off += h.wire_bytes();
    std::byte* part = out + used;
    std::byte* w = part + kEventHeaderBytes;
    const std::byte* t = p + kEventHeaderBytes;
    uint32_t k = 0;
    for (uint32_t i = 0; i < h.tuple_count; ++i, t += h.tuple_bytes) {
      if (key_link(static_cast<uint64_t>(load_i64(t, key)), links) != link) continue;
      std::memcpy(w, t, h.tuple_bytes);
      w += h.tuple_bytes;
      ++k;
    }
    tally->not_sent(h.stream, link) += h.tuple_count - k;
    if (link == 0 && !(h.flags & kEventPart))
      tally->filtered_ahead(h.stream) += h.tuple_span - h.tuple_count;
    if (k == 0) continue;  // nothing for this link: no part
    std::memcpy(w, t, h.data_bytes);  // the event's array data goes with every part
    EventHeader ph = h;
    ph.tuple_count = k;
    ph.flags |= kEventPart;
    std::memcpy(part, &ph, sizeof ph);
    seal_event(part);
    used += ph.wire_bytes();
    ++*parts;
    *tuples += k;
  }
  return used;
}

namespace {

class Partition final : public Operator {
 public:
  Partition(FieldRef key, std::shared_ptr<PartitionTally> tally)
      : key_(key), tally_(std::move(tally)) {}
  const char* name() const override { return "partition"; }
  size_t state_bytes() const override { return size_t{tally_->links()} * kMaxStreams * 8; }

  // One pass over the run per link, one reserve slot held at a time, each
  // committed before the next is taken (so the stage never waits holding one).
  Result process(std::byte* run, Descriptor& d, Emitter& out) override {
    const uint32_t n = tally_->links();
    for (uint32_t l = 0; l < n; ++l) {
      uint32_t next = 0;
      while (next < d.events) {
        uint32_t cap = 0;
        std::byte* slot = out.acquire(&cap);
        if (!slot) return kConsumed;  // stopping
        const uint32_t before = next;
        uint32_t parts = 0, tuples = 0;
        const size_t bytes = write_parts(run, d.events, key_, l, n, slot, cap, &next, &parts,
                                         &tuples, tally_.get());
        if (next == before) {
          // An event larger than an emitted slot: it could never be sent.
          status_ = Status::Error(fmt::format(
              "an event does not fit an emitted slot ({} bytes); raise the downstream slot_bytes",
              cap));
          out.commit_to(l, 0, 0, 0);
          return kConsumed;
        }
        out.commit_to(l, static_cast<uint32_t>(bytes), parts, tuples);
      }
    }
    return kConsumed;
  }
  Status status() const override { return status_; }
  // The tally is state: the accounts each sink's END needs. A restarted
  // split node restores it from its snapshot, and its upstream replays
  // what came after, which it cuts and counts again.
  State state() const override { return State::kSaved; }
  void save(SnapshotOut& out) const override {
    const uint32_t n = tally_->links();
    out.put<uint32_t>(n);
    for (uint32_t s = 0; s < kMaxStreams; ++s) {
      for (uint32_t l = 0; l < n; ++l) out.put<uint64_t>(tally_->not_sent(s, l));
      out.put<uint64_t>(tally_->filtered_ahead(s));
    }
  }
  Status load(SnapshotIn& in) override {
    const uint32_t n = in.get<uint32_t>();
    if (in.ok() && n != tally_->links())
      in.fail(fmt::format("holds a key split over {} links; this one has {}", n, tally_->links()));
    if (in.ok() && in.left() < size_t{kMaxStreams} * (n + 1) * 8) in.fail("ends early");
    if (!in.ok()) return Status::Error(in.what());
    for (uint32_t s = 0; s < kMaxStreams; ++s) {
      for (uint32_t l = 0; l < n; ++l) tally_->not_sent(s, l) = in.get<uint64_t>();
      tally_->filtered_ahead(s) = in.get<uint64_t>();
    }
    return {};
  }

 private:
  FieldRef key_;
  std::shared_ptr<PartitionTally> tally_;
  Status status_;
};

Status partition_output(const OperatorConfig&, const Schema& in, Schema* out) {
  *out = in;
  return {};
}

}  // namespace

const OperatorSpec& partition_spec() {
  static const OperatorSpec spec = [] {
    OperatorSpec s;
    s.kind = "partition";
    s.doc = "the key split (split: key): each tuple to link hash(split_key) % n";
    s.emits = true;
    s.emit_slots = 2;  // one held at a time, and one more so the send stage keeps sending
    s.output = partition_output;
    return s;
  }();
  return spec;
}

std::unique_ptr<Operator> make_partition(const Schema& out, const std::string& field,
                                         std::shared_ptr<PartitionTally> tally, Status* st) {
  FieldRef ref;
  if (!out.find(field, &ref) || ref.type == FieldType::kBytes) {
    *st = Status::Error(fmt::format("split_key '{}': no numeric field of that name in {}", field,
                                    out.describe()));
    return nullptr;
  }
  if (!tally || tally->links() < 2) {
    *st = Status::Error("a key split needs two or more downstream links");
    return nullptr;
  }
  return std::make_unique<Partition>(ref, std::move(tally));
}

}  // namespace sluice

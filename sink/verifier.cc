#include "sink/verifier.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "sink/kafka_rows.h"

namespace sluice {

// A gap in a stream, less the tuples of corrupt events of that stream not yet
// accounted for: those are counted corrupt, not lost too.
uint64_t Verifier::gap(uint32_t stream, uint64_t missing) {
  const uint64_t known = std::min(missing, corrupt_unseen_[stream]);
  corrupt_unseen_[stream] -= known;
  return missing - known;
}

// A template event (kEventTemplate) is intact when every tuple's seq and key
// are the template's and the template checksum holds over one XXH3 of its
// body (check_template_event: one pass, the bytes as they came after). With
// 12-byte tuples and no data the body once its fields are zeroed is all
// zeros: its hash depends on the tuple count alone and is kept, so only the
// fields and the header are checked.
bool Verifier::template_intact(std::byte* p, const EventHeader& h) {
  if (h.tuple_count != h.tuple_span || (h.flags & kEventPart)) return false;  // not as generated
  const bool zero_body = h.tuple_bytes == kMinTupleBytes && h.data_bytes == 0;
  if (zero_body && h.tuple_count == zero_body_count_)
    return check_template_event(p, false, nullptr) && template_checksum(p, zero_body_hash_) == h.checksum;
  uint64_t body = 0;
  if (!check_template_event(p, true, &body)) return false;
  if (zero_body) {
    zero_body_hash_ = body;
    zero_body_count_ = h.tuple_count;
  }
  return template_checksum(p, body) == h.checksum;
}

void Verifier::verify_run(std::byte* run, const Descriptor& d, uint64_t now_ns) {
  size_t off = 0;
  for (uint32_t e = 0; e < d.events; ++e) {
    std::byte* p = run + off;
    EventHeader h;
    std::memcpy(&h, p, sizeof h);
    off += h.wire_bytes();
    verify_event(p, now_ns);
  }
}

void Verifier::resume(uint32_t stream, uint64_t next_event_seq, uint64_t next_seq) {
  if (stream >= kMaxStreams) return;
  dedupe_ = true;
  last_event_[stream] = next_event_seq;
  next_seq_[stream] = next_seq;
  seen_[stream] = true;
}

Verifier::Verdict Verifier::verify_event(std::byte* p, uint64_t now_ns) {
  EventHeader h;
  std::memcpy(&h, p, sizeof h);  // the receiving transport checked the header
  ++c_.events;
  c_.tuples += h.tuple_count;
  c_.bytes += h.wire_bytes();
  const bool templ = h.flags & kEventTemplate;
  if (templ ? !template_intact(p, h) : event_checksum(p) != h.checksum) {
    // Nothing in it can be trusted, its sequence numbers neither. The gap
    // it leaves in its stream is these tuples, already counted corrupt:
    // not lost as well.
    c_.corrupt += h.tuple_count;
    corrupt_unseen_[h.stream] += h.tuple_count;
    return Verdict::kCorrupt;
  }
  if (dedupe_) {
    if (h.event_seq < last_event_[h.stream]) {
      --c_.events;
      c_.tuples -= h.tuple_count;
      c_.bytes -= h.wire_bytes();
      c_.deduplicated += h.tuple_count;
      return Verdict::kDuplicate;
    }
    last_event_[h.stream] = h.event_seq + 1;
  }
  seen_[h.stream] = true;
  uint64_t& next = next_seq_[h.stream];
  if (h.first_seq > next) {
    const uint64_t g = gap(h.stream, h.first_seq - next);
    c_.lost += g;
    missing_[h.stream] += g;
  } else if (h.first_seq < next) {
    c_.duplicated += std::min<uint64_t>(h.tuple_count, next - h.first_seq);
  }
  if (h.first_seq + h.tuple_span > next) next = h.first_seq + h.tuple_span;
  if (h.flags & kEventPart) part_missing_[h.stream] += h.tuple_span - h.tuple_count;
  else c_.filtered += h.tuple_span - h.tuple_count;
  // Each tuple's own sequence number: inside the span, strictly increasing
  // (a template event's were checked exactly above). With nothing dropped
  // that means tuple i is first_seq + i: one pass without a branch per
  // tuple, and the counting pass only when it finds something.
  const std::byte* t = p + kEventHeaderBytes;
  uint64_t bad = h.tuple_count != h.tuple_span;
  if (!templ && !bad) {
    uint64_t seq = h.first_seq;
    for (uint32_t i = 0; i < h.tuple_count; ++i, t += h.tuple_bytes, ++seq) bad |= tuple_seq(t) ^ seq;
    t = p + kEventHeaderBytes;
  }
  if (!templ && bad) {
    uint64_t prev = 0;
    for (uint32_t i = 0; i < h.tuple_count; ++i, t += h.tuple_bytes) {
      uint64_t s = tuple_seq(t);
      bool ok = s >= h.first_seq && s < h.first_seq + h.tuple_span && (i == 0 || s > prev);
      c_.corrupt += !ok;
      prev = s;
    }
  }
  const uint64_t lat = now_ns > h.send_ts_ns ? now_ns - h.send_ts_ns : 0;
  latency_.record(lat);
  live_latency_.record(lat);
  if (bursts_) bursts_->record(h.send_ts_ns, now_ns);
  if (results_.is_open() && results_error_.ok()) {
    t = p + kEventHeaderBytes;
    for (uint32_t i = 0; i < h.tuple_count && results_error_.ok(); ++i, t += h.tuple_bytes)
      results_error_ = results_.write(t);
  }
  if (kafka_ && kafka_error_.ok()) kafka_error_ = kafka_->event(p, h);
  return Verdict::kIntact;
}

// The generator's totals reveal a lost tail; the operators' accounts then
// explain missing tuples they took out on purpose. A claim beyond what is
// missing is a miscount, counted corrupt.
void Verifier::verify_end(const std::byte* p, uint32_t bytes) {
  c_.end_seen = true;
  EndOfStream& eos = *end_;
  read_end(p, bytes, &eos);  // checked by the receiver
  for (uint32_t i = 0; i < eos.n_streams; ++i) {
    const auto& e = eos.streams[i];
    if (e.stream >= kMaxStreams) {
      ++c_.corrupt;
      continue;
    }
    uint64_t got = next_seq_[e.stream];
    if (got < e.next_seq) {
      const uint64_t g = gap(e.stream, e.next_seq - got);
      c_.lost += g;
      missing_[e.stream] += g;
    } else if (got > e.next_seq) {
      c_.corrupt += got - e.next_seq;  // tuples nobody generated
    }
    const EndOfStreamAccount& a = eos.accounts[i];
    c_.partitioned += a.partitioned;
    c_.filtered += a.filtered;
    c_.aggregated += a.aggregated;
    c_.joined += a.joined;
    // The accounts explain first what this link's parts lack (behind a key
    // split: tuples sent to other links, or dropped before the split), then
    // the gaps; what of the parts' lack no account claims was dropped inside
    // them (filtered), a claim beyond every gap is a miscount.
    const uint64_t claimed = a.partitioned + a.filtered + a.aggregated + a.joined;
    uint64_t& in_parts = part_missing_[e.stream];
    const uint64_t from_parts = std::min(claimed, in_parts);
    c_.filtered += in_parts - from_parts;
    in_parts = 0;
    const uint64_t explained = std::min(claimed - from_parts, missing_[e.stream]);
    missing_[e.stream] -= explained;
    c_.lost -= explained;
    c_.miscounted += claimed - from_parts - explained;
    c_.corrupt += claimed - from_parts - explained;
  }
}

Status Verifier::consume(std::span<const Descriptor> descs) {
  if (!results_.is_open() && results_.prepared())
    if (Status st = open_results(); !st) return st;
  const uint64_t now = wall_clock_ns();  // one clock read per batch: they arrived together
  bool events = false;  // not only END: an arrival (arrived)
  for (const Descriptor& d : descs) {
    std::byte* run = pool_.slot(d.slot) + d.offset;
    if (d.flags & kDescEnd) {
      verify_end(run, d.bytes);
    } else {
      verify_run(run, d, now);
      events = true;
    }
    if (d.slot != kNoSlot) {
      Status st = pool_.release(d.slot);
      if (!st) return st;
    }
  }
  if (events) arrived(now);
  if (!results_error_.ok()) return results_error_;
  return kafka_error_;
}

void Verifier::write_kafka(std::unique_ptr<KafkaRows> k) { kafka_ = std::move(k); }

Status Verifier::start() { return kafka_ ? kafka_->start() : Status(); }

// Only after END: before it, each snapshot's save() brings Kafka up to date
// itself (a snapshot that waited for settled() first would wait for ever:
// the rows of a transaction are settled by its commit, in save()).
bool Verifier::settled() const { return !kafka_ || !c_.end_seen || kafka_->settled(); }

Status Verifier::finish() {
  if (!results_.is_open() && results_.prepared())
    if (Status st = open_results(); !st) return st;
  if (bursts_) bursts_->finish();
  if (kafka_)
    if (Status st = kafka_->finish(); !st) return st;
  if (!results_error_.ok()) return results_error_;
  if (results_.is_open()) return results_.finish();
  return {};
}

void Verifier::abort() { results_.close(); }

Status Verifier::write_results(const std::string& path, const Schema& schema, RecordFormat format,
                               std::vector<std::string> fields) {
  // Checked now (a bad path fails the sink at start), written from the first event.
  return results_.prepare(path, schema, format, std::move(fields));
}

Status Verifier::open_results() {
  Status st = results_.open(results_keep_);
  // Once: a sink that cannot open its file fails, it does not try again.
  if (!st.ok()) results_error_ = st;
  return st;
}

void Verifier::save(SnapshotOut& out) const {
  // Kafka first: a snapshot never holds a row that Kafka lacks.
  if (kafka_) kafka_->checkpoint();
  out.put(c_);
  latency_.save(out);
  out.put(next_seq_);
  out.put(last_event_);
  out.put(seen_);
  out.put(corrupt_unseen_);
  out.put(missing_);
  out.put(part_missing_);
  int64_t keep = -1;  // no results file, or none written yet
  if (results_.is_open()) {
    // A write that fails here fails the next consume() or finish(); a
    // restart from this snapshot refuses it (-2), not to go on from a file
    // that lacks what it counted.
    if (Status st = results_error_.ok() ? results_.written(&keep) : results_error_; !st) {
      results_error_ = st;
      keep = -2;
    }
  }
  out.put<int64_t>(keep);
}

Status Verifier::load(SnapshotIn& in) {
  // The flags come in as bytes, checked before they are bools: a byte that
  // is neither 0 nor 1 is a damaged snapshot (as a bool it would be
  // undefined behaviour).
  std::array<unsigned char, sizeof(VerifyCounts)> counts{};
  in.bytes(counts.data(), counts.size());
  LatencyHistogram lat;
  if (Status st = lat.load(in); !st && in.ok()) in.fail(st.message());
  const auto next = in.get<decltype(next_seq_)>();
  const auto last = in.get<decltype(last_event_)>();
  const auto seen = in.get<std::array<unsigned char, kMaxStreams>>();
  const auto cu = in.get<decltype(corrupt_unseen_)>();
  const auto miss = in.get<decltype(missing_)>();
  const auto pm = in.get<decltype(part_missing_)>();
  const auto keep = in.get<int64_t>();
  const unsigned char end_seen = counts[offsetof(VerifyCounts, end_seen)];
  if (in.ok() && end_seen > 1) in.fail(fmt::format("holds {} for whether END was seen", end_seen));
  for (size_t i = 0; in.ok() && i < seen.size(); ++i)
    if (seen[i] > 1) in.fail(fmt::format("holds {} for whether stream {} was seen", seen[i], i));
  if (in.ok() && keep == -2) in.fail("was taken when its results file could not be written");
  if (in.ok() && keep < -1) in.fail(fmt::format("holds a results file length of {}", keep));
  if (!in.ok()) return Status::Error(fmt::format("the sink's verifier: {}", in.what()));
  std::memcpy(&c_, counts.data(), sizeof c_);
  latency_ = lat;
  next_seq_ = next;
  last_event_ = last;
  for (size_t i = 0; i < seen.size(); ++i) seen_[i] = seen[i] != 0;
  corrupt_unseen_ = cu;
  missing_ = miss;
  part_missing_ = pm;
  results_keep_ = results_.prepared() ? keep : -1;
  restored_bytes_ = c_.bytes;
  restored_first_ns_ = c_.first_ns;
  return {};
}

Verifier::~Verifier() = default;

void Verifier::arrived(uint64_t now_ns) {
  if (!first_arrival_ns_) first_arrival_ns_ = now_ns;
  else if (now_ns >= last_arrival_ns_ + kStallNs) {
    // Full: the new pause replaces the shortest kept, if it is longer.
    size_t at = n_stalls_;
    if (n_stalls_ == stalls_.size()) {
      at = 0;
      for (size_t i = 1; i < n_stalls_; ++i)
        if (stalls_[i][1] - stalls_[i][0] < stalls_[at][1] - stalls_[at][0]) at = i;
      if (stalls_[at][1] - stalls_[at][0] >= now_ns - last_arrival_ns_) at = SIZE_MAX;
    } else {
      ++n_stalls_;
    }
    if (at != SIZE_MAX) stalls_[at] = {last_arrival_ns_, now_ns};
  }
  last_arrival_ns_ = std::max(last_arrival_ns_, now_ns);
  if (!c_.first_ns) c_.first_ns = now_ns;
  c_.last_ns = std::max(c_.last_ns, now_ns);
}

void Verifier::report(ProcessSummary& s) const {
  // Instances of one sink: the earliest first event, and every instance's
  // pauses (the longest kept).
  const double first = first_arrival_ns_ * 1e-9;
  if (first_arrival_ns_ && (s.first_arrival_s == 0 || first < s.first_arrival_s))
    s.first_arrival_s = first;
  // Restored: the stream's interval over the runs of the sink, and its
  // bytes before the snapshot (the report's tuples/s and Gb/s use them).
  const double began = restored_first_ns_ * 1e-9;
  if (restored_first_ns_ && (s.restored_first_arrival_s == 0 || began < s.restored_first_arrival_s))
    s.restored_first_arrival_s = began;
  s.restored_bytes += restored_bytes_;
  if (kafka_) {
    s.kafka_rows += kafka_->rows();
    s.kafka_commits += kafka_->commits();
  }
  s.last_arrival_s = std::max(s.last_arrival_s, c_.last_ns * 1e-9);
  for (size_t i = 0; i < n_stalls_; ++i)
    s.stalls_s.push_back({stalls_[i][0] * 1e-9, stalls_[i][1] * 1e-9});
  std::sort(s.stalls_s.begin(), s.stalls_s.end(), [](const auto& a, const auto& b) {
    return a[1] - a[0] > b[1] - b[0];
  });
  if (s.stalls_s.size() > ProcessSummary::kMaxStalls) s.stalls_s.resize(ProcessSummary::kMaxStalls);
  std::sort(s.stalls_s.begin(), s.stalls_s.end());
  s.lost += c_.lost;
  s.deduplicated += c_.deduplicated;
  s.duplicated += c_.duplicated;
  s.corrupt += c_.corrupt;
  s.filtered += c_.filtered;
  s.aggregated += c_.aggregated;
  s.joined += c_.joined;
  s.partitioned += c_.partitioned;
}

}  // namespace sluice

#include "loadgen/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "transport/event.h"

namespace sluice {
namespace {

// Events made but not yet sent wait in the pool: 1 MiB of them keeps the
// send stage busy, and more adds queueing latency and costs cycles. The
// generator writes each event into whichever slot comes free, so the queue
// is its working set: at 4 MiB (127 events of 32 KiB) its events cost a
// fifth more cycles each than at 1 MiB, written to lines that left the
// cache. loadgen_slots is the ceiling.
// With acks an event's slot stays taken until the receiver acknowledges it,
// which is once it is safe downstream (every hop to the sinks): the pool
// must hold the link's whole unacknowledged window beside the queue, or
// the generator waits on its pool while the pipeline is half empty.
// Unless the links keep events by header (remakes): then a slot is free
// once sent, as without acks, and the pool needs the queue alone.
size_t event_bytes_of(const Deployment& d) {
  return event_wire_bytes(d.tuple_bytes, tuples_per_event(d.tuple_bytes, d.event_bytes), d.data_bytes);
}

size_t generator_slots(const Deployment& d, bool remakes) {
  constexpr size_t kQueueBytes = 1u << 20;
  const size_t ev = event_bytes_of(d);
  size_t window = 0;
  for (const LinkConfig& l : d.links)
    if (l.options.acks && d.processes[l.from].role == Role::kLoadgen && !remakes)
      window = std::max<size_t>(window, size_t{l.options.slots} * kAckWindowPerSlot);
  return std::min<size_t>(d.loadgen_slots, std::max<size_t>(16, kQueueBytes / ev) + window);
}

}  // namespace

size_t loadgen_pool_slots(const Deployment& d, bool remakes) { return generator_slots(d, remakes); }

size_t loadgen_slot_bytes(const Deployment& d) {
  return std::max(event_bytes_of(d), 8 + size_t{d.streams} * sizeof(EndOfStreamEntry));
}

namespace {

// The reserve a replay remakes events in: a frame's worth (as many events
// as fill the receiver's slot), where acks keep events by header.
size_t generator_reserve(const Deployment& d, bool remakes) {
  if (!remakes || d.loadgen_backup_slots) return 0;
  const size_t ev = event_bytes_of(d);
  size_t r = 0;
  for (const LinkConfig& l : d.links)
    if (l.options.acks && d.processes[l.from].role == Role::kLoadgen)
      r = std::max<size_t>(r, l.options.slot_bytes / ev + 1);
  return std::min<size_t>(r, 1024);
}

}  // namespace

namespace {
uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

FieldFiller::FieldFiller(const SchemaConfig& sc) {
  for (size_t i = 1; i < sc.schema.fields().size(); ++i) {
    Field f;
    sc.schema.find(sc.schema.fields()[i].name, &f.ref);
    f.gen = sc.gens[i - 1];
    f.salt = mix(i * 0x5851F42D4C957F2Dull);
    if (f.gen.kind == FieldGen::Kind::kZipf) {
      f.cdf.resize(f.gen.cardinality);
      double sum = 0;
      for (uint64_t r = 0; r < f.gen.cardinality; ++r) sum += 1.0 / std::pow(double(r + 1), f.gen.s);
      double acc = 0;
      for (uint64_t r = 0; r < f.gen.cardinality; ++r) {
        acc += 1.0 / std::pow(double(r + 1), f.gen.s) / sum;
        f.cdf[r] = acc;
      }
      f.cdf.back() = 1.0;
    }
    fields_.push_back(std::move(f));
  }
}

int64_t FieldFiller::value(size_t i, uint64_t seq) const {
  const Field& f = fields_[i];
  switch (f.gen.kind) {
    case FieldGen::Kind::kSequence: return static_cast<int64_t>(seq) + f.gen.value;
    case FieldGen::Kind::kConstant: return f.gen.value;
    case FieldGen::Kind::kUniform: return static_cast<int64_t>(mix(seq ^ f.salt) % f.gen.cardinality);
    case FieldGen::Kind::kZipf: {
      const double u = double(mix(seq ^ f.salt) >> 11) * 0x1.0p-53;
      return std::lower_bound(f.cdf.begin(), f.cdf.end(), u) - f.cdf.begin();
    }
    case FieldGen::Kind::kRandom: return static_cast<int64_t>(mix(seq ^ f.salt));
  }
  return 0;
}

void FieldFiller::fill(std::byte* t, uint64_t seq) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    std::byte* p = t + f.ref.offset;
    if (f.ref.type == FieldType::kBytes) {
      for (uint32_t b = 0; b < f.ref.width; b += 8) {
        const uint64_t v = f.gen.kind == FieldGen::Kind::kConstant ? uint64_t(f.gen.value)
                                                                    : mix(seq ^ f.salt ^ (uint64_t{b} << 40));
        std::memcpy(p + b, &v, std::min<uint32_t>(8, f.ref.width - b));
      }
      continue;
    }
    const int64_t v = value(i, seq);
    switch (f.ref.type) {
      case FieldType::kI32:
      case FieldType::kU32: {
        const uint32_t w = static_cast<uint32_t>(v);
        std::memcpy(p, &w, 4);
        break;
      }
      case FieldType::kF64: {
        const double w = static_cast<double>(v);
        std::memcpy(p, &w, 8);
        break;
      }
      default: std::memcpy(p, &v, 8);
    }
  }
}

Generator::Generator(const Deployment& d, uint32_t instance, uint32_t first_stream,
                     const SchemaConfig* schema, bool remakes)
    : tuple_bytes_(d.tuple_bytes),
      tuples_per_event_(tuples_per_event(d.tuple_bytes, d.event_bytes)),
      data_bytes_(d.data_bytes),
      streams_(d.streams),
      first_stream_(first_stream),
      tuple_limit_(d.tuples),
      duration_s_(d.duration_s),
      rate_(d.rate),
      burst_ms_(d.burst_ms),
      burst_events_(d.burst_events),
      wait_(d.wait),
      pool_(generator_slots(d, generator_reserve(d, remakes) > 0), loadgen_slot_bytes(d),
            generator_reserve(d, remakes)),
      next_seq_(d.streams, 0),
      events_(d.streams, 0) {
  if (schema) filler_ = std::make_unique<FieldFiller>(*schema);
  header_.magic = kEventMagic;
  header_.version = kWireVersion;
  header_.header_bytes = kEventHeaderBytes;
  header_.tuple_bytes = tuple_bytes_;
  header_.data_bytes = data_bytes_;
  header_.flags = filler_ ? 0 : kEventTemplate;
  for (uint32_t s = 0; s < pool_.slots(); ++s) fill_payload(pool_.slot(s), tuples_per_event_);
}

// Payload bytes depend only on their offset inside a tuple (or the data
// block), so they stay right when an operator moves tuples around.
void Generator::fill_payload(std::byte* event, uint32_t count) const {
  std::byte* tuples = event + kEventHeaderBytes;
  for (uint32_t t = 0; t < count; ++t)
    for (uint32_t j = 12; j < tuple_bytes_; ++j)
      tuples[size_t{t} * tuple_bytes_ + j] = std::byte((j * 31 + 7) & 0xff);
  std::byte* data = tuples + size_t{count} * tuple_bytes_;
  for (uint32_t j = 0; j < data_bytes_; ++j) data[j] = std::byte((j * 17 + 3) & 0xff);
}

// On the sending thread, while next() runs on its own: reads only what the
// constructor set, and takes only reserve slots. The whole event is written
// (the payload too: a short event's data block sat where a longer one has
// tuples), its header last, checksum and send time as first made.
Status Generator::remake(const EventHeader& h, uint32_t* slot) {
  *slot = kNoSlot;
  if (h.magic != kEventMagic || h.tuple_bytes != tuple_bytes_ || h.data_bytes != data_bytes_ ||
      h.tuple_count > tuples_per_event_ || h.tuple_span != h.tuple_count ||
      h.stream - first_stream_ >= streams_)
    return Status::Error(fmt::format(
        "a header this generator did not make: stream {} (it makes {}..{}), {} tuples of {} bytes "
        "(it makes at most {} of {}), {} data bytes (it makes {})",
        h.stream, first_stream_, first_stream_ + streams_ - 1, h.tuple_count, h.tuple_bytes,
        tuples_per_event_, tuple_bytes_, h.data_bytes, data_bytes_));
  const uint32_t s = pool_.try_acquire_reserved();
  if (s == kNoSlot) return {};
  std::byte* p = pool_.slot(s);
  fill_payload(p, h.tuple_count);
  std::byte* t = p + kEventHeaderBytes;
  for (uint64_t seq = h.first_seq; seq < h.first_seq + h.tuple_count; ++seq, t += tuple_bytes_) {
    std::memcpy(t + kTupleSeqOffset, &seq, 8);
    if (filler_) {
      filler_->fill(t, seq);
    } else {
      const uint32_t key = template_key(seq);
      std::memcpy(t + kTupleKeyOffset, &key, 4);
    }
  }
  std::memcpy(p, &h, sizeof h);
  *slot = s;
  return {};
}

void Generator::shutdown() {
  stop();
  pool_.close();
}

// How many events may be made now under the rate or burst schedule; sleeps
// until at least one may.
size_t Generator::allowed_now(double now) {
  if (!paced()) return SIZE_MAX;
  for (;;) {
    double due_s;
    int64_t allowed;
    if (burst_events_ > 0) {
      double period = burst_ms_ / 1e3;
      uint64_t p = period > 0 ? static_cast<uint64_t>((now - t0_) / period) : 0;
      allowed = int64_t((p + 1) * burst_events_) - int64_t(generated_events_);
      due_s = t0_ + (p + 1) * period;
    } else {
      allowed = int64_t(std::floor((now - t0_) * rate_)) + 1 - int64_t(generated_events_);
      due_s = t0_ + generated_events_ / rate_;
    }
    if (allowed > 0) return static_cast<size_t>(allowed);
    waited_ = true;
    double sleep_s = std::min(due_s - now, 0.05);  // wake now and then to see stop()
    if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
    now = now_s();
    // With `tuples` the count ends the run, not the clock: a paced run
    // longer than duration_s still sends every tuple.
    if (stop_.load(std::memory_order_relaxed) || (!tuple_limit_ && now - t0_ >= duration_s_)) return 0;
  }
}

Descriptor Generator::make_event(uint32_t slot, uint64_t ts) {
  std::byte* p = pool_.slot(slot);
  const uint32_t s = static_cast<uint32_t>(generated_events_ % streams_);
  uint32_t count = tuples_per_event_;
  if (tuple_limit_) count = static_cast<uint32_t>(std::min<uint64_t>(count, tuple_limit_ - generated_tuples_));
  EventHeader h = header_;
  h.stream = first_stream_ + s;
  h.first_seq = next_seq_[s];
  h.tuple_count = count;
  h.tuple_span = count;
  h.send_ts_ns = ts;
  h.event_seq = events_[s];
  std::memcpy(p, &h, sizeof h);
  if (data_bytes_ && count != tuples_per_event_) {
    // A short last event: its data block follows its fewer tuples.
    std::byte* data = p + kEventHeaderBytes + size_t{count} * tuple_bytes_;
    for (uint32_t j = 0; j < data_bytes_; ++j) data[j] = std::byte((j * 17 + 3) & 0xff);
  }
  std::byte* t = p + kEventHeaderBytes;
  if (filler_) {
    for (uint32_t i = 0; i < count; ++i, t += tuple_bytes_) {
      const uint64_t seq = h.first_seq + i;
      std::memcpy(t + kTupleSeqOffset, &seq, 8);
      filler_->fill(t, seq);
    }
    seal_event(p);
  } else {
    // Every slot's body is the template: its hash for this many tuples is
    // made once (the first event, and a short last one), with the slot's seq
    // and key fields zeroed before they are written below.
    if (count != body_count_) {
      body_hash_ = template_body_hash(p);
      body_count_ = count;
    }
    uint64_t seq = h.first_seq;
    uint64_t mul = seq * kTemplateKeyMul;  // template_key(seq) without a multiply per tuple
    for (uint32_t i = 0; i < count; ++i, t += tuple_bytes_, ++seq, mul += kTemplateKeyMul) {
      const uint32_t key = static_cast<uint32_t>(mul >> kTemplateKeyShift);
      std::memcpy(t + kTupleSeqOffset, &seq, 8);
      std::memcpy(t + kTupleKeyOffset, &key, 4);
    }
    const uint64_t c = template_checksum(p, body_hash_);
    std::memcpy(p + kChecksumOffset, &c, sizeof c);
  }
  next_seq_[s] += count;
  ++events_[s];
  ++generated_events_;
  generated_tuples_ += count;
  return {slot, 0, static_cast<uint32_t>(h.wire_bytes()), 1, count, 0};
}

Descriptor Generator::make_end(uint32_t slot) {
  std::byte* p = pool_.slot(slot);
  EndOfStream eos{};
  eos.n_streams = streams_;
  for (uint32_t s = 0; s < streams_; ++s)
    eos.streams[s] = {first_stream_ + s, 0, next_seq_[s], events_[s]};
  write_end(eos, p);
  return {slot, 0, static_cast<uint32_t>(eos.wire_bytes()), 0, 0, kDescEnd};
}

// The events the rate or burst schedule calls for before `now` (at most
// duration_s after t0_): those due at 0, 1/rate, ... (a burst each period).
uint64_t Generator::scheduled_by(double now) const {
  const double t = std::min(now - t0_, duration_s_);
  if (t <= 0) return 0;
  if (burst_events_ > 0) {
    const double period = burst_ms_ / 1e3;
    return period > 0 ? static_cast<uint64_t>(std::ceil(t / period)) * burst_events_ : burst_events_;
  }
  return static_cast<uint64_t>(std::ceil(t * rate_));
}

// A free slot, waiting for one; with a schedule, the wait is time it was
// held back (counted only here, where no slot was free: nothing per event).
uint32_t Generator::acquire_slot() {
  const uint32_t slot = pool_.try_acquire();
  if (slot != kNoSlot || pool_.closed()) return slot;
  if (!paced()) return wait_for_slot();
  const double t = now_s();
  const uint32_t got = wait_for_slot();
  held_back_s_ += now_s() - t;
  return got;
}

void Generator::report(ProcessSummary& s) const {
  s.held_back_s += held_back_s_;
  s.behind_events += behind_events_;
}

// threads: shared: while no slot is free and the send stage's carrier has
// sends to complete (they free slots), this thread reaps them, there being
// no other.
uint32_t Generator::wait_for_slot() {
  for (;;) {
    const uint32_t slot = pool_.try_acquire();
    if (slot != kNoSlot || pool_.closed()) return slot;
    Status st;
    if (!idle_wait({}, 1, &st)) return pool_.acquire(wait_);
    if (!st) return kNoSlot;  // the send stage's own next call says why
  }
}

uint64_t events_safe_downstream(Split split, uint32_t first_stream, uint32_t streams, uint64_t base,
                                std::span<const uint64_t> acked) {
  const size_t n = acked.size();
  if (n == 0 || streams == 0) return base;
  if (n == 1 || split == Split::kCopy) return base + *std::min_element(acked.begin(), acked.end());
  const auto link_of = [&](uint64_t s) { return (first_stream + s) % n; };
  uint64_t safe = UINT64_MAX;
  for (size_t j = 0; j < n; ++j) {
    // Link j takes `per_round` of every round of `streams` events.
    uint64_t per_round = 0, before = 0;
    for (uint64_t s = 0; s < streams; ++s)
      if (link_of(s) == j) {
        ++per_round;
        if (s < base % streams) ++before;
      }
    if (per_round == 0) continue;  // no stream of this generator goes there
    // Its first event not acknowledged, counted on the link from the
    // stream's start (every one before `base` was safe), and where that
    // event is in the generator's order.
    const uint64_t k = base / streams * per_round + before + acked[j];
    uint64_t nth = k % per_round, at = 0;
    for (uint64_t s = 0; s < streams; ++s)
      if (link_of(s) == j && nth-- == 0) {
        at = s;
        break;
      }
    safe = std::min(safe, k / per_round * streams + at);
  }
  return safe == UINT64_MAX ? base : safe;
}

void Generator::resume_at(uint64_t events, double elapsed_s) {
  // Streams take events round-robin (make_event), each event full but a
  // `tuples` limit's last.
  generated_events_ = events;
  generated_tuples_ = 0;
  for (uint32_t s = 0; s < streams_; ++s) {
    events_[s] = events / streams_ + (s < events % streams_ ? 1 : 0);
    next_seq_[s] = events_[s] * tuples_per_event_;
    generated_tuples_ += next_seq_[s];
  }
  if (tuple_limit_ && generated_tuples_ > tuple_limit_ && events > 0) {
    next_seq_[(events - 1) % streams_] -= generated_tuples_ - tuple_limit_;  // the short last one
    generated_tuples_ = tuple_limit_;
  }
  if (burst_events_ > 0)
    resumed_s_ = double(events / burst_events_) * burst_ms_ / 1e3;
  else if (rate_ > 0)
    resumed_s_ = double(events) / rate_;
  else
    resumed_s_ = elapsed_s;
}

Status Generator::next(std::span<Descriptor> out, size_t* n) {
  *n = 0;
  waited_ = false;
  if (ended_) return {};
  double now = now_s();
  if (t0_ < 0) t0_ = now - resumed_s_;
  bool finished = stop_.load(std::memory_order_relaxed) ||
                  (tuple_limit_ ? generated_tuples_ >= tuple_limit_ : now - t0_ >= duration_s_);
  size_t want = finished ? 0 : std::min(out.size(), allowed_now(now));
  if (!finished && want == 0) finished = true;  // the schedule ran past the end
  const uint64_t ts = wall_clock_ns();
  size_t k = 0;
  while (k < want) {
    if (tuple_limit_ && generated_tuples_ >= tuple_limit_) {
      finished = true;
      break;
    }
    // Wait for a slot only when there is nothing to hand out yet: never hold
    // made events back waiting for more.
    uint32_t slot = k ? pool_.try_acquire() : acquire_slot();
    if (slot == kNoSlot) {
      if (k == 0) return Status::Error("load generator stopped while waiting for a free slot");
      break;
    }
    out[k++] = make_event(slot, ts);
  }
  if (finished && k < out.size()) {
    uint32_t slot = k ? pool_.try_acquire() : acquire_slot();
    if (slot != kNoSlot) {
      out[k++] = make_end(slot);
      ended_ = true;
      // A paced run that the clock ended: what its schedule called for.
      if (paced() && !tuple_limit_ && !stop_.load(std::memory_order_relaxed)) {
        const uint64_t due = scheduled_by(now_s());
        behind_events_ = due > generated_events_ ? due - generated_events_ : 0;
      }
    } else if (k == 0) {
      return Status::Error("load generator stopped while waiting for a free slot");
    }
  }
  *n = k;
  return {};
}

}  // namespace sluice
